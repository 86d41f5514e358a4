//! Atomics: loom's under `cfg(loom)`, std's otherwise.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicI64, AtomicU32, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
