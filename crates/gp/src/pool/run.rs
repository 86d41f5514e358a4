//! Runs: the blocks fresh objects are made in, and the table that frees them.
//!
//! A fresh run of `n` objects is **one allocation**: `n` slots back to back, the block
//! aligned to [`RUN_ALIGN`]. Two things follow, like a kernel slab's:
//!
//! - an object whose size is a multiple of 64 starts a cache line, and one of 128 bytes fills
//!   an aligned pair of lines (the pair an adjacent-line prefetcher fetches together), so a
//!   reader that touches an object's first bytes never straddles a line it did not need;
//!   objects made one by one by the global allocator sit wherever its headers leave them
//!   (glibc: 16 bytes in, 144 apart for a 128-byte object);
//! - no allocator header per object: a 128-byte object costs 128 bytes, not 144.
//!
//! # Freeing
//!
//! Objects leave the pool (`trim`, the pool's drop) one at a time, but a block can go back to
//! the allocator only whole. [`Runs`] records every block with how many of its objects are
//! still alive; freeing an object drops it and counts its block down, and the last one
//! deallocates the block. A block whose objects are partly still in use keeps its memory (as
//! a slab page does), and the slot the freed object leaves is a **hole**: the table keeps the
//! holes, and the next run is made in them (lowest address first) before any new block is
//! allocated. So memory a partial trim could not give back is used again when the pool grows:
//! a cache shrunk to a random tenth and filled again reuses its old blocks instead of adding
//! new ones beside them. Objects are made in holes one by one, not side by side: only a new
//! block keeps a run's objects together.
//!
//! The table's lock is taken once per run made (one in 32 allocations of a 128-byte object at
//! most, and none when a parked object is reused) and once per object released; never when an
//! object is parked or handed out again.
//!
//! Holes are kept as addresses. Every block's provenance is exposed when it is allocated, so
//! a pointer to a hole is rebuilt from its address (`with_exposed_provenance_mut`) with the
//! rights of the block it lies in.
//!
//! The table's lock is std's even under loom: it is bookkeeping of memory, not part of a
//! protocol the models check, and the pool's drop may hand it to a deferred function that
//! outlives the model's execution.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::{NonNull, with_exposed_provenance_mut};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::slot::Slot;

/// The alignment of every block: two cache lines.
pub(crate) const RUN_ALIGN: usize = 128;

/// The blocks of a pool and their holes.
#[derive(Default)]
pub(crate) struct Runs {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Every block, by start address.
    blocks: BTreeMap<usize, Block>,
    /// The address of every slot whose object was freed while its block stayed (see the
    /// module docs).
    holes: BTreeSet<usize>,
}

/// One block: how many objects it was made with (which gives its layout) and how many of
/// them are not yet freed. Two 16-bit counts (runs hold at most [`MAX_RUN`] objects): with
/// runs of 32, the table and its tree nodes cost under a byte per object (0.8 in udcache's
/// dcache-flood).
struct Block {
    objects: u16,
    alive: u16,
}

/// Where a run's objects go (see [`Runs::place`]).
pub(crate) enum Place {
    /// These holes (addresses), already taken off the hole set and counted alive.
    Holes(Vec<usize>),
    /// A new block of this many.
    Block(usize),
}

impl Place {
    /// How many objects the run makes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Place::Holes(holes) => holes.len(),
            Place::Block(n) => *n,
        }
    }
}

/// The most objects one run may hold.
pub(crate) const MAX_RUN: usize = u16::MAX as usize;

/// The layout of a block of `n` slots of `T`.
fn block_layout<T>(n: usize) -> Layout {
    let layout = Layout::array::<Slot<T>>(n)
        .and_then(|l| l.align_to(RUN_ALIGN))
        .expect("a fresh run's size overflows");
    // Zero-sized objects still get a block of their own, so blocks never share an address.
    Layout::from_size_align(layout.size().max(1), layout.align()).expect("a one-byte block fits")
}

impl Runs {
    /// Makes up to `n` (at least 1) objects with `make`: in holes if there are any (as many as
    /// there are, up to `n`), or else `n` in one new block. Their slots, in address order. If
    /// `make` panics, see [`Runs::make_at`].
    #[cfg(test)]
    pub(crate) fn make<T>(
        &self,
        n: usize,
        make: impl FnMut() -> T,
        pool: usize,
    ) -> Vec<NonNull<Slot<T>>> {
        self.make_at(self.place(n), make, pool)
    }

    /// Where a run of up to `n` (at least 1) objects goes: the holes there are (as many as
    /// there are, up to `n`, taken off the hole set now), or else a new block of `n`. How many
    /// is known before any object is made ([`Place::len`]).
    pub(crate) fn place(&self, n: usize) -> Place {
        assert!(n > 0, "a run holds at least one object");
        let holes = self.lock().fill_holes(n);
        if holes.is_empty() { Place::Block(n) } else { Place::Holes(holes) }
    }

    /// Makes the objects of `place` with `make`: their slots, in address order. If `make`
    /// panics, the objects it made are dropped and the place is given back (holes stay holes,
    /// a new block is deallocated) before the panic goes on.
    pub(crate) fn make_at<T>(
        &self,
        place: Place,
        mut make: impl FnMut() -> T,
        pool: usize,
    ) -> Vec<NonNull<Slot<T>>> {
        let (targets, block) = match place {
            Place::Holes(holes) => {
                let slots = holes.into_iter().map(|addr| {
                    NonNull::new(with_exposed_provenance_mut::<Slot<T>>(addr))
                        .expect("a hole is inside a block")
                });
                (slots.collect::<Vec<_>>(), None)
            }
            Place::Block(n) => {
                let layout = block_layout::<T>(n);
                // SAFETY: the layout's size is non-zero.
                let base = unsafe { alloc(layout) }.cast::<Slot<T>>();
                let Some(base) = NonNull::new(base) else { handle_alloc_error(layout) };
                // Holes of this block are rebuilt from their addresses (see the module docs).
                base.as_ptr().expose_provenance();
                // SAFETY: `i < n` and the block holds `n` slots (`Layout::array`).
                let slots = (0..n).map(|i| unsafe { base.add(i) });
                (slots.collect(), Some((base, n)))
            }
        };
        for (made, &slot) in targets.iter().enumerate() {
            match catch_unwind(AssertUnwindSafe(&mut make)) {
                // SAFETY: a hole is a slot of a live block of this table (exposed when the
                // block was allocated, aligned as every slot of it) whose object was dropped,
                // taken off the hole set for this call alone; a new block's slots are in
                // bounds, aligned (the block is aligned at least to `Slot<T>`, and slots
                // follow each other at its size) and not yet written.
                Ok(value) => unsafe { slot.write(Slot::new(value, pool)) },
                Err(panic) => {
                    // SAFETY: the first `made` targets hold objects made just now that no one
                    // else has seen; the others were never written.
                    unsafe { self.unmake(&targets, made, block) };
                    resume_unwind(panic);
                }
            }
        }
        if let Some((base, n)) = block {
            let objects = u16::try_from(n).expect("a run holds at most MAX_RUN objects");
            let block = Block { objects, alive: objects };
            self.lock().blocks.insert(base.as_ptr().addr(), block);
        }
        targets
    }

    /// Undoes a run whose `make` panicked after making `made` objects: drops them and gives
    /// the run's place back.
    ///
    /// # Safety
    ///
    /// `targets` are the run's slots (holes taken off the hole set, or the slots of `block`,
    /// which is not yet in the table), the first `made` of them hold objects no one else has
    /// seen, and the others were never written.
    unsafe fn unmake<T>(
        &self,
        targets: &[NonNull<Slot<T>>],
        made: usize,
        block: Option<(NonNull<Slot<T>>, usize)>,
    ) {
        for slot in &targets[..made] {
            // SAFETY: made by this run and seen by no one (the caller's contract).
            unsafe { slot.drop_in_place() };
        }
        match block {
            Some((base, n)) => {
                // SAFETY: allocated by `make_at` with this layout and never published; its
                // objects are dropped (above) or were never made.
                unsafe { dealloc(base.as_ptr().cast(), block_layout::<T>(n)) };
            }
            // SAFETY: the holes' objects are dropped (above) or were never made.
            None => unsafe { self.give_back(targets) },
        }
    }

    /// Drops the object in `slot` and releases its block's memory if it was the block's last.
    ///
    /// # Safety
    ///
    /// `slot` was made by [`Runs::make`] of this table, is owned by the caller, is freed once,
    /// and no reader can still see it.
    pub(crate) unsafe fn free<T>(&self, slot: NonNull<Slot<T>>) {
        // SAFETY: the caller owns the live slot and nothing refers to it any more.
        unsafe { slot.drop_in_place() };
        // SAFETY: its object was dropped just now.
        unsafe { self.give_back(&[slot]) };
    }

    /// Counts `slots`, whose objects are gone, out of their blocks: each becomes a hole, and a
    /// block whose last object it held is deallocated.
    ///
    /// # Safety
    ///
    /// Each slot is a counted-alive slot of a block of this table, its object dropped or never
    /// made, and no one refers to it.
    unsafe fn give_back<T>(&self, slots: &[NonNull<Slot<T>>]) {
        let layout_of = |objects: u16| block_layout::<T>(objects as usize);
        let released: Vec<_> = {
            let mut table = self.lock();
            slots
                .iter()
                .filter_map(|slot| Some((slot, table.release(slot.as_ptr().addr(), layout_of)?)))
                .collect()
        };
        for (slot, (start, layout)) in released {
            // The block's start, with the provenance of the slot's pointer (derived from it).
            let base = slot.as_ptr().cast::<u8>().with_addr(start);
            // SAFETY: allocated by `make_at` with this layout; every object in it has been
            // dropped, so nothing refers to it.
            unsafe { dealloc(base, layout) };
        }
    }

    /// The blocks alive now (for tests).
    #[cfg(test)]
    pub(crate) fn blocks(&self) -> usize {
        self.lock().blocks.len()
    }

    /// The holes now (for tests).
    #[cfg(test)]
    pub(crate) fn holes(&self) -> usize {
        self.lock().holes.len()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic never leaves the table half-updated: no update calls out of this module.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Table {
    /// The block holding `addr`: its start and its counts.
    fn block_of(&mut self, addr: usize) -> (usize, &mut Block) {
        // Blocks do not overlap, so the one holding `addr` starts at or below it, and no other
        // block starts between the two.
        let (&start, block) = self.blocks.range_mut(..=addr).next_back().expect("a slot of a run");
        (start, block)
    }

    /// Counts the slot at `addr`, whose object is gone, out of its block: a hole, or, if it was
    /// the block's last, the block leaves the table with its holes and its start and layout
    /// (`layout_of` its object count) are returned for the caller to deallocate.
    fn release(
        &mut self,
        addr: usize,
        layout_of: impl Fn(u16) -> Layout,
    ) -> Option<(usize, Layout)> {
        let (start, block) = self.block_of(addr);
        let layout = layout_of(block.objects);
        debug_assert!(addr < start + layout.size(), "udcache_gp: a slot outside its run");
        block.alive -= 1;
        if block.alive > 0 {
            self.holes.insert(addr);
            return None;
        }
        self.blocks.remove(&start);
        // The block's other slots are all holes now: they go with it (one removal each, so
        // the cost is the block's, not the table's: `split_off` and `append` would move every
        // hole above it).
        let gone: Vec<usize> = self.holes.range(start..start + layout.size()).copied().collect();
        for hole in gone {
            self.holes.remove(&hole);
        }
        Some((start, layout))
    }

    /// Takes up to `n` holes, lowest first, counting each back into its block.
    fn fill_holes(&mut self, n: usize) -> Vec<usize> {
        let taken: Vec<usize> = std::iter::from_fn(|| self.holes.pop_first()).take(n).collect();
        for &addr in &taken {
            self.block_of(addr).1.alive += 1;
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// A 128-byte object that counts its drops.
    struct Line {
        drops: Arc<AtomicUsize>,
        _rest: [u64; 15],
    }

    impl Line {
        fn new(drops: &Arc<AtomicUsize>) -> Self {
            Line { drops: drops.clone(), _rest: [0; 15] }
        }
    }

    impl Drop for Line {
        fn drop(&mut self) {
            self.drops.fetch_add(1, Relaxed);
        }
    }

    #[test]
    fn objects_of_a_run_are_aligned_and_the_last_free_releases_the_block() {
        let runs = Runs::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let a = runs.make(3, || Line::new(&drops), 1);
        let b = runs.make(2, || Line::new(&drops), 1);
        if cfg!(not(debug_assertions)) {
            // Release builds: a slot is its value, so each 128-byte object fills an aligned
            // pair of lines.
            for s in a.iter().chain(&b) {
                assert_eq!(s.as_ptr().addr() % RUN_ALIGN, 0);
            }
        }
        assert_eq!(runs.blocks(), 2);
        // Freed out of order and interleaved across blocks.
        for (s, blocks_after) in [(a[1], 2), (b[0], 2), (a[0], 2), (b[1], 1), (a[2], 0)] {
            // SAFETY: each slot was made by `runs` and is freed once.
            unsafe { runs.free(s) };
            assert_eq!(runs.blocks(), blocks_after);
        }
        assert_eq!(drops.load(Relaxed), 5);
    }

    #[test]
    fn freed_slots_are_holes_the_next_run_fills_and_a_released_block_takes_its_holes() {
        let runs = Runs::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let a = runs.make(4, || Line::new(&drops), 1);
        let free = |s: NonNull<Slot<Line>>| {
            // SAFETY: each slot passed here was made by `runs` and is freed once while live.
            unsafe { runs.free(s) }
        };
        free(a[2]);
        free(a[1]);
        assert_eq!((runs.blocks(), runs.holes()), (1, 2));
        let b = runs.make(3, || Line::new(&drops), 1);
        assert_eq!(b, [a[1], a[2]], "the two holes, lowest first, and no new block");
        assert_eq!((runs.blocks(), runs.holes()), (1, 0));
        let c = runs.make(2, || Line::new(&drops), 1);
        assert_eq!(runs.blocks(), 2, "no hole left: a new block");
        [c[0], a[0], b[0], a[3]].into_iter().for_each(free);
        assert_eq!((runs.blocks(), runs.holes()), (2, 4));
        free(b[1]);
        assert_eq!((runs.blocks(), runs.holes()), (1, 1), "the first block went with its holes");
        free(c[1]);
        assert_eq!((runs.blocks(), runs.holes()), (0, 0));
        assert_eq!(drops.load(Relaxed), 8, "each object made, in a block or a hole, dropped once");
    }

    #[test]
    fn zero_sized_objects_get_blocks_of_their_own() {
        let runs = Runs::default();
        let a = runs.make(4, || (), 1);
        let b = runs.make(1, || (), 1);
        assert_eq!(runs.blocks(), 2);
        for s in a.into_iter().chain(b) {
            // SAFETY: made by `runs`, freed once.
            unsafe { runs.free(s) };
        }
        assert_eq!(runs.blocks(), 0);
    }
}
