//! The synchronization primitives, swapped for loom's under `cfg(loom)` so the loom models in
//! `tests/loom_*.rs` explore every interleaving of the directory lock, its condition variable
//! and the LRU lock.

#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard, atomic};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard, atomic};
