//! Inodes: what a positive dentry names.
//!
//! # Rules
//!
//! - `ino`, `kind` and `fs_data` never change while the inode is cached: a reader holding
//!   `&Inode` needs no lock for them. (A recycled inode object gets new ones, but only after a
//!   grace period: see `inode/recycle.rs`.)
//! - `lookups` (FUSE's `nlookup`) changes only under the inode's stripe lock in
//!   [`Dcache`](crate::Dcache); it is atomic so that readers can report it.
//! - `parent` (directories only: the inode number `..` leads to) changes only inside a rename
//!   write section (see `rename.rs`); a lockless walker reads it `Relaxed` and relies on
//!   the rename sequence to validate what it read.
//! - `aliases` — the `(parent, name)` of every positive dentry naming this inode — is a leaf
//!   mutex taken by writers only; readers never touch it.
//! - The attributes are a sequence-counted snapshot (see `attr.rs`).
//! - `dir_gen` (directories) names the state of the directory's verifier: a new value, drawn
//!   from one process-wide counter, when the directory is made and at each change. Negative
//!   dentries below it are trusted only while it is the one they were filled under (see
//!   `valid.rs`); drawn process-wide, it never matches a stamp taken under another directory
//!   that had this number (a negative a revalidation held across the old one's `forget`).
//! - `access` holds the permission results per credential (see `access.rs`). Both are
//!   reset when the object becomes another file (`init`).
//! - A directory's [`DirState`] (its positive children and its listing cache) has its own
//!   rules: see `writers/tree.rs` and `listing.rs`.
//! - Retire: an inode is reference counted (`InodeRef`); each
//!   dentry and the inode table hold one count, and the last count returns it to its
//!   `udcache-gp` pool, which reuses it only after a grace period, so `&Inode` borrowed under
//!   a guard stays the same file while the guard lives.

use crate::access::{AccessCache, AccessStamp};
use crate::attr::{Attr, AttrCell};
use crate::dirstate::DirState;
use crate::fs::{FileType, InodeSpec};
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Mutex, Ordering, lock};

mod recycle;

pub(crate) use recycle::{InodeRef, Pool, new_pool};

/// A cached inode. Borrowed under an epoch guard from [`Dcache::lookup`](crate::Dcache::lookup)
/// and [`Dcache::walk`](crate::Dcache::walk).
///
/// `repr(C)`, what a walk reads first (number and type, `..`, the verifier generation, the
/// most recent access result), so that a step touches as few cache lines as it can.
#[repr(C)]
pub struct Inode {
    spec: InodeSpec,
    parent: AtomicU64,
    dir_gen: AtomicU32,
    pub(crate) access: AccessCache,
    pool: Pool,
    refs: AtomicUsize,
    lookups: AtomicU64,
    pub(crate) attr: AttrCell,
    aliases: Mutex<Vec<(u64, Box<[u8]>)>>,
    /// Directories only.
    dir: Option<Box<DirState>>,
}

/// The next directory generation (see the module rules). Never 0: the generation read for a
/// directory that is not cached.
fn fresh_generation() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    // Relaxed: only a unique value is needed; publishing it is the caller's store. A std
    // atomic even under loom: a counter, not part of a protocol the models check.
    let g = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if g == 0 { NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) } else { g }
}

impl Inode {
    /// A fresh object of `pool`, not yet any file's ([`Inode::init`] makes it one).
    pub(crate) fn blank(pool: Pool) -> Self {
        Inode {
            pool,
            refs: AtomicUsize::new(0),
            spec: InodeSpec { ino: 0, kind: FileType::Other, fs_data: 0 },
            lookups: AtomicU64::new(0),
            parent: AtomicU64::new(0),
            attr: AttrCell::new(),
            dir_gen: AtomicU32::new(0),
            access: AccessCache::new(),
            aliases: Mutex::new(Vec::new()),
            dir: None,
        }
    }

    /// The pool's re-initialisation hook: a recycled object lets go of its last file's heavy
    /// parts (it is owned exclusively, past its grace period).
    pub(crate) fn recycle(&mut self) {
        self.dir = None;
        lock(&self.aliases).clear();
    }

    /// Makes a blank or recycled object the inode `spec`, with one count (owned exclusively).
    pub(crate) fn init(&mut self, spec: InodeSpec, parent: u64, lookups: u64) {
        debug_assert!(self.dir.is_none() && lock(&self.aliases).is_empty(), "not recycled");
        self.spec = spec;
        // Relaxed: the object is not published yet; publishing it is a Release store.
        self.refs.store(1, Ordering::Relaxed);
        self.lookups.store(lookups, Ordering::Relaxed);
        self.parent.store(parent, Ordering::Relaxed);
        self.attr = AttrCell::new();
        let generation = if spec.kind == FileType::Directory { fresh_generation() } else { 0 };
        self.dir_gen = AtomicU32::new(generation);
        self.access.renew();
        self.dir = (spec.kind == FileType::Directory).then(Box::default);
    }

    /// The pool this object returns to.
    pub(crate) fn pool(&self) -> Pool {
        self.pool
    }

    /// The count of `InodeRef`s on it.
    pub(crate) fn count(&self) -> &AtomicUsize {
        &self.refs
    }

    /// The children and listing of a directory (`None` for any other type).
    pub(crate) fn dir(&self) -> Option<&DirState> {
        self.dir.as_deref()
    }

    /// The inode number.
    pub fn ino(&self) -> u64 {
        self.spec.ino
    }

    /// The file type.
    pub fn kind(&self) -> FileType {
        self.spec.kind
    }

    /// The filesystem's own data, as given when the inode was added.
    pub fn fs_data(&self) -> u64 {
        self.spec.fs_data
    }

    /// Number, type and data in one value.
    pub fn spec(&self) -> InodeSpec {
        self.spec
    }

    /// The lookup count (FUSE `nlookup`): how many lookups the kernel has not yet forgotten.
    pub fn lookups(&self) -> u64 {
        // Relaxed: a report; writers change it under the inode stripe lock.
        self.lookups.load(Ordering::Relaxed)
    }

    /// For a directory, the inode number of its parent (itself for the root).
    pub fn parent(&self) -> u64 {
        // Relaxed: validated by the rename sequence (see the module rules).
        self.parent.load(Ordering::Relaxed)
    }

    /// The cached attributes and their expiry in the cache's clock, one consistent snapshot.
    pub(crate) fn attr_words(&self) -> (Attr, u64) {
        self.attr.read()
    }

    /// The generation of this directory's verifier (see `valid.rs`).
    #[inline]
    pub(crate) fn dir_gen(&self) -> u32 {
        // Acquire: pairs with the Release bump in `bump_dir_gen`: a filler that reads the new
        // generation asks the filesystem after the change it was told of, and a reporter that
        // read it no longer finds the verifier recorded before the change (see `listing.rs`).
        self.dir_gen.load(Ordering::Acquire)
    }

    /// The directory's verifier changed: negatives filled before are no longer trusted.
    pub(crate) fn bump_dir_gen(&self) {
        // Release: see `dir_gen`.
        self.dir_gen.store(fresh_generation(), Ordering::Release);
    }

    /// Sets the lookup count (caller holds this inode's stripe lock).
    pub(crate) fn set_lookups(&self, n: u64) {
        // Relaxed: the stripe lock orders writers.
        self.lookups.store(n, Ordering::Relaxed);
    }

    /// Sets `..` (caller is inside a rename write section).
    pub(crate) fn set_parent(&self, parent: u64) {
        // Relaxed: the rename sequence's fences order it for walkers.
        self.parent.store(parent, Ordering::Relaxed);
    }

    pub(crate) fn add_alias(&self, parent: u64, name: &[u8]) {
        let mut a = lock(&self.aliases);
        // Almost every inode has one name (hard links are rare): room for one more, where a
        // plain push into an empty vector reserves four (96 bytes).
        a.reserve_exact(1);
        a.push((parent, name.into()));
    }

    pub(crate) fn remove_alias(&self, parent: u64, name: &[u8]) {
        let mut a = lock(&self.aliases);
        let at = a.iter().position(|(p, n)| *p == parent && **n == *name);
        debug_assert!(at.is_some(), "inode {} has no alias ({parent}, {name:?})", self.ino());
        if let Some(i) = at {
            a.swap_remove(i);
        }
    }

    /// The `(parent, name)` of every positive dentry naming this inode.
    pub fn aliases(&self) -> Vec<(u64, Vec<u8>)> {
        lock(&self.aliases).iter().map(|(p, n)| (*p, n.to_vec())).collect()
    }

    pub(crate) fn has_alias(&self) -> bool {
        !lock(&self.aliases).is_empty()
    }
}

impl AccessStamp {
    /// The stamp of the inode object `inode` as it is now.
    pub(crate) fn of(inode: &Inode) -> Self {
        // The address in units of the inode's alignment, truncated to 32 bits (see the type).
        let object = std::ptr::from_ref(inode) as usize / align_of::<Inode>();
        AccessStamp { object: object as u32, generation: inode.access.generation() }
    }
}

impl std::fmt::Debug for Inode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inode")
            .field("ino", &self.spec.ino)
            .field("kind", &self.spec.kind)
            .field("fs_data", &self.spec.fs_data)
            .field("lookups", &self.lookups())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Dcache, ROOT_INO, epoch};

    #[test]
    fn an_inode_keeps_room_for_its_names_only() {
        let cache = Dcache::new(Config::for_entries(16));
        let file = InodeSpec { ino: 2, kind: FileType::Regular, fs_data: 0 };
        cache.add(ROOT_INO, b"f", file).unwrap();
        let guard = epoch::pin();
        let inode = cache.inode(&guard, 2).unwrap();
        assert_eq!(lock(&inode.aliases).capacity(), 1);
        cache.add(ROOT_INO, b"g", file).unwrap();
        assert_eq!(inode.aliases().len(), 2);
        assert_eq!(lock(&inode.aliases).capacity(), 2);
    }
}
