//! The concurrency primitives this crate uses: std's, or loom's under `cfg(loom)`.
//!
//! crossbeam-epoch itself switches to loom under `cfg(crossbeam_loom)`, so the loom models run
//! the real epoch code with `RUSTFLAGS="--cfg loom --cfg crossbeam_loom"`.

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, atomic};
#[cfg(loom)]
pub(crate) use loom::{lazy_static, thread_local};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, atomic};
#[cfg(not(loom))]
pub(crate) use std::thread_local;

/// Locks `m`; a poisoned lock is still usable because every critical section in this crate
/// leaves its data consistent before anything that can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    #[cfg(loom)]
    return m.lock().unwrap();
    #[cfg(not(loom))]
    return m.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
}

/// Tries to lock `m` without blocking.
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    #[cfg(loom)]
    return m.try_lock().ok();
    #[cfg(not(loom))]
    return match m.try_lock() {
        Ok(g) => Some(g),
        Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => None,
    };
}
