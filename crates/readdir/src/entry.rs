//! The values that cross the cache's API: entries, verifiers, batches, lookup answers.

use std::sync::Arc;

/// One directory entry, as a backend produced it and the cache hands it back.
///
/// `cookie` is the opaque position *after* this entry: passing it to
/// [`DirCache::read`](crate::DirCache::read) resumes the listing with the entry that follows
/// (FUSE `off`, NFS cookie). Cookies need not be ordered; `0` means "the start" and is never an
/// entry's cookie.
///
/// ```
/// use udcache_readdir::{DType, Entry};
/// let e = Entry::new("a.txt", 42, DType::REG, 7);
/// assert_eq!(&*e.name, b"a.txt");
/// assert_eq!((e.ino, e.dtype, e.cookie), (42, DType::REG, 7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The name, as bytes (no terminating NUL). Shared, so copying an entry out of a cached page
    /// costs a reference count, not an allocation.
    pub name: Arc<[u8]>,
    /// The inode number.
    pub ino: u64,
    /// The file type, as `getdents` reports it.
    pub dtype: DType,
    /// The position to resume after this entry.
    pub cookie: u64,
}

impl Entry {
    /// An entry named `name`.
    pub fn new(name: impl AsRef<[u8]>, ino: u64, dtype: DType, cookie: u64) -> Self {
        Entry { name: Arc::from(name.as_ref()), ino, dtype, cookie }
    }
}

/// A directory entry's file type: the `d_type` value of `getdents` (`DT_REG`, `DT_DIR`, ...).
///
/// The cache never looks at it; it hands back what the backend gave. Any byte is accepted
/// ([`from_raw`](Self::from_raw)), so a backend passes on values this type has no name for.
///
/// ```
/// use udcache_readdir::DType;
/// assert_eq!(DType::DIR.raw(), 4);
/// assert_eq!(DType::from_raw(8), DType::REG);
/// assert_eq!(DType::default(), DType::UNKNOWN);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DType(u8);

impl DType {
    /// Unknown (`DT_UNKNOWN`): the reader must `stat` the entry to learn its type.
    pub const UNKNOWN: DType = DType(0);
    /// A named pipe (`DT_FIFO`).
    pub const FIFO: DType = DType(1);
    /// A character device (`DT_CHR`).
    pub const CHR: DType = DType(2);
    /// A directory (`DT_DIR`).
    pub const DIR: DType = DType(4);
    /// A block device (`DT_BLK`).
    pub const BLK: DType = DType(6);
    /// A regular file (`DT_REG`).
    pub const REG: DType = DType(8);
    /// A symbolic link (`DT_LNK`).
    pub const LNK: DType = DType(10);
    /// A socket (`DT_SOCK`).
    pub const SOCK: DType = DType(12);

    /// The type whose `d_type` value is `value`.
    pub const fn from_raw(value: u8) -> Self {
        DType(value)
    }

    /// The `d_type` value.
    pub const fn raw(self) -> u8 {
        self.0
    }
}

/// The directory's version as the backend reports it: a change attribute, an mtime in
/// nanoseconds, or a generation number.
///
/// The contract: two fills that return the same verifier saw the same directory contents; a
/// verifier value is never reused for different contents.
///
/// ```
/// use udcache_readdir::Verifier;
/// assert_ne!(Verifier::new(1), Verifier::new(2));
/// assert_eq!(Verifier::new(7).get(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Verifier(u64);

impl Verifier {
    /// The verifier with value `value`.
    pub const fn new(value: u64) -> Self {
        Verifier(value)
    }

    /// Its value.
    pub const fn get(self) -> u64 {
        self.0
    }
}

/// What one [`DirCache::read`](crate::DirCache::read) returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Up to `max` entries, in listing order.
    pub entries: Vec<Entry>,
    /// True when the position after the last entry (or the requested cookie, if `entries` is
    /// empty) is the end of the directory.
    pub eof: bool,
}

/// The answer of [`DirCache::lookup`](crate::DirCache::lookup).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The directory is complete in the cache and holds this entry.
    Present(Entry),
    /// The directory is complete in the cache and has no entry of that name: a trusted
    /// negative answer, with no negative entry stored anywhere.
    Absent,
    /// The cache does not hold the whole directory under one verifier; ask the filesystem.
    Unknown,
}
