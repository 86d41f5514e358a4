//! The backing store: a local directory read through `std::fs`, as a udcache [`Filesystem`].
//!
//! # Rules
//!
//! - Inode numbers are the backing ones, except that the backing root's and
//!   [`ROOT_INO`] trade places (FUSE's root is 1). Names on another device than the root
//!   (mount points inside the tree) read as absent: their numbers could collide.
//! - A cached inode's path is recorded when it is looked up, and dropped when the cache
//!   forgets the inode ([`Dir::forget`]); a file is read through the last path it was
//!   looked up by.
//! - Listings are in cookie order, a cookie being a hash of the name (63 bits, never 0): a
//!   cookie stays a position however the directory changes, as in ext4's hash order. A fill's
//!   verifier is the directory's ctime, read before its entries: every change of an entry
//!   moves it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File, Metadata};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use udcache::readdir::{DType, Entry, Fill, FillError, Verifier};
use udcache::{Attr, Errno, FileType, Filesystem, InodeSpec, ROOT_INO};

/// A directory tree served read-only.
pub struct Dir {
    /// The backing root's inode number and device.
    root_ino: u64,
    dev: u64,
    /// The path of every cached inode, by (FUSE) inode number.
    paths: Mutex<HashMap<u64, PathBuf>>,
}

/// The errno of an I/O error (`EIO` where it has none).
fn errno(e: io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

impl Dir {
    /// The tree under directory `root`.
    pub fn open(root: &Path) -> io::Result<Dir> {
        let meta = fs::metadata(root)?;
        if !meta.is_dir() {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        let paths = HashMap::from([(ROOT_INO, root.to_path_buf())]);
        Ok(Dir { root_ino: meta.ino(), dev: meta.dev(), paths: Mutex::new(paths) })
    }

    /// The inode number a backing file is served under.
    fn ino(&self, meta: &Metadata) -> u64 {
        match meta.ino() {
            ino if ino == self.root_ino => ROOT_INO,
            ROOT_INO => self.root_ino,
            ino => ino,
        }
    }

    fn paths(&self) -> std::sync::MutexGuard<'_, HashMap<u64, PathBuf>> {
        self.paths.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn path(&self, ino: u64) -> Result<PathBuf, i32> {
        self.paths().get(&ino).cloned().ok_or(libc::ESTALE)
    }

    /// `path`'s metadata, `None` if it does not exist or is on another device.
    fn stat(&self, path: &Path) -> Result<Option<Metadata>, i32> {
        match fs::symlink_metadata(path) {
            Ok(meta) => Ok((meta.dev() == self.dev).then_some(meta)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(errno(e)),
        }
    }

    /// The attributes of `ino`, read from the backing file.
    pub fn attr(&self, ino: u64) -> Result<Attr, i32> {
        let meta = self.stat(&self.path(ino)?)?.ok_or(libc::ESTALE)?;
        let time = |secs: i64, nsecs: i64| (secs, u32::try_from(nsecs).unwrap_or(0));
        Ok(Attr {
            size: meta.size(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode(),
            nlink: u32::try_from(meta.nlink()).unwrap_or(u32::MAX),
            uid: meta.uid(),
            gid: meta.gid(),
            // FUSE's 32-bit device number, as libfuse truncates it.
            rdev: meta.rdev() as u32,
            blksize: u32::try_from(meta.blksize()).unwrap_or(4096),
        })
    }

    /// Up to `size` bytes of file `ino` from `offset`.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, i32> {
        let mut file = File::open(self.path(ino)?).map_err(errno)?;
        file.seek(SeekFrom::Start(offset)).map_err(errno)?;
        let mut data = Vec::with_capacity(size as usize);
        file.take(size.into()).read_to_end(&mut data).map_err(errno)?;
        Ok(data)
    }

    /// The target of symbolic link `ino`.
    pub fn readlink(&self, ino: u64) -> Result<Vec<u8>, i32> {
        Ok(fs::read_link(self.path(ino)?).map_err(errno)?.into_os_string().into_vec())
    }

    /// `ino` left the cache: its path is no longer needed.
    pub fn forget(&self, ino: u64) {
        self.paths().remove(&ino);
    }
}

/// A name's position in its directory's listing.
fn cookie(name: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    name.hash(&mut hasher);
    (hasher.finish() >> 1).max(1)
}

impl Filesystem for Dir {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        let path = self.path(parent).map_err(Errno::new)?.join(OsStr::from_bytes(name));
        let Some(meta) = self.stat(&path).map_err(Errno::new)? else { return Ok(None) };
        let kind = match meta.file_type() {
            t if t.is_dir() => FileType::Directory,
            t if t.is_file() => FileType::Regular,
            t if t.is_symlink() => FileType::Symlink,
            _ => FileType::Other,
        };
        let ino = self.ino(&meta);
        self.paths().insert(ino, path);
        Ok(Some(InodeSpec { ino, kind, fs_data: 0 }))
    }

    fn readdir(&self, dir: u64, after: u64, max: usize) -> Result<Fill, FillError> {
        let path = self.path(dir).map_err(FillError::Io)?;
        let meta = fs::symlink_metadata(&path).map_err(|e| FillError::Io(errno(e)))?;
        let verifier = Verifier::new((meta.ctime() as u64) << 30 | meta.ctime_nsec() as u64);
        let mut entries = Vec::new();
        for dirent in fs::read_dir(&path).map_err(|e| FillError::Io(errno(e)))? {
            let dirent = dirent.map_err(|e| FillError::Io(errno(e)))?;
            let name = dirent.file_name();
            let position = cookie(name.as_bytes());
            if position <= after {
                continue;
            }
            // Gone since it was listed, or on another device: not shown.
            let Ok(Some(meta)) = self.stat(&dirent.path()) else { continue };
            // A `d_type` is the file type bits of the mode, shifted down.
            let dtype = DType::from_raw((meta.mode() >> 12) as u8);
            entries.push(Entry::new(name.as_bytes(), self.ino(&meta), dtype, position));
        }
        entries.sort_unstable_by_key(|e| e.cookie);
        let eof = entries.len() <= max;
        entries.truncate(max);
        Ok(Fill { entries, eof, verifier })
    }
}
