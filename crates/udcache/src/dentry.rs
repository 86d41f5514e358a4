//! The dentry's inode slot: the one raw pointer of this crate.
//!
//! # Rules
//!
//! - A dentry is a [`udcache_neghash`] entry keyed by `(parent ino, name)` whose value is a
//!   [`Slot`]: null for a negative dentry, else a pointer made by `Arc::into_raw` that owns one
//!   count of the inode.
//! - Writers change a slot only while holding the name's stripe lock ([`NameLock`]), so two
//!   writers never race on one slot. Readers decide positive/negative by the slot alone; the
//!   neghash `NEGATIVE` bit (its bookkeeping: counts and bounds) is flipped under the same
//!   lock, so the bit and the slot agree whenever the lock is free.
//! - Readers load the slot with `Acquire` (pairs with the `Release` of `put`: the inode's
//!   fields are initialised before it is reachable) and may use the inode for as long as their
//!   epoch guard lives: a count the slot gave up is dropped through `Guard::defer`, after every
//!   reader pinned at that moment, and the slot's own count is dropped with the entry, which
//!   neghash frees only after a grace period.
//! - What a reader may observe: the old inode or the new one (a replacement swaps them in one
//!   step), never freed memory; a slot emptied while the entry is not yet marked negative
//!   (it reads as negative).

use std::sync::Arc;

use udcache_neghash::epoch::Guard;

use crate::inode::Inode;
use crate::sync::{AtomicPtr, MutexGuard, Ordering};

/// Proof that the caller holds the stripe lock of the names it writes (see [`crate::cache`]).
pub(crate) struct NameLock<'a> {
    pub(crate) _guards: (MutexGuard<'a, ()>, Option<MutexGuard<'a, ()>>),
}

/// A dentry's inode: null (negative) or an owned `Arc<Inode>` as a raw pointer.
pub(crate) struct Slot {
    inode: AtomicPtr<Inode>,
}

impl Slot {
    pub(crate) fn negative() -> Self {
        Slot { inode: AtomicPtr::new(std::ptr::null_mut()) }
    }

    pub(crate) fn positive(inode: Arc<Inode>) -> Self {
        Slot { inode: AtomicPtr::new(Arc::into_raw(inode).cast_mut()) }
    }

    /// The inode, if positive, borrowed for the guard's life.
    pub(crate) fn load<'g>(&'g self, _guard: &'g Guard) -> Option<&'g Inode> {
        // Acquire: pairs with the Release swap in `put` (and the initialising store of
        // `positive`, published by neghash's Release chain insert).
        let p = self.inode.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from `Arc::into_raw` and its count is released only
        // by `take` (deferred past every reader pinned then, including `_guard`'s pin, which
        // started before this load) or by `drop` (the entry is freed after a grace period that
        // covers `_guard`). So the inode lives at least as long as `'g`.
        unsafe { p.as_ref() }
    }

    /// A counted reference to the inode, if positive. The name lock keeps the slot (and so
    /// its count on the inode) unchanged while the new count is taken.
    pub(crate) fn load_arc(&self, _lock: &NameLock<'_>) -> Option<Arc<Inode>> {
        // Relaxed: the name lock orders this load after the writer that stored the pointer.
        let p = self.inode.load(Ordering::Relaxed);
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` came from `Arc::into_raw` and the slot owns one count, which no one can
        // give up while we hold the name lock (only its holders change the slot); so the
        // inode is alive and a second count may be taken and turned into an `Arc`.
        unsafe {
            Arc::increment_strong_count(p);
            Some(Arc::from_raw(p))
        }
    }

    /// Points the slot at `inode`; returns the inode it pointed at before, if any (a new
    /// count: the slot's own count is dropped after every reader now pinned has unpinned).
    /// A reader sees the old inode or the new one, never neither.
    pub(crate) fn put(
        &self,
        inode: Arc<Inode>,
        guard: &Guard,
        _lock: &NameLock<'_>,
    ) -> Option<Arc<Inode>> {
        // Release: pairs with the Acquire in `load` (the inode is initialised before it is
        // reachable). The old pointer needs no Acquire: the name lock ordered its writer.
        let old = self.inode.swap(Arc::into_raw(inode).cast_mut(), Ordering::Release);
        retire(old, guard)
    }

    /// Makes a positive slot negative; returns the inode it held (a new count: the slot's own
    /// count is dropped after every reader now pinned has unpinned).
    pub(crate) fn take(&self, guard: &Guard, _lock: &NameLock<'_>) -> Option<Arc<Inode>> {
        // Relaxed: the name lock orders writers; readers only need the null (no data behind).
        retire(self.inode.swap(std::ptr::null_mut(), Ordering::Relaxed), guard)
    }
}

/// Takes over the count a slot held on `p` (if not null): defers its drop past every reader
/// pinned now and returns a fresh count to the caller.
fn retire(p: *mut Inode, guard: &Guard) -> Option<Arc<Inode>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` came from `Arc::into_raw` and the slot owned its count; the slot no longer
    // holds `p` (swapped out by the caller), so that count is now ours.
    let old = unsafe { Arc::from_raw(p) };
    let keep = old.clone();
    guard.defer(move || drop(old));
    Some(keep)
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Relaxed: `&mut self`: no other thread can reach the slot any more.
        let p = self.inode.load(Ordering::Relaxed);
        if !p.is_null() {
            // SAFETY: the slot owns this count (from `Arc::into_raw`); the entry is being
            // freed, after the grace period that covers every reader that could see it.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}
