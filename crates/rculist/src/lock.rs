//! The writer-side locks: a one-byte spin lock for [`List`](crate::List) and
//! [`SplitList`](crate::SplitList), and the low-bit lock of an [`HListBl`](crate::HListBl) head.
//!
//! Both are held for a handful of pointer stores, so spinning (then yielding) is cheaper than
//! parking. Readers never take either lock.

use crate::sync::{AtomicBool, AtomicUsize, Ordering, spin_wait};

/// The lock bit in an [`HListBl`](crate::HListBl) head word. Nodes are at least 2-aligned
/// (a link holds an atomic word), so bit 0 of a node address is always free.
pub(crate) const BIT_LOCK: usize = 1;

/// A test-and-test-and-set spin lock.
#[derive(Debug)]
pub(crate) struct SpinLock {
    locked: AtomicBool,
}

impl SpinLock {
    pub(crate) fn new() -> Self {
        Self { locked: AtomicBool::new(false) }
    }

    /// Takes the lock; it is released when the returned token is dropped.
    pub(crate) fn hold(&self) -> Held<'_> {
        self.lock();
        Held(Some(self))
    }

    fn lock(&self) {
        let mut step = 0;
        // Acquire pairs with the Release in `unlock`: the new holder sees every store the
        // previous holder made to the list it protects.
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            while self.locked.load(Ordering::Relaxed) {
                spin_wait(&mut step);
            }
        }
    }

    fn unlock(&self) {
        debug_assert!(self.locked.load(Ordering::Relaxed), "unlock of an unlocked SpinLock");
        // Release pairs with the Acquire in `lock`.
        self.locked.store(false, Ordering::Release);
    }
}

/// Proof that a writer may run: a held [`SpinLock`] (released on drop), or `None` where the
/// caller serialises writers itself (exclusive access, or its own lock behind an unsafe
/// constructor).
#[derive(Debug)]
pub(crate) struct Held<'l>(Option<&'l SpinLock>);

impl Held<'_> {
    /// Serialisation the caller provides.
    pub(crate) fn external() -> Self {
        Held(None)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(lock) = self.0 {
            lock.unlock();
        }
    }
}

/// Takes the bit lock in `word`, preserving the other bits.
pub(crate) fn bit_lock(word: &AtomicUsize) {
    let mut step = 0;
    loop {
        let cur = word.load(Ordering::Relaxed);
        // Acquire pairs with the Release in `bit_unlock`.
        if cur & BIT_LOCK == 0
            && word
                .compare_exchange_weak(cur, cur | BIT_LOCK, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            return;
        }
        spin_wait(&mut step);
    }
}

/// Releases the bit lock in `word`; a read-modify-write, so the pointer bits stored while the
/// lock was held are kept.
pub(crate) fn bit_unlock(word: &AtomicUsize) {
    // Release pairs with the Acquire in `bit_lock` (the next holder sees our stores); readers
    // synchronise through the Release stores of the pointer bits themselves, not this one.
    let prev = word.fetch_and(!BIT_LOCK, Ordering::Release);
    debug_assert!(prev & BIT_LOCK != 0, "bit_unlock of an unlocked head");
}
