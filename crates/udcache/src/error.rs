//! Errors: every failed operation says why and changes nothing.

use std::fmt;

/// An errno value (positive), as a [`Filesystem`](crate::Filesystem) reports a failure and a
/// C ABI or a FUSE reply passes it on.
///
/// ```
/// use udcache::Errno;
/// assert_eq!(Errno::new(libc::ENOENT).get(), libc::ENOENT);
/// assert_eq!(Errno::new(-3), Errno::EIO); // not an errno: taken as EIO
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
    /// `EIO`: an I/O error, and what a value that is no errno is taken as.
    pub const EIO: Errno = Errno(libc::EIO);

    /// The errno `errno`; zero or a negative value (no errno) is taken as [`Errno::EIO`].
    pub const fn new(errno: i32) -> Self {
        if errno > 0 { Errno(errno) } else { Errno::EIO }
    }

    /// The value (positive).
    pub const fn get(self) -> i32 {
        self.0
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "errno {}", self.0)
    }
}

/// Why an operation was refused. A refused operation has changed nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The name is empty, `.` or `..`, contains `/` or NUL, or is longer than
    /// [`NAME_MAX`](crate::NAME_MAX) bytes.
    InvalidName(InvalidName),
    /// No inode with this number is cached (never added, or forgotten).
    UnknownInode(u64),
    /// The inode is not a directory, so it has no children.
    NotDirectory(u64),
    /// The name exists already (positive entry) and the operation does not replace it.
    Exists,
    /// The name has no positive entry (missing or negative).
    NotFound,
    /// The inode number is cached with another file type.
    KindMismatch {
        /// The inode number.
        ino: u64,
    },
    /// A directory may have only one name (no hard links to directories): `add` of a second
    /// name for it, or any name for the root. (`resolve` moves a directory's name instead: see
    /// [`Dcache::resolve`](crate::Dcache::resolve).)
    DirectoryAlias(u64),
    /// `forget` of more lookups than the inode has, or of the root.
    BadForget {
        /// The inode number.
        ino: u64,
        /// Its lookup count.
        have: u64,
        /// The count asked to forget.
        asked: u64,
    },
    /// The filesystem failed with this errno (not cached).
    Backend(Errno),
    /// The call must ask the filesystem and the cache has none (see
    /// [`Config::with_filesystem`](crate::Config::with_filesystem)).
    NoFilesystem,
    /// A path resolution still had blocking work to do after its last allowed round: names
    /// or directories kept changing under it (see
    /// [`Dcache::resolve_path`](crate::Dcache::resolve_path)). Trying again may succeed.
    Unsettled,
    /// A directory listing failed (see [`Dcache::readdir`](crate::Dcache::readdir)).
    Readdir(udcache_readdir::Error),
    /// The tables of a new cache do not fit in memory (see
    /// [`Dcache::try_new`](crate::Dcache::try_new)).
    OutOfMemory,
}

impl Error {
    /// The errno value a C ABI or a FUSE reply uses for this error (positive).
    ///
    /// ```
    /// use udcache::{Error, InvalidName};
    /// assert_eq!(Error::InvalidName(InvalidName::TooLong(300)).errno(), libc::ENAMETOOLONG);
    /// assert_eq!(Error::UnknownInode(9).errno(), libc::ESTALE);
    /// ```
    pub fn errno(&self) -> i32 {
        match self {
            Error::InvalidName(InvalidName::TooLong(_)) => libc::ENAMETOOLONG,
            Error::UnknownInode(_) => libc::ESTALE,
            Error::NotDirectory(_) => libc::ENOTDIR,
            Error::Exists => libc::EEXIST,
            Error::NotFound => libc::ENOENT,
            Error::InvalidName(_) | Error::BadForget { .. } | Error::KindMismatch { .. } => {
                libc::EINVAL
            }
            Error::DirectoryAlias(_) => libc::EMLINK,
            Error::Backend(errno) => errno.get(),
            Error::NoFilesystem => libc::ENOSYS,
            Error::Unsettled => libc::EAGAIN,
            Error::Readdir(e) => e.errno(),
            Error::OutOfMemory => libc::ENOMEM,
        }
    }
}

/// What is wrong with a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidName {
    /// Zero bytes.
    Empty,
    /// `.` or `..`: not a name a directory entry can have.
    Dot,
    /// Contains `/`.
    Slash,
    /// Contains a NUL byte.
    Nul,
    /// Longer than [`NAME_MAX`](crate::NAME_MAX) bytes (the length is given).
    TooLong(usize),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidName(why) => write!(f, "invalid name: {why:?}"),
            Error::UnknownInode(ino) => write!(f, "unknown inode {ino}"),
            Error::NotDirectory(ino) => write!(f, "inode {ino} is not a directory"),
            Error::Exists => f.write_str("name exists"),
            Error::NotFound => f.write_str("name not found"),
            Error::KindMismatch { ino } => write!(f, "inode {ino} is cached with another type"),
            Error::DirectoryAlias(ino) => write!(f, "directory {ino} already has a name"),
            Error::BadForget { ino, have, asked } => {
                write!(f, "forget {asked} lookups of inode {ino}, which has {have}")
            }
            Error::Backend(errno) => write!(f, "the filesystem failed: {errno}"),
            Error::NoFilesystem => f.write_str("the cache has no filesystem to ask"),
            Error::Unsettled => f.write_str("the path kept changing during its resolution"),
            Error::Readdir(e) => write!(f, "readdir: {e}"),
            Error::OutOfMemory => f.write_str("the cache's tables do not fit in memory"),
        }
    }
}

impl std::error::Error for Error {}
