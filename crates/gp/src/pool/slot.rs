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
    /// A new heap slot holding `value`, owned by the pool with id `pool` (debug builds check it).
    pub(crate) fn boxed(value: T, pool: usize) -> NonNull<Slot<T>> {
        let _ = pool;
        let slot = Box::new(Slot {
            value,
            #[cfg(debug_assertions)]
            tag: DebugTag { pool, parked: crate::sync::atomic::AtomicBool::new(false) },
        });
        NonNull::from(Box::leak(slot))
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

    /// Frees a slot and drops its value.
    ///
    /// # Safety
    ///
    /// `slot` came from [`Slot::boxed`], is owned by the caller, and no reader can still see it.
    pub(crate) unsafe fn free(slot: NonNull<Slot<T>>) {
        // SAFETY: allocated by Box in `boxed`; the caller owns it and no one else refers to it.
        drop(unsafe { Box::from_raw(slot.as_ptr()) });
    }
}
