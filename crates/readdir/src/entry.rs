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
/// use udcache_readdir::Entry;
/// let e = Entry::new("a.txt", 42, 8, 7);
/// assert_eq!(&*e.name, b"a.txt");
/// assert_eq!((e.ino, e.dtype, e.cookie), (42, 8, 7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The name, as bytes (no terminating NUL). Shared, so copying an entry out of a cached page
    /// costs a reference count, not an allocation.
    pub name: Arc<[u8]>,
    /// The inode number.
    pub ino: u64,
    /// The `d_type` value (`DT_REG` = 8, `DT_DIR` = 4, ..., `DT_UNKNOWN` = 0).
    pub dtype: u8,
    /// The position to resume after this entry.
    pub cookie: u64,
}

impl Entry {
    /// An entry named `name`.
    pub fn new(name: impl AsRef<[u8]>, ino: u64, dtype: u8, cookie: u64) -> Self {
        Entry { name: Arc::from(name.as_ref()), ino, dtype, cookie }
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
/// assert_ne!(Verifier(1), Verifier(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Verifier(pub u64);

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
