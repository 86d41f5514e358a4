//! Atomics: loom's under `cfg(loom)`, std's otherwise.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicI64, AtomicU32, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicI64, AtomicU32, Ordering, fence};

/// One turn of a wait for another thread (a reader retrying while a writer finishes): a spin
/// hint, or under loom a yield, so that the model lets the writer run.
pub(crate) fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Where the table's hash keys come from: std's `RandomState` (random keys); under `cfg(loom)`
/// fixed keys, because a loom model must take the same branches in every run (the tag bit
/// of a key decides whether a lookup reads the chain at all).
#[cfg(not(loom))]
pub(crate) type KeySource = std::hash::RandomState;
#[cfg(loom)]
pub(crate) type KeySource = std::hash::BuildHasherDefault<std::hash::DefaultHasher>;
