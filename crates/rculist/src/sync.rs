//! Atomics shim: loom's under `cfg(loom)`, std's otherwise, plus the one spin-wait helper.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering, fence};

/// One step of a bounded spin: exponential `spin_loop` hints, then yielding the CPU.
///
/// Under loom a spin must yield so the model checker can schedule the lock holder.
#[inline]
pub(crate) fn spin_wait(step: &mut u32) {
    #[cfg(loom)]
    {
        let _ = step;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        if *step < 6 {
            for _ in 0..(1u32 << *step) {
                std::hint::spin_loop();
            }
            *step += 1;
        } else {
            std::thread::yield_now();
        }
    }
}
