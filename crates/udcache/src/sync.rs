//! Atomics and locks: loom's under `cfg(loom)`, std's otherwise.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// A value alone on its cache lines: 128 bytes, a line and the neighbour that adjacent-line
/// prefetch fetches with it. For what one thread writes often and others use: a lock word
/// sharing a line with other data makes every write of it a miss for their readers.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// Locks `m`; a panic while holding one of this crate's locks leaves data that is still
/// consistent (every critical section only moves whole values), so poisoning is ignored.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One wait step of a spin (on a sequence count held odd by a writer, on a call's answer): a
/// hint to the CPU, or under loom a yield, so the model schedules the other thread instead of
/// spinning forever.
pub(crate) fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
