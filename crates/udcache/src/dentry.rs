//! The dentry's inode slot: the one raw pointer of this crate.
//!
//! # Rules
//!
//! - A dentry is a [`udcache_neghash`] entry keyed by `(parent ino, name)` whose value is a
//!   [`Slot`]: null for a negative dentry, else a pointer made by `InodeRef::into_raw` that
//!   owns one count of the inode.
//! - Writers change a slot only while holding the name's stripe lock ([`NameLock`]), so two
//!   writers never race on one slot. Readers decide positive/negative by the slot alone; the
//!   neghash `NEGATIVE` bit (its bookkeeping: counts and bounds) is flipped under the same
//!   lock, so the bit and the slot agree whenever the lock is free.
//! - Readers load the slot with `Acquire` (pairs with the `Release` of `put`: the inode's
//!   fields are initialised before it is reachable) and may use the inode for as long as their
//!   epoch guard lives: a count the slot gave up may drop at once, because an inode whose last
//!   count is gone goes back to its `udcache-gp` pool, which re-initialises it for another
//!   file only after every reader pinned at that moment has unpinned (see
//!   `recycle.rs`). A slot still holding a count when its entry is freed (neghash frees
//!   entries a grace period after their removal) drops it then.
//! - What a reader may observe: the old inode or the new one (a replacement swaps them in one
//!   step), never freed memory; a slot emptied while the entry is not yet marked negative
//!   (it reads as negative).

use udcache_neghash::epoch::Guard;

use crate::inode::Inode;
use crate::recycle::InodeRef;
use crate::sync::{AtomicPtr, MutexGuard, Ordering};

/// Proof that the caller holds the stripe lock of the names it writes (see [`crate::cache`]).
pub(crate) struct NameLock<'a> {
    pub(crate) _guards: (MutexGuard<'a, ()>, Option<MutexGuard<'a, ()>>),
}

/// Proof that the caller holds the stripe lock of the inode numbers it writes in the inode
/// table (see [`crate::cache`]).
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

/// A dentry's inode (null: negative), or an inode-table entry's inode: an owned `InodeRef` as
/// a raw pointer.
pub(crate) struct Slot {
    inode: AtomicPtr<Inode>,
}

impl Slot {
    pub(crate) fn negative() -> Self {
        Slot { inode: AtomicPtr::new(std::ptr::null_mut()) }
    }

    pub(crate) fn positive(inode: InodeRef) -> Self {
        Slot { inode: AtomicPtr::new(InodeRef::into_raw(inode)) }
    }

    /// The inode, if positive, borrowed for the guard's life.
    pub(crate) fn load<'g>(&'g self, _guard: &'g Guard) -> Option<&'g Inode> {
        // Acquire: pairs with the Release swap in `put` (and the initialising store of
        // `positive`, published by neghash's Release chain insert).
        let p = self.inode.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from `InodeRef::into_raw` and held a count when this
        // load read it, with `_guard` pinned (`'g`). Whatever later drops counts, the inode's
        // pool re-initialises or frees it only after a grace period that began after the last
        // count went, so after `_guard` unpins: it stays this file's inode for `'g`.
        unsafe { p.as_ref() }
    }

    /// A counted reference to the inode, if positive. The name lock keeps the slot (and so
    /// its count on the inode) unchanged while the new count is taken.
    /// A counted reference to the inode, if any and still alive, for a caller without the
    /// writers' lock (see [`InodeRef::try_clone`]).
    pub(crate) fn load_counted(&self, guard: &Guard) -> Option<InodeRef> {
        InodeRef::try_clone(self.load(guard)?)
    }

    pub(crate) fn load_arc(&self, _lock: &impl SlotWriter) -> Option<InodeRef> {
        // Relaxed: the name lock orders this load after the writer that stored the pointer.
        let p = self.inode.load(Ordering::Relaxed);
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
        let old = self.inode.swap(InodeRef::into_raw(inode), Ordering::Release);
        retire(old)
    }

    /// Makes a positive slot negative; returns the inode it held (a new count: the slot's own
    /// count is dropped after every reader now pinned has unpinned).
    pub(crate) fn take(&self, _lock: &impl SlotWriter) -> Option<InodeRef> {
        // Relaxed: the name lock orders writers; readers only need the null (no data behind).
        retire(self.inode.swap(std::ptr::null_mut(), Ordering::Relaxed))
    }
}

/// Takes over the count a slot held on `p` (if not null). Readers may still be using the
/// inode: dropping the count is safe anyway (see the module rules).
fn retire(p: *mut Inode) -> Option<InodeRef> {
    // SAFETY: `p` came from `InodeRef::into_raw` and the slot owned its count; the slot no
    // longer holds `p` (swapped out by the caller), so that count is now ours.
    (!p.is_null()).then(|| unsafe { InodeRef::from_raw(p) })
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Relaxed: `&mut self`: no other thread can reach the slot any more.
        let p = self.inode.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: the slot owns this count (from `InodeRef::into_raw`); the entry is being
            // freed, so no one else can take it.
            drop(unsafe { InodeRef::from_raw(p) });
        }
    }
}
