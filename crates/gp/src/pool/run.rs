//! Runs: the blocks fresh objects are made in, and the table that frees them.
//!
//! Objects are made in **blocks**, large allocations carved into slots back to back; a run
//! takes the next free slots of the newest block (or the holes below). Three things follow,
//! like a kernel slab's:
//!
//! - an object whose size is a multiple of 64 starts a cache line, and one of 128 bytes fills
//!   an aligned pair of lines (the pair an adjacent-line prefetcher fetches together), so a
//!   reader that touches an object's first bytes never straddles a line it did not need;
//!   objects made one by one by the global allocator sit wherever its headers leave them
//!   (glibc: 16 bytes in, 144 apart for a 128-byte object);
//! - no allocator header per object: a 128-byte object costs 128 bytes, not 144;
//! - the pool's objects sit together, apart from everything else the program allocates: a
//!   reader that goes from object to object (a path walk, dentry after dentry) needs a TLB
//!   entry per page of *objects*, not per page of the heap they were made among. Each new
//!   block is as large as the pool's blocks so far, from [`SMALL_BLOCK`] up to
//!   [`BIG_BLOCK`]: a small pool costs a few pages, and a large one is made of 2 MiB blocks
//!   aligned to 2 MiB, which the kernel is asked (`madvise(MADV_HUGEPAGE)`, on Linux) to back
//!   with huge pages, one TLB entry each. At most one block is partly carved at a time.
//!
//! # Freeing
//!
//! Objects leave the pool (`trim`, the pool's drop) one at a time, but a block can go back to
//! the allocator only whole. [`Runs`] records every block with how many of its slots are
//! carved and how many hold an object still alive; freeing an object drops it and counts its
//! block down, and the last one deallocates the block. A block whose objects are partly still
//! in use keeps its memory (as a slab page does), and the slot the freed object leaves is a
//! **hole**: the table keeps the holes, and the next run is made in them (lowest address
//! first) before any slot is carved. So memory a partial trim could not give back is used
//! again when the pool grows: a cache shrunk to a random tenth and filled again reuses its old
//! blocks instead of adding new ones beside them. Objects are made in holes one by one, not
//! side by side: only carving keeps a run's objects together.
//!
//! The table's lock is taken once per run made (a run is up to `fresh_run` objects, 32 of a
//! 128-byte object by default, but only as many as there are holes, or slots left in the open
//! block; none when a parked object is reused) and once per object released; never when an
//! object is parked or handed out again.
//!
//! Slots are handed to runs as addresses. Every block's provenance is exposed when it is
//! allocated, so a pointer to a slot is rebuilt from its address
//! (`with_exposed_provenance_mut`) with the rights of the block it lies in.
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

/// The alignment of every block smaller than [`BIG_BLOCK`]: two cache lines.
pub(crate) const RUN_ALIGN: usize = 128;

/// The size of a pool's first block.
pub(crate) const SMALL_BLOCK: usize = 16 << 10;

/// The largest block (unless one run needs more), and the alignment of blocks that large: a
/// huge page on x86-64 and on arm64 with 4 KiB pages.
pub(crate) const BIG_BLOCK: usize = 2 << 20;

/// A block keeps room past its last slot only if that room is at most this fraction of it
/// (1/64); otherwise it is cut to its slots.
const TAIL_SHARE: usize = 64;

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
    /// The block runs are carved from (its start), while it has uncarved slots.
    open: Option<usize>,
    /// The bytes of every block: the size of the next one.
    bytes: usize,
}

/// One block: its size (which gives its layout and its slot count), how many of its slots
/// have been carved, and how many of those hold an object not yet freed (or are handed to a
/// run being made).
struct Block {
    bytes: usize,
    carved: usize,
    alive: usize,
}

/// Where a run's objects go (see [`Runs::place`]): slot addresses, already counted alive in
/// their blocks.
pub(crate) struct Place(Vec<usize>);

impl Place {
    /// How many objects the run makes.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The most objects one run may hold.
pub(crate) const MAX_RUN: usize = u16::MAX as usize;

/// The distance between two slots of `T`: its size, or its alignment for a zero-sized `T`,
/// so that every slot has an address of its own.
fn stride<T>() -> usize {
    size_of::<Slot<T>>().max(align_of::<Slot<T>>())
}

/// The layout of a block of `bytes` bytes of slots of `T`.
fn block_layout<T>(bytes: usize) -> Layout {
    let align = if bytes >= BIG_BLOCK { BIG_BLOCK } else { RUN_ALIGN };
    Layout::from_size_align(bytes, align.max(align_of::<Slot<T>>()))
        .expect("a block's size overflows")
}

/// Asks the kernel to back a block with huge pages (see the module docs). Advice only: any
/// failure leaves the block as it is. Not under Miri, which cannot call `madvise` (and whose
/// memory is no kernel's): the advice changes nothing the program can observe.
fn advise_huge(base: *mut u8, layout: Layout) {
    #[cfg(all(target_os = "linux", not(miri)))]
    if layout.align() >= BIG_BLOCK {
        // SAFETY: `[base, base + size)` is a live allocation of this table, aligned to a
        // huge page (so to a page); MADV_HUGEPAGE changes how the kernel backs it, never its
        // contents, and cannot fail in a way that matters.
        unsafe { libc::madvise(base.cast(), layout.size(), libc::MADV_HUGEPAGE) };
    }
    #[cfg(any(not(target_os = "linux"), miri))]
    let _ = (base, layout);
}

impl Runs {
    /// Makes up to `n` (at least 1) objects with `make`: in holes if there are any (as many as
    /// there are, up to `n`), or else in carved slots (as many as the open block has left, up
    /// to `n`). Their slots, in address order. If `make` panics, see [`Runs::make_at`].
    #[cfg(test)]
    pub(crate) fn make<T>(
        &self,
        n: usize,
        make: impl FnMut() -> T,
        pool: usize,
    ) -> Vec<NonNull<Slot<T>>> {
        self.make_at(self.place::<T>(n), make, pool)
    }

    /// Where a run of up to `n` (at least 1) objects goes: the holes there are (as many as
    /// there are, up to `n`, taken off the hole set now), or else slots carved from the open
    /// block (as many as it has left, up to `n`; a new block is allocated if none is open).
    /// How many is known before any object is made ([`Place::len`]).
    pub(crate) fn place<T>(&self, n: usize) -> Place {
        assert!(n > 0, "a run holds at least one object");
        let mut table = self.lock();
        let holes = table.fill_holes(n);
        if !holes.is_empty() {
            return Place(holes);
        }
        Place(table.carve::<T>(n))
    }

    /// Makes the objects of `place` with `make`: their slots, in address order. If `make`
    /// panics, the objects it made are dropped and the slots are given back (holes, or the
    /// block goes if nothing else is alive in it) before the panic goes on.
    pub(crate) fn make_at<T>(
        &self,
        place: Place,
        mut make: impl FnMut() -> T,
        pool: usize,
    ) -> Vec<NonNull<Slot<T>>> {
        let targets: Vec<NonNull<Slot<T>>> = (place.0)
            .into_iter()
            .map(|addr| {
                NonNull::new(with_exposed_provenance_mut::<Slot<T>>(addr))
                    .expect("a slot is inside a block")
            })
            .collect();
        for (made, &slot) in targets.iter().enumerate() {
            match catch_unwind(AssertUnwindSafe(&mut make)) {
                // SAFETY: a placed slot lies in a live block of this table (exposed when the
                // block was allocated), aligned as every slot of it (the block is aligned at
                // least to `Slot<T>`, and slots follow each other at a multiple of its
                // alignment), holds no object (a hole's was dropped; a carved slot was never
                // written), and was placed for this call alone.
                Ok(value) => unsafe { slot.write(Slot::new(value, pool)) },
                Err(panic) => {
                    for slot in &targets[..made] {
                        // SAFETY: made just now by this run; no one else has seen it.
                        unsafe { slot.drop_in_place() };
                    }
                    // SAFETY: the run's slots, counted alive by `place`, now hold no object.
                    unsafe { self.give_back(&targets) };
                    resume_unwind(panic);
                }
            }
        }
        targets
    }

    /// Drops the object in `slot` and releases its block's memory if it was the block's last.
    ///
    /// # Safety
    ///
    /// `slot` was made by [`Runs::make_at`] of this table, is owned by the caller, is freed once,
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
        let released: Vec<_> = {
            let mut table = self.lock();
            slots
                .iter()
                .filter_map(|slot| Some((slot, table.release(slot.as_ptr().addr())?)))
                .collect()
        };
        for (slot, (start, bytes)) in released {
            // The block's start, with the provenance of the slot's pointer (derived from it).
            let base = slot.as_ptr().cast::<u8>().with_addr(start);
            // SAFETY: allocated by `new_block` with this layout; every object in it has been
            // dropped (or was never made), so nothing refers to it.
            unsafe { dealloc(base, block_layout::<T>(bytes)) };
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

    /// Every block's start and size, in address order (for tests).
    #[cfg(test)]
    fn block_sizes(&self) -> Vec<(usize, usize)> {
        self.lock().blocks.iter().map(|(&start, b)| (start, b.bytes)).collect()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic never leaves the table half-updated: no update calls out of this module.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Table {
    /// Allocates a block for slots of `T`, with room for at least `n` of them, and opens it:
    /// its start.
    fn new_block<T>(&mut self, n: usize) -> usize {
        let stride = stride::<T>();
        let run = n.checked_mul(stride).expect("a fresh run's size overflows");
        let mut bytes = self.bytes.clamp(SMALL_BLOCK, BIG_BLOCK).max(run);
        // The slots end at most a stride before the block does. For large objects that tail
        // is a large share of the block: then the block is cut to its slots (and is aligned
        // to a huge page only if it is still that large).
        let whole_slots = bytes / stride * stride;
        if bytes - whole_slots > bytes / TAIL_SHARE {
            bytes = whole_slots;
        }
        let layout = block_layout::<T>(bytes);
        // SAFETY: the layout's size is non-zero (at least one slot of a non-zero stride).
        let base = unsafe { alloc(layout) };
        if base.is_null() {
            handle_alloc_error(layout);
        }
        // Slots of this block are rebuilt from their addresses (see the module docs).
        let start = base.expose_provenance();
        advise_huge(base, layout);
        self.blocks.insert(start, Block { bytes, carved: 0, alive: 0 });
        self.bytes += bytes;
        self.open = Some(start);
        start
    }

    /// Carves up to `n` slots of `T` from the open block (a new one if none is open), counted
    /// alive: their addresses, in order.
    fn carve<T>(&mut self, n: usize) -> Vec<usize> {
        let start = match self.open {
            Some(start) => start,
            None => self.new_block::<T>(n),
        };
        let stride = stride::<T>();
        let block = self.blocks.get_mut(&start).expect("the open block is in the table");
        let slots = block.bytes / stride;
        let k = n.min(slots - block.carved);
        let first = start + block.carved * stride;
        block.carved += k;
        block.alive += k;
        if block.carved == slots {
            self.open = None;
        }
        (0..k).map(|i| first + i * stride).collect()
    }

    /// The block holding `addr`: its start and its counts.
    fn block_of(&mut self, addr: usize) -> (usize, &mut Block) {
        // Blocks do not overlap, so the one holding `addr` starts at or below it, and no other
        // block starts between the two.
        let (&start, block) = self.blocks.range_mut(..=addr).next_back().expect("a slot of a run");
        (start, block)
    }

    /// Counts the slot at `addr`, whose object is gone, out of its block: a hole, or, if it was
    /// the block's last, the block leaves the table with its holes, and its start and size are
    /// returned for the caller to deallocate.
    fn release(&mut self, addr: usize) -> Option<(usize, usize)> {
        let (start, block) = self.block_of(addr);
        let bytes = block.bytes;
        debug_assert!(addr < start + bytes, "udcache_gp: a slot outside its block");
        block.alive -= 1;
        if block.alive > 0 {
            self.holes.insert(addr);
            return None;
        }
        self.blocks.remove(&start);
        self.bytes -= bytes;
        if self.open == Some(start) {
            self.open = None;
        }
        // The block's other carved slots are all holes now: they go with it (one removal
        // each, so the cost is the block's, not the table's: `split_off` and `append` would
        // move every hole above it).
        let gone: Vec<usize> = self.holes.range(start..start + bytes).copied().collect();
        for hole in gone {
            self.holes.remove(&hole);
        }
        Some((start, bytes))
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

    /// Frees a slot made by a test's `runs`.
    fn free<T>(runs: &Runs, slot: NonNull<Slot<T>>) {
        // SAFETY: every slot a test passes here was made by `runs` and is freed once.
        unsafe { runs.free(slot) }
    }

    #[test]
    fn runs_are_carved_side_by_side_aligned_and_the_last_free_releases_the_block() {
        let runs = Runs::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let a = runs.make(3, || Line::new(&drops), 1);
        let b = runs.make(2, || Line::new(&drops), 1);
        let addrs: Vec<usize> = a.iter().chain(&b).map(|s| s.as_ptr().addr()).collect();
        let stride = stride::<Line>();
        assert!(addrs.windows(2).all(|w| w[1] == w[0] + stride), "one after another: {addrs:?}");
        if cfg!(not(debug_assertions)) {
            // Release builds: a slot is its value, so each 128-byte object fills an aligned
            // pair of lines.
            assert!(addrs.iter().all(|a| a % RUN_ALIGN == 0));
        }
        assert_eq!(runs.blocks(), 1);
        // Freed out of order and interleaved across the runs.
        for (s, blocks_after) in [(a[1], 1), (b[0], 1), (a[0], 1), (b[1], 1), (a[2], 0)] {
            free(&runs, s);
            assert_eq!(runs.blocks(), blocks_after);
        }
        assert_eq!(drops.load(Relaxed), 5);
    }

    #[test]
    fn freed_slots_are_holes_the_next_run_fills_and_a_released_block_takes_its_holes() {
        let runs = Runs::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let a = runs.make(4, || Line::new(&drops), 1);
        free(&runs, a[2]);
        free(&runs, a[1]);
        assert_eq!((runs.blocks(), runs.holes()), (1, 2));
        let b = runs.make(3, || Line::new(&drops), 1);
        assert_eq!(b, [a[1], a[2]], "the two holes, lowest first, and nothing carved");
        assert_eq!((runs.blocks(), runs.holes()), (1, 0));
        // The rest of the first block, then a second.
        let rest = runs.make(SMALL_BLOCK / stride::<Line>() - 4, || Line::new(&drops), 1);
        assert_eq!(runs.blocks(), 1, "carved from the open block");
        let c = runs.make(2, || Line::new(&drops), 1);
        assert_eq!(runs.blocks(), 2, "no hole and no slot left: a new block");
        [c[0], a[0], b[0], a[3]].into_iter().for_each(|s| free(&runs, s));
        rest.iter().for_each(|&s| free(&runs, s));
        assert_eq!((runs.blocks(), runs.holes()), (2, 4 + rest.len()));
        free(&runs, b[1]);
        assert_eq!((runs.blocks(), runs.holes()), (1, 1), "the first block went with its holes");
        free(&runs, c[1]);
        assert_eq!((runs.blocks(), runs.holes()), (0, 0));
        assert_eq!(drops.load(Relaxed), 8 + rest.len(), "each object made dropped once");
    }

    #[test]
    fn blocks_grow_with_the_pool_up_to_big_aligned_ones() {
        let runs = Runs::default();
        let drops = Arc::new(AtomicUsize::new(0));
        let mut made = Vec::new();
        while runs.block_sizes().iter().filter(|&&(_, bytes)| bytes >= BIG_BLOCK).count() < 2 {
            made.extend(runs.make(32, || Line::new(&drops), 1));
        }
        let sizes = runs.block_sizes();
        // Each block as large as all before it (from 16 KiB), up to 2 MiB.
        let mut expected = vec![SMALL_BLOCK];
        while expected.len() < sizes.len() {
            let so_far: usize = expected.iter().sum();
            expected.push(so_far.clamp(SMALL_BLOCK, BIG_BLOCK));
        }
        let mut got: Vec<usize> = sizes.iter().map(|&(_, bytes)| bytes).collect();
        got.sort_unstable();
        assert_eq!(got, expected, "(sorted: blocks are listed by address)");
        for &(start, bytes) in &sizes {
            let align = if bytes >= BIG_BLOCK { BIG_BLOCK } else { RUN_ALIGN };
            assert_eq!(start % align, 0, "a block of {bytes} bytes at {start:#x}");
        }
        made.into_iter().for_each(|s| free(&runs, s));
        assert_eq!(runs.blocks(), 0);
    }

    /// On Linux with transparent huge pages, a big block's memory is marked for them (`hg` in
    /// its mapping's `VmFlags`): the kernel may then back it with huge pages.
    #[cfg(target_os = "linux")]
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no madvise and no /proc/self/smaps of its own memory")]
    fn big_blocks_are_advised_to_use_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            eprintln!("no transparent huge pages in this kernel: nothing to check");
            return;
        }
        let runs = Runs::default();
        let mut made = Vec::new();
        while !runs.block_sizes().iter().any(|&(_, bytes)| bytes >= BIG_BLOCK) {
            made.extend(runs.make(32, || [0u64; 16], 1));
        }
        let (start, _) = *runs.block_sizes().iter().find(|&&(_, b)| b >= BIG_BLOCK).unwrap();
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let hex = |h: &str| usize::from_str_radix(h, 16).ok();
        let mut flags_of_block = None;
        let mut inside = false;
        for line in smaps.lines() {
            // A mapping's first line starts with its range, `lo-hi`; its fields follow.
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((Some(lo), Some(hi))) = first.split_once('-').map(|(l, h)| (hex(l), hex(h)))
            {
                inside = (lo..hi).contains(&start);
            } else if inside && line.starts_with("VmFlags:") {
                flags_of_block = Some(line.to_string());
            }
        }
        let flags = flags_of_block.expect("the block's mapping is in smaps");
        assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
        made.into_iter().for_each(|s| free(&runs, s));
    }

    #[test]
    fn blocks_of_large_objects_are_cut_to_their_slots() {
        type Large = [u8; 100 << 10];
        let runs = Runs::default();
        let mut made = Vec::new();
        // One at a time: past 2 MiB of blocks, each new one would be 2 MiB.
        while runs.block_sizes().iter().map(|&(_, bytes)| bytes).sum::<usize>() < 4 * BIG_BLOCK {
            made.extend(runs.make(1, || [0u8; 100 << 10], 1));
        }
        let stride = stride::<Large>();
        for (_, bytes) in runs.block_sizes() {
            // A 2 MiB block would end 48 KiB past its 20 slots of 100 KiB.
            assert!(bytes % stride <= bytes / TAIL_SHARE, "{bytes} bytes, slots of {stride}");
        }
        made.into_iter().for_each(|s| free(&runs, s));
        assert_eq!(runs.blocks(), 0);
    }

    #[test]
    fn zero_sized_objects_get_addresses_of_their_own() {
        let runs = Runs::default();
        let a = runs.make(4, || (), 1);
        let b = runs.make(1, || (), 1);
        let addrs: BTreeSet<usize> = a.iter().chain(&b).map(|s| s.as_ptr().addr()).collect();
        assert_eq!(addrs.len(), 5);
        assert_eq!(runs.blocks(), 1);
        a.into_iter().chain(b).for_each(|s| free(&runs, s));
        assert_eq!(runs.blocks(), 0);
    }
}
