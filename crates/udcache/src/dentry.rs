//! The dentry's inode slot: the one raw pointer of this crate.
//!
//! # Rules
//!
//! - A dentry is a [`udcache_neghash`] entry keyed by `(parent ino, name)` whose value is a
//!   [`Dentry`]: a [`Slot`] — null for a negative dentry, else a pointer made by
//!   `InodeRef::into_raw` that owns one count of the inode — and the dentry's validity word
//!   (expiry and parent generation: see `valid.rs`), 8 bytes, written under the same lock as
//!   the slot. (The inode table's entries are bare slots.)
//! - **Sequence count.** Each dentry has one: neghash's per-entry count (in the entry's state
//!   word, no extra byte). A writer changes the slot and the validity word together inside one
//!   write of it ([`DentryWrites`]); a lockless reader that needs both (a walk step, a
//!   revalidation) takes them with [`DentryWrites::snapshot`], which retries while a write
//!   overlaps. So a reader never pairs one inode with another's validity word. A rename is
//!   not a dentry write: it moves a name to a new entry, and walkers validate it with the
//!   global rename sequence (see `rename.rs`).
//! - **What a step needs without touching the inode.** A positive dentry also keeps its inode's
//!   number (a word beside the validity word) and its file type (the two low bits of the slot's
//!   pointer, below the inode's alignment), written with the pointer in one write of the
//!   sequence count; both are fixed for an inode's life. A walk step reads them in its snapshot
//!   ([`Named`]) and hashes the next component under that number without loading the inode:
//!   on a cached tree larger than the CPU's caches, the inode's line is a miss on every step
//!   otherwise. (A negative dentry's number word is left as it was and means nothing.)
//! - Writers change a slot only while holding the name's stripe lock ([`NameLock`]), so two
//!   writers never race on one slot (and the sequence count's writers are serialised, as it
//!   requires). Readers decide positive/negative by the slot alone; the
//!   neghash `NEGATIVE` bit (its bookkeeping: counts and bounds) is flipped under the same
//!   lock, so the bit and the slot agree whenever the lock is free.
//! - Readers load the slot with `Acquire` (pairs with the `Release` of `put`: the inode's
//!   fields are initialised before it is reachable) and may use the inode for as long as their
//!   epoch guard lives: a count the slot gave up may drop at once, because an inode whose last
//!   count is gone goes back to its `udcache-gp` pool, which re-initialises it for another
//!   file only after every reader pinned at that moment has unpinned (see
//!   `inode/recycle.rs`). A slot still holding a count when its entry is freed (neghash frees
//!   entries a grace period after their removal) drops it then.
//! - What a reader may observe: the old inode or the new one (a replacement swaps them in one
//!   step), never freed memory; a slot emptied while the entry is not yet marked negative
//!   (it reads as negative); through a snapshot, an inode with the validity word written with
//!   it.

use std::ops::Deref;
use std::ptr::NonNull;

use udcache_neghash::epoch::Guard;

use crate::fs::FileType;
use crate::inode::{Inode, InodeRef};
use crate::sync::{AtomicPtr, AtomicU64, MutexGuard, Ordering};
use crate::valid::Validity;

/// Proof that the caller holds the stripe lock of the names it writes (see `cache.rs`).
pub(crate) struct NameLock<'a> {
    pub(crate) _guards: (MutexGuard<'a, ()>, Option<MutexGuard<'a, ()>>),
}

/// Proof that the caller holds the stripe lock of the inode numbers it writes in the inode
/// table (see `cache.rs`).
pub(crate) struct InodeLock<'a> {
    pub(crate) _guard: MutexGuard<'a, ()>,
}

/// Proof that no other thread can reach the cache (it is being dropped).
pub(crate) struct Exclusive;

/// What entitles a writer to change a slot: the lock that serialises the writers of its table
/// (or exclusive access).
pub(crate) trait SlotWriter {}
impl SlotWriter for NameLock<'_> {}
impl SlotWriter for InodeLock<'_> {}
impl SlotWriter for Exclusive {}

/// The low bits of a slot's pointer that carry the inode's file type.
const KIND_BITS: usize = 0b11;
const _: () = assert!(align_of::<Inode>() > KIND_BITS, "the type must fit below the alignment");

/// `inode`'s count as a slot word: the pointer with the file type in its low bits.
fn tagged(inode: InodeRef) -> *mut Inode {
    let tag = match inode.kind() {
        FileType::Directory => 0,
        FileType::Regular => 1,
        FileType::Symlink => 2,
        FileType::Other => 3,
    };
    InodeRef::into_raw(inode).map_addr(|a| a | tag)
}

/// A slot word's pointer (the tag cleared) and file type.
fn untagged(p: *mut Inode) -> (*mut Inode, FileType) {
    let kind = match p.addr() & KIND_BITS {
        0 => FileType::Directory,
        1 => FileType::Regular,
        2 => FileType::Symlink,
        _ => FileType::Other,
    };
    (p.map_addr(|a| a & !KIND_BITS), kind)
}

/// A dentry's inode (null: negative), or an inode-table entry's inode: an owned `InodeRef` as
/// a raw pointer, its file type in the low bits (see the module rules).
pub(crate) struct Slot {
    inode: AtomicPtr<Inode>,
}

impl Slot {
    pub(crate) fn negative() -> Self {
        Slot { inode: AtomicPtr::new(std::ptr::null_mut()) }
    }

    pub(crate) fn positive(inode: InodeRef) -> Self {
        Slot { inode: AtomicPtr::new(tagged(inode)) }
    }

    /// The slot's pointer and file type, for a reader without the writers' lock.
    #[inline]
    fn acquire(&self) -> (*mut Inode, FileType) {
        // Acquire: pairs with the Release swap in `put` (and the initialising store of
        // `positive`, published by neghash's Release chain insert): the inode's fields are
        // initialised before the reader follows the pointer.
        untagged(self.inode.load(Ordering::Acquire))
    }

    /// The inode, if positive, borrowed for the guard's life.
    pub(crate) fn load<'g>(&'g self, guard: &'g Guard) -> Option<&'g Inode> {
        self.load_typed(guard).map(|(inode, _)| inode)
    }

    /// The inode, if positive, borrowed for the guard's life, and its file type (read from the
    /// slot, not from the inode).
    fn load_typed<'g>(&'g self, _guard: &'g Guard) -> Option<(&'g Inode, FileType)> {
        let (p, kind) = self.acquire();
        // SAFETY: a non-null pointer came from `InodeRef::into_raw` and held a count when this
        // load read it, with `_guard` pinned (`'g`). Whatever later drops counts, the inode's
        // pool re-initialises or frees it only after a grace period that began after the last
        // count went, so after `_guard` unpins: it stays this file's inode for `'g`.
        unsafe { p.as_ref() }.map(|inode| (inode, kind))
    }

    /// A counted reference to the inode, if any and still alive, for a caller without the
    /// writers' lock (see [`InodeRef::try_clone`]).
    pub(crate) fn load_counted(&self, _guard: &Guard) -> Option<InodeRef> {
        let p = NonNull::new(self.acquire().0)?;
        // SAFETY: a non-null pointer came from `InodeRef::into_raw` and held a count when this
        // load read it, with `_guard` pinned: as in `load_typed`, the inode is not
        // re-initialised before the guard unpins. The pointer, not a `&Inode` made from it, is
        // what the new count keeps (see `try_clone`).
        unsafe { InodeRef::try_clone(p) }
    }

    pub(crate) fn load_arc(&self, _lock: &impl SlotWriter) -> Option<InodeRef> {
        // Relaxed: the name lock orders this load after the writer that stored the pointer.
        let (p, _) = untagged(self.inode.load(Ordering::Relaxed));
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` came from `InodeRef::into_raw` and the slot owns one count, which no one
        // can give up while we hold the name lock (only its holders change the slot).
        Some(unsafe { InodeRef::clone_raw(p) })
    }

    /// Points the slot at `inode`; returns the inode it pointed at before, if any (a new
    /// count: the slot's own count is dropped after every reader now pinned has unpinned).
    /// A reader sees the old inode or the new one, never neither.
    pub(crate) fn put(&self, inode: InodeRef, _lock: &impl SlotWriter) -> Option<InodeRef> {
        // Release: pairs with the Acquire in `load` (the inode is initialised before it is
        // reachable). The old pointer needs no Acquire: the name lock ordered its writer.
        let old = self.inode.swap(tagged(inode), Ordering::Release);
        retire(old)
    }

    /// Makes a positive slot negative; returns the inode it held (a new count: the slot's own
    /// count is dropped after every reader now pinned has unpinned).
    pub(crate) fn take(&self, _lock: &impl SlotWriter) -> Option<InodeRef> {
        // Relaxed: the name lock orders writers; readers only need the null (no data behind).
        retire(self.inode.swap(std::ptr::null_mut(), Ordering::Relaxed))
    }

    /// The pointer itself, for identity checks (never dereferenced).
    pub(crate) fn inode_ptr(&self) -> *const Inode {
        // Relaxed: compared only, under the name lock, with a value read under a guard.
        untagged(self.inode.load(Ordering::Relaxed)).0
    }
}

/// A dentry's value: its inode slot, its validity word, and its inode's number.
pub(crate) struct Dentry {
    slot: Slot,
    valid: AtomicU64,
    /// The number of the inode `slot` points at (meaningless while negative).
    ino: AtomicU64,
}

/// An inode as a walk reached it: the reference, not yet read, with the number and file type
/// the dentry that led to it keeps beside its pointer ([`Walk::Found`](crate::Walk::Found)).
///
/// [`ino`](Self::ino) and [`kind`](Self::kind) answer from what the walk already read, so a
/// caller that needs only the number (to answer a FUSE `LOOKUP` from its own attributes, or
/// to key its own table) spares the inode's cache line, a miss on a tree larger than the CPU's
/// caches. Everything else of the inode is a `Deref` away. Both values are fixed for an
/// inode's life and were read with the pointer in one snapshot of the dentry, so they are
/// the inode's own.
///
/// ```
/// use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO, Walk, epoch};
/// let cache = Dcache::new(Config::for_entries(16));
/// cache.add(ROOT_INO, b"f", InodeSpec { ino: 7, kind: FileType::Regular, fs_data: 9 }).unwrap();
/// let guard = epoch::pin();
/// let Ok(Walk::Found(found)) = cache.walk(&guard, ROOT_INO, "f") else { panic!() };
/// assert_eq!((found.ino(), found.kind()), (7, FileType::Regular)); // from the dentry
/// assert_eq!(found.fs_data(), 9); // from the inode
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Named<'g> {
    pub(crate) inode: &'g Inode,
    pub(crate) ino: u64,
    pub(crate) kind: FileType,
}

impl<'g> Named<'g> {
    /// Number and type read from the inode itself (not from a dentry).
    pub(crate) fn of(inode: &'g Inode) -> Self {
        Named { inode, ino: inode.ino(), kind: inode.kind() }
    }

    /// The inode's number, without reading the inode.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// The inode's file type, without reading the inode.
    pub fn kind(&self) -> FileType {
        self.kind
    }

    /// The inode itself, borrowed for the walk's guard.
    pub fn inode(&self) -> &'g Inode {
        self.inode
    }
}

impl Deref for Named<'_> {
    type Target = Inode;
    fn deref(&self) -> &Inode {
        self.inode
    }
}

/// A dentry: a name-table entry whose value is a [`Dentry`].
pub(crate) type DentryEntry = udcache_neghash::Entry<Dentry>;

// 112 bytes with a name of up to 32 (a kernel dentry is 192): neghash's 88 and this 24.
#[cfg(all(target_pointer_width = "64", not(loom)))]
const _: () = assert!(size_of::<DentryEntry>() == 112, "a dentry grew");

impl Deref for Dentry {
    type Target = Slot;
    fn deref(&self) -> &Slot {
        &self.slot
    }
}

impl Dentry {
    pub(crate) fn negative(valid: Validity) -> Self {
        Dentry { slot: Slot::negative(), valid: AtomicU64::new(valid.0), ino: AtomicU64::new(0) }
    }

    pub(crate) fn positive(inode: InodeRef, valid: Validity) -> Self {
        let ino = AtomicU64::new(inode.ino());
        Dentry { slot: Slot::positive(inode), valid: AtomicU64::new(valid.0), ino }
    }

    /// The inode, its type and its number as the slot and the number word hold them.
    fn child<'g>(&'g self, guard: &'g Guard) -> Option<Named<'g>> {
        let (inode, kind) = self.slot.load_typed(guard)?;
        // Relaxed: read inside a snapshot, which the sequence count validates.
        Some(Named { inode, ino: self.ino.load(Ordering::Relaxed), kind })
    }

    /// The validity word alone. Relaxed: the word is a value by itself and publishes nothing;
    /// a reader that needs it to match the inode takes both with [`DentryWrites::snapshot`].
    #[inline]
    pub(crate) fn validity(&self) -> Validity {
        Validity(self.valid.load(Ordering::Relaxed))
    }

    fn store_validity(&self, valid: Validity) {
        // Relaxed: inside a write of the entry's sequence count, which orders it for readers
        // of snapshots; writers are ordered by the name lock.
        self.valid.store(valid.0, Ordering::Relaxed);
    }
}

/// How a dentry's inode and validity word are read together and changed together: each
/// change is one write of the entry's sequence count (neghash's
/// [`write_value`](udcache_neghash::Entry::write_value)), made under the name's stripe lock
/// (which serialises the writers of a dentry, as that count requires).
pub(crate) trait DentryWrites {
    /// The inode (with its number and type) and the validity word as they were at one
    /// instant, without locks.
    fn snapshot<'g>(&'g self, guard: &'g Guard) -> (Option<Named<'g>>, Validity);
    /// Points the dentry at `inode`, valid as `valid`; returns the inode it named before
    /// (see [`Slot::put`]).
    fn put_inode(&self, inode: InodeRef, valid: Validity, lock: &NameLock<'_>) -> Option<InodeRef>;
    /// Makes the dentry negative, valid as `valid`; returns the inode it named.
    fn take_inode(&self, valid: Validity, lock: &NameLock<'_>) -> Option<InodeRef>;
    /// Replaces the validity word.
    fn set_validity(&self, valid: Validity, lock: &NameLock<'_>);
}

impl DentryWrites for DentryEntry {
    #[inline]
    fn snapshot<'g>(&'g self, guard: &'g Guard) -> (Option<Named<'g>>, Validity) {
        self.read_value(|d| (d.child(guard), d.validity()))
    }

    fn put_inode(&self, inode: InodeRef, valid: Validity, lock: &NameLock<'_>) -> Option<InodeRef> {
        self.write_value(|d| {
            d.store_validity(valid);
            // Relaxed: inside the write of the sequence count, as the validity word.
            d.ino.store(inode.ino(), Ordering::Relaxed);
            d.slot.put(inode, lock)
        })
    }

    fn take_inode(&self, valid: Validity, lock: &NameLock<'_>) -> Option<InodeRef> {
        self.write_value(|d| {
            d.store_validity(valid);
            d.slot.take(lock)
        })
    }

    fn set_validity(&self, valid: Validity, _lock: &NameLock<'_>) {
        self.write_value(|d| d.store_validity(valid));
    }
}

/// Takes over the count a slot held through its word `p` (if not null): the inode's pointer
/// with its file type in the low bits, as [`tagged`] made it. Readers may still be using the
/// inode: dropping the count is safe anyway (see the module rules).
fn retire(p: *mut Inode) -> Option<InodeRef> {
    let (p, _) = untagged(p);
    // SAFETY: `p` came from `InodeRef::into_raw` and the slot owned its count; the slot no
    // longer holds `p` (swapped out by the caller), so that count is now ours.
    (!p.is_null()).then(|| unsafe { InodeRef::from_raw(p) })
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Relaxed: `&mut self`: no other thread can reach the slot any more.
        drop(retire(self.inode.load(Ordering::Relaxed)));
    }
}
