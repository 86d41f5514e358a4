//! The memory behind each pooled object: the value and, in debug builds, a tag that catches
//! misuse of raw pointers (a double free, a free into the wrong pool). Nothing else: parked
//! batches list their slots in vectors of their own (see `shard.rs`), so a release build's
//! slot is exactly its value.

use std::ptr::NonNull;

/// One pooled object. `value` is first and the layout is C-like, so a pointer to the value is a
/// pointer to the slot (see [`Slot::from_value`]).
#[repr(C)]
pub(crate) struct Slot<T> {
    pub(crate) value: T,
    #[cfg(debug_assertions)]
    tag: DebugTag,
}

#[cfg(debug_assertions)]
struct DebugTag {
    pool: usize,
    parked: crate::sync::atomic::AtomicBool,
}

impl<T> Slot<T> {
    /// A slot holding `value`, owned by the pool with id `pool` (debug builds check it); the
    /// pool places it in a run (see `run.rs`).
    pub(crate) fn new(value: T, pool: usize) -> Self {
        let _ = pool;
        Slot {
            value,
            #[cfg(debug_assertions)]
            tag: DebugTag { pool, parked: crate::sync::atomic::AtomicBool::new(false) },
        }
    }

    /// The slot whose value `value` points to.
    pub(crate) fn from_value(value: NonNull<T>) -> NonNull<Slot<T>> {
        // `value` is the first field of a repr(C) struct: same address.
        value.cast()
    }

    /// Debug builds: checks that `slot` belongs to pool `pool` and flips its parked state from
    /// `!parking` to `parking`, panicking with a clear message on misuse.
    ///
    /// # Safety
    ///
    /// `slot` must point to a live slot allocated by some pool (in release builds nothing is
    /// read).
    pub(crate) unsafe fn check_transition(slot: NonNull<Slot<T>>, pool: usize, parking: bool) {
        #[cfg(debug_assertions)]
        {
            use crate::sync::atomic::Ordering::Relaxed;
            // SAFETY: the caller guarantees `slot` is a live slot; the tag is only read here.
            let tag = unsafe { &(*slot.as_ptr()).tag };
            assert_eq!(tag.pool, pool, "udcache_gp: object freed into a pool that did not make it");
            // Relaxed: the tag is a debugging aid; the pool's own locks order real accesses.
            let was = tag.parked.swap(parking, Relaxed);
            assert_ne!(was, parking, "udcache_gp: object freed twice");
        }
        #[cfg(not(debug_assertions))]
        let _ = (slot, pool, parking);
    }
}
