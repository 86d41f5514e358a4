//! The move sequence count a list keeps so readers can tell whether a walk was disturbed.
//!
//! Removals and insertions never disturb a walk beyond the contract in the crate docs (a node on
//! the list throughout is seen exactly once). Moves can: a reader standing on a node that moves
//! follows it to its new place. Every move therefore runs inside a write section of the
//! sequence count of each list it takes the node out of or puts it into, and a reader that finds
//! the count unchanged (and even) after its walk knows no move overlapped it.
//!
//! Protocol (a seqlock whose data are the link pointers):
//! - writer (under the list lock): `seq += 1` (odd), Release fence, the pointer stores,
//!   `seq += 1` with Release.
//! - reader: `s = seq` with Acquire before the walk; after it an Acquire fence, then `seq`
//!   again. If the reader's walk read any pointer stored inside a write section, the two fences
//!   synchronise and the second read sees at least the odd value, so `s` differs.

use crate::sync::{AtomicUsize, Ordering, fence};

#[derive(Debug)]
pub(crate) struct MoveSeq {
    seq: AtomicUsize,
}

impl MoveSeq {
    pub(crate) fn new() -> Self {
        Self { seq: AtomicUsize::new(0) }
    }

    /// Opens a write section. The caller holds the list's writer lock.
    pub(crate) fn write_begin(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 0, "nested MoveSeq write section");
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // Orders the odd value before the section's pointer stores; pairs with the reader's
        // Acquire fence in `read_valid`.
        fence(Ordering::Release);
    }

    /// Closes the write section opened by `write_begin`.
    pub(crate) fn write_end(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 1, "MoveSeq write_end without write_begin");
        // Release: a reader that reads this even value (Acquire in `read_begin`) sees every
        // pointer store of the section.
        self.seq.store(s.wrapping_add(1), Ordering::Release);
    }

    /// The value a reader records before its walk.
    pub(crate) fn read_begin(&self) -> usize {
        // Acquire pairs with the Release in `write_end`.
        self.seq.load(Ordering::Acquire)
    }

    /// Whether no write section overlapped the walk that began at `start`.
    pub(crate) fn read_valid(&self, start: usize) -> bool {
        // Pairs with the Release fence in `write_begin`: if any load of the walk saw a store
        // made inside a section, the load below sees that section's odd value or later.
        fence(Ordering::Acquire);
        start & 1 == 0 && self.seq.load(Ordering::Relaxed) == start
    }
}
