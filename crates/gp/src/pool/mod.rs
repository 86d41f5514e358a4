//! `GpPool<T>`: an object pool that reuses an object only after its grace period.
//!
//! # The rules
//!
//! - **Ownership.** Every object is owned by exactly one of: a [`PoolBox`] (the safe handle), a
//!   raw-pointer holder (after [`PoolBox::into_raw`]; readers may be reading it), or a shard of
//!   the pool (parked). Readers never own objects; they only read them while pinned.
//! - **Free** (`PoolBox::free`, drop, or [`GpPool::free_raw`]): the caller has already
//!   unpublished the object. Under its thread's shard lock the pool takes a cookie
//!   ([`get_state`]: a SeqCst fence and a load) and parks the object in the
//!   batch for that cookie. Every `request_every`th free of a shard also asks for a grace period
//!   to start (after the lock is dropped), so one grace period serves many frees.
//! - **Alloc**: an object of the thread's shard's oldest batch (the one freed last within it)
//!   if that batch's cookie has completed (a load and a compare); else a completed batch stolen from another shard (`try_lock` only);
//!   else a spare of the shard; else a fresh run: `fresh_run` objects made side by side, one
//!   handed out and the others kept as the shard's spares; at `max_objects`, a spare left on
//!   another shard. Only when the cap is reached and nothing is reusable does it wait: on the
//!   oldest parked cookie, counted and timed as a stall.
//! - **Spares** have never been handed out, so no reader can have seen them: they need no
//!   cookie and no re-initialisation. They exist for locality: objects made one at a time,
//!   between the caller's other allocations, end up interleaved with them in memory; made in
//!   a run, a burst of allocations (a directory's dentries added one after another) fills
//!   whole pages with objects of this pool, so readers that walk them touch fewer pages (TLB
//!   entries) and the allocator's neighbours of each object are objects of the same kind.
//! - **Blocks.** Runs are carved from blocks, large allocations of the pool's own (16 KiB for
//!   a pool's first, each next one as large as all before it, up to 2 MiB aligned to 2 MiB
//!   and advised to be backed by a huge page), with no allocator header between objects (see
//!   `run.rs`): a 128-byte object costs 128 bytes and fills an aligned pair of lines, and a
//!   pool's objects share pages, and at 2 MiB TLB entries, with no other allocation.
//!   Releasing objects (`trim`, drop) returns a block's memory when the last of its objects
//!   goes, as a slab does; a block with an object still in use or parked keeps its memory,
//!   and the slots released from it are holes that later runs fill before any slot is
//!   carved. The one block still being carved holds memory not yet used: at most its size.
//! - **Steals** look only at the shards a hint marks (one bit per shard, in words of their
//!   own): a shard's bit is set, under its lock, before objects are parked on it, and cleared,
//!   under its lock, by a steal or an allocation that finds it empty. So a shard with parked
//!   objects always has its bit set, and a steal costs no `try_lock` of a shard that has none:
//!   every other shard's lock word is a line its threads use. An allocation looks at its own
//!   shard's parked objects only when the bit marks it, so one in a pool with nothing parked
//!   (a new cache filling up) takes no lock for that look. A bit read stale (just set) skips
//!   that look once.
//! - **Locks.** One mutex per shard; a thread takes its own shard's lock and, while holding it,
//!   at most `try_lock`s others: no lock order to violate, no deadlock. Shards belong to the
//!   pool, not to threads, so a thread that exits strands nothing: its shard is used by other
//!   threads (shards are assigned round-robin) and stolen from.
//! - **What a reader may observe.** A reader pinned before an object's free sees the object's
//!   old contents until it unpins: the object is not re-initialised, nor its memory freed,
//!   before the cookie stamped at the free completes (see [`crate::cookie`] for the ordering
//!   argument). The pool re-initialises recycled objects with the caller's hook, never drops and
//!   re-creates them, so memory under a late reader always holds a valid `T`.

mod run;
mod shard;
mod slot;

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::cookie::{GpCookie, completed, cond_synchronize, get_state, poll, request};
use crate::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use crate::sync::{Mutex, lock, try_lock};
use run::Runs;
use shard::Shard;
use slot::Slot;

/// The most shards a pool has (see [`PoolConfig::with_shards`]).
pub const MAX_SHARDS: usize = 4096;

/// When a parked object may be handed out again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Only once its grace period has completed; otherwise allocate fresh. The default.
    AfterGracePeriod,
    /// The most recently freed object, waiting for its grace period if it has not completed
    /// (a stall per batch of frees).
    WaitForGracePeriod,
    /// At once, grace period or not: a plain free list. Unsound with lockless readers; exists
    /// as the baseline for benchmarks and as the negative control for tests.
    Immediately,
}

/// How a [`GpPool`] behaves; built with the `with_*` methods from [`PoolConfig::default`].
///
/// ```
/// let config = udcache_gp::PoolConfig::default().with_max_objects(Some(1024)).with_shards(4);
/// assert_eq!(config.max_objects(), Some(1024));
/// ```
#[derive(Clone, Debug)]
pub struct PoolConfig {
    max_objects: Option<usize>,
    request_every: u32,
    shards: usize,
    reuse: Reuse,
    fresh_run: Option<usize>,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_objects: None,
            request_every: 64,
            shards: 0,
            reuse: Reuse::AfterGracePeriod,
            fresh_run: None,
        }
    }
}

impl PoolConfig {
    /// Hard cap on live plus parked objects (at least 1); `None` (the default) for no cap. At
    /// the cap, `alloc` waits for the oldest parked object's grace period: a stall.
    pub fn with_max_objects(mut self, max: Option<usize>) -> Self {
        self.max_objects = max.map(|m| m.max(1));
        self
    }

    /// Frees per shard between requests to start a grace period (at least 1; default 64).
    /// Starting one costs a pin and a flush of crossbeam's bag, so it is shared by this many
    /// frees.
    pub fn with_request_every(mut self, frees: u32) -> Self {
        self.request_every = frees.max(1);
        self
    }

    /// Number of shards, rounded up to a power of two, at most [`MAX_SHARDS`]; 0 (the
    /// default) picks twice the available parallelism.
    pub fn with_shards(mut self, shards: usize) -> Self {
        self.shards = shards.min(MAX_SHARDS);
        self
    }

    /// Objects made per fresh allocation (at least 1, at most 65,535): one is handed out, the
    /// others wait on the allocating thread's shard as spares for its next allocations (see
    /// [`GpPool::alloc`]). At most `fresh_run - 1` spares per shard; [`GpPool::trim`]
    /// releases them. Within `max_objects`, a run is cut to what the cap leaves. By default a
    /// page's worth: as many objects as fit in 4 KiB, at least 1, at most 32 (1 under loom).
    /// Runs are carved side by side from the pool's blocks, whose memory goes back to the
    /// allocator once all of their objects are released (see [`GpPool::trim`]).
    pub fn with_fresh_run(mut self, objects: usize) -> Self {
        self.fresh_run = Some(objects.clamp(1, run::MAX_RUN));
        self
    }

    /// Reuse the newest freed object, blocking until its grace period completes
    /// ([`Reuse::WaitForGracePeriod`]).
    pub fn wait_for_grace_period(mut self) -> Self {
        self.reuse = Reuse::WaitForGracePeriod;
        self
    }

    /// Reuse freed objects at once, without waiting for any grace period.
    ///
    /// # Safety
    ///
    /// No lockless reader may ever dereference an object of this pool after it was freed:
    /// there is no grace period protecting them.
    pub unsafe fn reuse_immediately(mut self) -> Self {
        self.reuse = Reuse::Immediately;
        self
    }

    /// The cap on objects, if any.
    pub fn max_objects(&self) -> Option<usize> {
        self.max_objects
    }

    /// Frees per shard between grace-period requests.
    pub fn request_every(&self) -> u32 {
        self.request_every
    }

    /// The reuse policy.
    pub fn reuse(&self) -> Reuse {
        self.reuse
    }

    /// Objects made per fresh allocation, if set (`None`: a page's worth, see
    /// [`with_fresh_run`](Self::with_fresh_run)).
    pub fn fresh_run(&self) -> Option<usize> {
        self.fresh_run
    }
}

/// Pool counters (a snapshot; each figure is exact, taken shard by shard).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Objects handed out for the first time (made by the `make` hook).
    pub fresh: u64,
    /// Objects handed out again after being parked.
    pub recycled: u64,
    /// Objects parked now.
    pub parked: usize,
    /// Spares now: made in a fresh run, not yet handed out.
    pub spares: usize,
    /// Live, parked and spare objects now.
    pub objects: usize,
    /// The most live, parked and spare objects there ever were.
    pub peak_objects: usize,
    /// Calls of `alloc` that had to wait (for a grace period, or at the cap for a free), each
    /// counted once however long it waited.
    pub stalls: u64,
    /// Total time spent in those waits.
    pub stall_time: Duration,
}

#[repr(align(128))]
struct Padded<T>(T);

type Hook<T> = Box<dyn Fn(&mut T) + Send + Sync>;

/// A pool that hands out a freed object again only after every reader that could have seen it
/// has unpinned — without stalling: it allocates fresh objects while grace periods run, so it
/// sizes itself to free rate × grace-period latency.
///
/// ```
/// use udcache_gp::GpPool;
///
/// // Objects carry a generation that the re-init hook bumps on every reuse.
/// let pool = GpPool::new(|| (0u64, [0u8; 248]), |obj: &mut (u64, [u8; 248])| obj.0 += 1);
/// let a = pool.alloc();
/// assert_eq!(a.0, 0);
/// a.free(); // parked until its grace period completes
/// let b = pool.alloc(); // fresh, or `a` re-initialised if its grace period already passed
/// assert!(b.0 <= 1);
/// assert_eq!(pool.stats().stalls, 0);
/// ```
pub struct GpPool<T: Send + 'static> {
    shards: Box<[Padded<Mutex<Shard<T>>>]>,
    /// The shards that may have parked objects, a bit each (see the rules, Steals).
    parked_hint: Box<[AtomicU64]>,
    make: Box<dyn Fn() -> T + Send + Sync>,
    reinit: Hook<T>,
    config: PoolConfig,
    objects: AtomicUsize,
    peak: AtomicUsize,
    fresh: AtomicU64,
    stalls: AtomicU64,
    stall_ns: AtomicU64,
    id: usize,
    /// The blocks the objects live in (shared with a drop's deferred frees).
    runs: Arc<Runs>,
}

// SAFETY: shards hold parked `T`s behind mutexes and hooks are Send + Sync; sharing the pool
// lets other threads take and park `T`s, which needs `T: Send` (required by the struct).
unsafe impl<T: Send + 'static> Sync for GpPool<T> {}
// SAFETY: as above; the pool owns its parked `T`s.
unsafe impl<T: Send + 'static> Send for GpPool<T> {}

impl<T: Send + 'static> GpPool<T> {
    /// A pool with the default [`PoolConfig`]: `make` builds fresh objects, `reinit` prepares a
    /// recycled one (like a filesystem's inode re-init) before it is handed out again.
    pub fn new(
        make: impl Fn() -> T + Send + Sync + 'static,
        reinit: impl Fn(&mut T) + Send + Sync + 'static,
    ) -> Self {
        Self::with_config(PoolConfig::default(), make, reinit)
    }

    /// A pool with an explicit configuration.
    pub fn with_config(
        config: PoolConfig,
        make: impl Fn() -> T + Send + Sync + 'static,
        reinit: impl Fn(&mut T) + Send + Sync + 'static,
    ) -> Self {
        let n = match config.shards {
            0 => default_shards(),
            n => n.next_power_of_two(),
        };
        GpPool {
            shards: (0..n).map(|_| Padded(Mutex::new(Shard::new()))).collect(),
            parked_hint: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            make: Box::new(make),
            reinit: Box::new(reinit),
            config,
            objects: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            fresh: AtomicU64::new(0),
            stalls: AtomicU64::new(0),
            stall_ns: AtomicU64::new(0),
            id: next_pool_id(),
            runs: Arc::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// An object: one from the oldest batch of parked objects whose grace period has
    /// completed, re-initialised, or else a never-used one — a spare of this thread's shard,
    /// or the first of a fresh run whose others become the shard's spares (see
    /// [`PoolConfig::with_fresh_run`]). Blocks only at `max_objects` with nothing reusable.
    ///
    /// # Panics
    ///
    /// If it must wait for a grace period while this thread is pinned: at the cap, or, with
    /// [`Reuse::WaitForGracePeriod`], when the object it would reuse was freed in a grace
    /// period still running. Nothing is taken then: the pool is as it was. A panic of the
    /// `make` hook goes on to the caller once the run it was making is undone (the objects it
    /// made dropped, its room and its share of `max_objects` given back).
    pub fn alloc(&self) -> PoolBox<'_, T> {
        let home = self.home();
        // One stall, timed from the first wait to the return, however many turns it takes.
        let mut stall = Stall { pool: self, since: None };
        loop {
            if let Some(slot) = self.take_parked(home, false) {
                return self.reused(slot);
            }
            if let Some(slot) = self.fresh(home) {
                return PoolBox { slot, pool: self };
            }
            // At the cap: the wait and immediate policies look at every shard's parked objects
            // too (the default policy's `take_parked` steals ready batches already).
            if let Some(slot) = self.take_parked(home, true) {
                return self.reused(slot);
            }
            stall.since.get_or_insert_with(Instant::now);
            self.wait_at_cap();
        }
    }

    /// A parked object handed out again, re-initialised. If the `reinit` hook panics, the
    /// object leaves the pool (dropped, its room and its share of `max_objects` given back)
    /// before the panic goes on.
    fn reused(&self, slot: NonNull<Slot<T>>) -> PoolBox<'_, T> {
        // SAFETY: the slot was parked and its reuse policy allows handing it out: we own it
        // exclusively now (no reader of the policy's guarantee remains).
        let value = unsafe {
            Slot::check_transition(slot, self.id, false);
            &mut (*slot.as_ptr()).value
        };
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| (self.reinit)(value))) {
            // SAFETY: owned here alone, as above; a panicking hook leaves a valid `T` behind
            // (it had `&mut T`), which the free drops.
            unsafe { self.runs.free(slot) };
            // Relaxed: the budget (see `fresh_run`).
            self.objects.fetch_sub(1, Relaxed);
            resume_unwind(panic);
        }
        PoolBox { slot, pool: self }
    }

    /// Turns a pointer from [`PoolBox::into_raw`] back into its box.
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw` on a box of this pool and is not used as a box elsewhere (it is
    /// converted back at most once). Debug builds panic on a pointer of another pool.
    pub unsafe fn from_raw(&self, ptr: NonNull<T>) -> PoolBox<'_, T> {
        let slot = Slot::from_value(ptr);
        #[cfg(debug_assertions)]
        {
            // SAFETY: the caller guarantees a live slot; this only checks its owner.
            unsafe { Slot::check_transition(slot, self.id, true) };
            // SAFETY: as above; restores the live state.
            unsafe { Slot::check_transition(slot, self.id, false) };
        }
        PoolBox { slot, pool: self }
    }

    /// Frees an object given up with [`PoolBox::into_raw`] (for example one published to
    /// lockless readers). It is parked until its grace period completes.
    ///
    /// # Safety
    ///
    /// `ptr` came from `into_raw` on a box of this pool, is freed once, and the caller has
    /// unpublished it: new readers can no longer find it. Debug builds catch a double free or a
    /// free into the wrong pool with a panic.
    pub unsafe fn free_raw(&self, ptr: NonNull<T>) {
        self.park(Slot::from_value(ptr));
    }

    /// Releases parked objects whose grace period has completed, and the spares; returns how
    /// many. Use it after a burst, when the pool holds more than it needs. Objects are made
    /// in blocks, so memory goes back to the allocator for each block all of whose objects
    /// are released (now or earlier); a block with an object still in use or parked keeps its
    /// memory until that one is released too, and the slots released from it are filled again
    /// by later allocations before any new slot is carved.
    /// For the objects left parked it asks for a grace period to start (one covers them all:
    /// cookies are ordered), so that a later `trim` can release them.
    pub fn trim(&self) -> usize {
        let mut released = 0;
        let mut pending = None;
        for shard in self.shards.iter() {
            let (batches, spares) = {
                let mut sh = lock(&shard.0);
                let done: Vec<_> =
                    std::iter::from_fn(|| sh.take_oldest_batch_if(completed)).collect();
                pending = pending.max(sh.newest_cookie());
                (done, std::mem::take(&mut sh.spares))
            };
            released += free_spares(&self.runs, spares);
            for slot in batches.into_iter().flat_map(shard::Batch::drain) {
                // SAFETY: the batch's grace period completed: no reader can see the slot.
                unsafe { self.runs.free(slot) };
                released += 1;
            }
        }
        self.objects.fetch_sub(released, Relaxed);
        if let Some(c) = pending {
            request(c);
        }
        released
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> PoolStats {
        let (mut parked, mut spares, mut recycled) = (0, 0, 0);
        for shard in self.shards.iter() {
            let sh = lock(&shard.0);
            parked += sh.parked();
            spares += sh.spares.len();
            recycled += sh.recycled;
        }
        PoolStats {
            fresh: self.fresh.load(Relaxed),
            recycled,
            parked,
            spares,
            objects: self.objects.load(Relaxed),
            peak_objects: self.peak.load(Relaxed),
            stalls: self.stalls.load(Relaxed),
            stall_time: Duration::from_nanos(self.stall_ns.load(Relaxed)),
        }
    }

    fn home(&self) -> usize {
        home_hint() & (self.shards.len() - 1)
    }

    /// Notes in the hint whether shard `at`, whose lock the caller holds, has parked objects
    /// (`true` before it parks them). A store only when the bit changes.
    fn note_parked(&self, at: usize, parked: bool) {
        let (word, bit) = (&self.parked_hint[at / 64], 1u64 << (at % 64));
        // Relaxed: a hint (see the rules, Steals); every change of this bit is made under
        // shard `at`'s lock, so a set and a clear of it never cross.
        if (word.load(Relaxed) & bit != 0) != parked {
            if parked {
                word.fetch_or(bit, Relaxed);
            } else {
                word.fetch_and(!bit, Relaxed);
            }
        }
    }

    /// Whether shard `at` may have parked objects, by the hint.
    fn may_have_parked(&self, at: usize) -> bool {
        // Relaxed: a hint; a stale clear bit skips one steal (the allocation makes a fresh
        // object instead), and the bit's set is seen soon after.
        self.parked_hint[at / 64].load(Relaxed) & (1 << (at % 64)) != 0
    }

    /// Takes a parked object the policy allows handing out, waiting if the policy says so:
    /// from shard `home` (`anywhere`: from any shard, for the wait and immediate policies at
    /// the cap; the default policy has looked everywhere already).
    fn take_parked(&self, home: usize, anywhere: bool) -> Option<NonNull<Slot<T>>> {
        let shard = &self.shards[home].0;
        match self.config.reuse {
            Reuse::AfterGracePeriod if anywhere => None,
            Reuse::AfterGracePeriod => {
                // Nothing parked here by the hint (see the rules, Steals): no lock to take.
                if self.may_have_parked(home) {
                    let mut sh = lock(shard);
                    if let Some(slot) = sh.take_oldest_if(completed) {
                        sh.recycled += 1;
                        return Some(slot);
                    }
                    let oldest = sh.oldest_cookie();
                    if oldest.is_none() {
                        self.note_parked(home, false);
                    }
                    drop(sh);
                    // A failed poll drives the grace-period machinery now and then (outside
                    // the lock: a drive flushes crossbeam's bag).
                    if oldest.is_some_and(|c| poll(&c)) {
                        let mut sh = lock(shard);
                        if let Some(slot) = sh.take_oldest_if(completed) {
                            sh.recycled += 1;
                            return Some(slot);
                        }
                    }
                }
                self.steal(home)
            }
            Reuse::WaitForGracePeriod | Reuse::Immediately => {
                let shards = if anywhere { self.shards.len() } else { 1 };
                let (slot, cookie) = self.take_newest(home, shards)?;
                if !completed(&cookie) {
                    let start = Instant::now();
                    cond_synchronize(cookie);
                    self.count_stall(start);
                }
                Some(slot)
            }
        }
    }

    /// The most recently parked object of shard `home`, else of the `shards - 1` shards after
    /// it (one lock at a time), with its cookie. A pinned thread cannot wait for a cookie: if
    /// the object's has not completed, this panics before taking it, so the object stays
    /// parked.
    fn take_newest(&self, home: usize, shards: usize) -> Option<(NonNull<Slot<T>>, GpCookie)> {
        let n = self.shards.len();
        (0..shards).find_map(|i| {
            let mut sh = lock(&self.shards[(home + i) & (n - 1)].0);
            let newest = sh.newest_cookie()?;
            if !completed(&newest) && crossbeam_epoch::is_pinned() {
                drop(sh);
                panic!("udcache_gp: waiting for a grace period while pinned would wait forever");
            }
            let taken = sh.take_newest();
            sh.recycled += 1;
            taken
        })
    }

    /// Moves another shard's oldest batch to `home` if its grace period has completed. If none
    /// has, the oldest of their cookies is polled (outside the locks), which drives the
    /// grace-period machinery now and then: a thread that only allocates, while others only
    /// free, has no cookie of its own to poll, and nothing else may pin to complete theirs.
    fn steal(&self, home: usize) -> Option<NonNull<Slot<T>>> {
        let mut oldest = None;
        if let Some(slot) = self.steal_ready(home, &mut oldest) {
            return Some(slot);
        }
        if oldest.is_some_and(|c| poll(&c)) {
            return self.steal_ready(home, &mut None);
        }
        None
    }

    /// [`steal`](Self::steal) of a batch whose grace period has completed; the oldest cookie
    /// of the batches left goes to `oldest`.
    fn steal_ready(&self, home: usize, oldest: &mut Option<GpCookie>) -> Option<NonNull<Slot<T>>> {
        let n = self.shards.len();
        for i in 1..n {
            let at = (home + i) & (n - 1);
            if !self.may_have_parked(at) {
                continue;
            }
            let Some(batch) = try_lock(&self.shards[at].0).and_then(|mut v| {
                let ready = v.take_oldest_batch_if(completed);
                match v.oldest_cookie() {
                    Some(c) if ready.is_none() => *oldest = Some(oldest.map_or(c, |o| o.min(c))),
                    Some(_) => {}
                    None => self.note_parked(at, false),
                }
                ready
            }) else {
                continue;
            };
            let mut sh = lock(&self.shards[home].0);
            // In cookie order: home's front had not completed when `take_parked` looked, but
            // may have since, and then it is older than the stolen batch.
            sh.insert_batch(batch);
            self.note_parked(home, true);
            // The front's cookie is no newer than the stolen one, which has completed.
            let slot = sh.take_oldest_if(|_| true);
            sh.recycled += 1;
            return slot;
        }
        None
    }

    /// A never-used object: a spare of shard `home`, or the first of a fresh run (the rest
    /// become `home`'s spares); `None` at the cap.
    fn fresh(&self, home: usize) -> Option<NonNull<Slot<T>>> {
        // The guard is a temporary of this statement: the shard is unlocked before a run.
        let spare = lock(&self.shards[home].0).spares.pop();
        let slot = match spare {
            Some(spare) => spare,
            // At the cap, spares left on other shards are the budget that remains.
            None => self.fresh_run(home).or_else(|| self.spare_elsewhere())?,
        };
        // Relaxed: a statistic.
        self.fresh.fetch_add(1, Relaxed);
        Some(slot)
    }

    /// A spare of any shard (one lock at a time).
    #[cold]
    fn spare_elsewhere(&self) -> Option<NonNull<Slot<T>>> {
        self.shards.iter().find_map(|shard| lock(&shard.0).spares.pop())
    }

    /// Makes up to `fresh_run` objects (fewer if the cap is near, none at it): in the holes
    /// earlier releases left in blocks still in use, or else side by side in the block being
    /// carved (see `run.rs`);
    /// returns the first and keeps the others as `home`'s spares.
    fn fresh_run(&self, home: usize) -> Option<NonNull<Slot<T>>> {
        let run = self.config.fresh_run.unwrap_or_else(page_run::<T>);
        let mut made = run;
        let before = match self.config.max_objects {
            // Relaxed: the count is a budget, not a publication; the objects themselves go to
            // this thread and its shard only.
            Some(max) => self.objects.fetch_update(Relaxed, Relaxed, |n| {
                made = run.min(max.saturating_sub(n));
                (made > 0).then_some(n + made)
            }),
            None => Ok(self.objects.fetch_add(run, Relaxed)),
        }
        .ok()?;
        let place = self.runs.place::<T>(made);
        let kept = place.len();
        // Fewer holes than asked for: give the rest of the budget back now, before the objects
        // are made (the caller's `make` may take its time, and others count against the cap
        // meanwhile). Relaxed: the budget, as above.
        self.objects.fetch_sub(made - kept, Relaxed);
        self.peak.fetch_max(before + kept, Relaxed);
        let made = catch_unwind(AssertUnwindSafe(|| self.runs.make_at(place, &self.make, self.id)));
        let mut spares = made.unwrap_or_else(|panic| {
            // `make` panicked: the run made nothing that lasts (see `Runs::make_at`), so its
            // budget goes back before the panic goes on. Relaxed: the budget, as above.
            self.objects.fetch_sub(kept, Relaxed);
            resume_unwind(panic)
        });
        // The shard's stack hands spares out from its end: reversed, in address order.
        spares.reverse();
        let first = spares.pop().expect("a run holds at least one object");
        lock(&self.shards[home].0).spares.append(&mut spares);
        Some(first)
    }

    /// At the cap with nothing reusable: wait for the oldest parked cookie, or for a free.
    #[cold]
    fn wait_at_cap(&self) {
        match self.shards.iter().filter_map(|s| lock(&s.0).oldest_cookie()).min() {
            Some(c) => cond_synchronize(c),
            None => std::thread::yield_now(),
        }
    }

    /// Counts one stall of `start`'s wait (Relaxed: statistics).
    fn count_stall(&self, start: Instant) {
        self.stalls.fetch_add(1, Relaxed);
        self.stall_ns.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
    }

    fn park(&self, slot: NonNull<Slot<T>>) {
        // SAFETY: `slot` is live: it comes from a PoolBox of this pool or from `free_raw`,
        // whose caller guarantees it (debug builds check the owner and the double free).
        unsafe { Slot::check_transition(slot, self.id, true) };
        let mut request_now = None;
        {
            let home = self.home();
            let mut sh = lock(&self.shards[home].0);
            self.note_parked(home, true);
            let cookie = match self.config.reuse {
                Reuse::Immediately => GpCookie::COMPLETED,
                _ => {
                    // Taken under the lock, so each shard's cookies never go backwards.
                    let c = get_state();
                    sh.frees_since_request += 1;
                    if sh.frees_since_request >= self.config.request_every {
                        sh.frees_since_request = 0;
                        request_now = Some(c);
                    }
                    c
                }
            };
            sh.park(slot, cookie);
        }
        if let Some(c) = request_now {
            request(c);
        }
    }
}

impl<T: Send + 'static> Drop for GpPool<T> {
    fn drop(&mut self) {
        let mut waiting = Vec::new();
        for shard in self.shards.iter() {
            let (spares, batches) = {
                let mut sh = lock(&shard.0);
                (std::mem::take(&mut sh.spares), sh.drain().collect::<Vec<_>>())
            };
            free_spares(&self.runs, spares);
            for batch in batches {
                if completed(&batch.cookie) {
                    // SAFETY: the grace period completed: no reader can still see these.
                    batch.drain().for_each(|s| unsafe { self.runs.free(s) });
                } else {
                    waiting.push(batch);
                }
            }
        }
        if !waiting.is_empty() {
            // Readers that may see these objects are pinned now; crossbeam runs the closure
            // after all of them have unpinned.
            let runs = Arc::clone(&self.runs);
            let guard = crossbeam_epoch::pin();
            guard.defer(move || {
                for slot in waiting.into_iter().flat_map(shard::Batch::drain) {
                    // SAFETY: every reader pinned when the pool was dropped has unpinned.
                    unsafe { runs.free(slot) };
                }
            });
            // Out of this thread's bag, where it would wait for 63 more deferred functions
            // (or the thread's exit), into the global queue that any thread's collection
            // empties once the grace period has passed.
            guard.flush();
        }
    }
}

impl<T: Send + 'static> fmt::Debug for GpPool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpPool")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

/// An object owned through its pool: dropping it (or [`PoolBox::free`]) parks it until its
/// grace period completes.
pub struct PoolBox<'p, T: Send + 'static> {
    slot: NonNull<Slot<T>>,
    pool: &'p GpPool<T>,
}

// SAFETY: a PoolBox owns its `T` exclusively (like Box<T>) and refers to a Sync pool.
unsafe impl<T: Send + 'static> Send for PoolBox<'_, T> {}
// SAFETY: sharing a PoolBox only gives `&T`.
unsafe impl<T: Send + Sync + 'static> Sync for PoolBox<'_, T> {}

impl<'p, T: Send + 'static> PoolBox<'p, T> {
    /// Frees the object: it is parked, stamped with a grace-period cookie. Same as dropping.
    pub fn free(self) {
        drop(self);
    }

    /// Gives up the box for a raw pointer, for example to publish the object to lockless
    /// readers. Free it later with [`GpPool::free_raw`] (or rebuild the box with
    /// [`GpPool::from_raw`]); otherwise it leaks.
    pub fn into_raw(this: Self) -> NonNull<T> {
        let ptr = this.slot.cast();
        std::mem::forget(this);
        ptr
    }

    /// The pool this object belongs to.
    pub fn pool(this: &Self) -> &'p GpPool<T> {
        this.pool
    }
}

impl<T: Send + 'static> Deref for PoolBox<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the box owns a live slot; `value` is valid for the box's lifetime.
        unsafe { &(*self.slot.as_ptr()).value }
    }
}

impl<T: Send + 'static> DerefMut for PoolBox<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and the box is the only owner, so the borrow is unique.
        unsafe { &mut (*self.slot.as_ptr()).value }
    }
}

impl<T: Send + 'static> Drop for PoolBox<'_, T> {
    fn drop(&mut self) {
        self.pool.park(self.slot);
    }
}

impl<T: Send + fmt::Debug + 'static> fmt::Debug for PoolBox<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// An `alloc` that may wait: counted as one stall when it returns (or unwinds), if it waited.
struct Stall<'p, T: Send + 'static> {
    pool: &'p GpPool<T>,
    since: Option<Instant>,
}

impl<T: Send + 'static> Drop for Stall<'_, T> {
    fn drop(&mut self) {
        if let Some(start) = self.since {
            self.pool.count_stall(start);
        }
    }
}

/// Frees spares taken off their shard; returns how many.
fn free_spares<T>(runs: &Runs, spares: Vec<NonNull<Slot<T>>>) -> usize {
    let n = spares.len();
    for spare in spares {
        // SAFETY: a spare was never handed out, so no reader has seen it; taken off its shard,
        // it is owned here alone.
        unsafe { runs.free(spare) };
    }
    n
}

/// The default fresh run: as many `T`s as fit in a 4 KiB page, at least 1, at most 32; under
/// loom, one object at a time keeps the models small.
fn page_run<T>() -> usize {
    if cfg!(loom) {
        return 1;
    }
    (4096 / std::mem::size_of::<Slot<T>>().max(1)).clamp(1, 32)
}

#[cfg(not(loom))]
fn default_shards() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2 * cpus).next_power_of_two()
}

/// Under loom, one shard keeps the models small.
#[cfg(loom)]
fn default_shards() -> usize {
    1
}

static NEXT_ID: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

fn next_pool_id() -> usize {
    // Relaxed: ids only need to be distinct.
    NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// This thread's shard hint: threads are numbered round-robin on first use. A thread whose
/// thread-locals are being destroyed (a free run by a deferred function while the thread
/// exits) gets a fresh number each time.
fn home_hint() -> usize {
    crate::sync::thread_local! {
        #[allow(clippy::missing_const_for_thread_local)] // loom's thread_local! has no const form
        static HOME: std::cell::Cell<usize> = std::cell::Cell::new(usize::MAX);
    }
    HOME.try_with(|h| {
        if h.get() == usize::MAX {
            h.set(next_pool_id());
        }
        h.get()
    })
    .unwrap_or_else(|_| next_pool_id())
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_stolen_batch_goes_behind_an_older_one_of_its_new_shard() {
        // Shard 0's batch had not completed when `take_parked` looked; by the time `steal`
        // brings shard 1's newer, completed batch, it has: it must stay in front.
        let config = PoolConfig::default().with_shards(2).with_fresh_run(1);
        let pool = GpPool::with_config(config, || 0u64, |_| {});
        let park = |b: PoolBox<'_, u64>, shard: usize, cookie| {
            let slot = Slot::from_value(PoolBox::into_raw(b));
            // SAFETY: a live slot of this pool, given up by its box.
            unsafe { Slot::check_transition(slot, pool.id, true) };
            let mut sh = lock(&pool.shards[shard].0);
            pool.note_parked(shard, true);
            sh.park(slot, cookie);
            slot
        };
        let (x, y) = (pool.alloc(), pool.alloc());
        let older = get_state();
        let a = park(x, 0, older);
        crate::synchronize();
        let newer = get_state();
        assert!(older < newer);
        park(y, 1, newer);
        crate::synchronize();
        let got = pool.steal(0).expect("shard 1's batch has completed");
        assert_eq!(got, a, "the older object first");
        assert_eq!(lock(&pool.shards[0].0).oldest_cookie(), Some(newer));
        // SAFETY: handed out by `steal`: this test owns it, and its box parks it again.
        unsafe { Slot::check_transition(got, pool.id, false) };
        drop(PoolBox { slot: got, pool: &pool });
    }

    #[test]
    fn the_hint_marks_every_shard_with_parked_objects() {
        let config = PoolConfig::default().with_shards(2).with_fresh_run(1);
        let pool = GpPool::with_config(config, || 0u64, |_| {});
        let (home, other) = (pool.home(), pool.home() ^ 1);
        assert!(!pool.may_have_parked(home) && !pool.may_have_parked(other));
        pool.alloc().free();
        assert!(pool.may_have_parked(home), "parked on this thread's shard");
        crate::synchronize();
        // The other shard steals the completed batch: the steal finds this shard empty then,
        // and clears its bit; the thief's is set before the batch lands there.
        let got = pool.steal(other).expect("a completed batch to steal");
        assert!(!pool.may_have_parked(home) && pool.may_have_parked(other));
        // A shard whose bit is clear is not tried: nothing to steal from either.
        assert!(pool.steal(other).is_none());
        // SAFETY: handed out by `steal`: this test owns it, and its box parks it again.
        unsafe { Slot::check_transition(got, pool.id, false) };
        drop(PoolBox { slot: got, pool: &pool });
        assert!(pool.may_have_parked(home));
    }

    #[test]
    fn an_allocation_that_finds_its_shard_empty_clears_its_bit() {
        let config = PoolConfig::default().with_shards(2).with_fresh_run(1);
        let pool = GpPool::with_config(config, || 0u64, |_| {});
        let home = pool.home();
        pool.alloc().free();
        crate::synchronize();
        // Takes the parked object back: the bit stays set until a look finds the shard empty.
        let again = pool.alloc();
        assert_eq!(pool.stats().recycled, 1, "the parked object, reused");
        assert!(pool.may_have_parked(home));
        let fresh = pool.alloc();
        assert!(!pool.may_have_parked(home), "found empty");
        // Parked again: marked again, and the next allocation takes it.
        drop(again);
        assert!(pool.may_have_parked(home));
        crate::synchronize();
        drop(pool.alloc());
        assert_eq!(pool.stats().recycled, 2);
        drop(fresh);
    }

    #[test]
    fn a_run_in_fewer_holes_gives_back_its_budget_before_making_objects() {
        // Cap 8, runs of 4. One hole is left; a run that takes it asks for 4 but makes 1, and
        // while its `make` runs the other 3 must already count as free.
        let blocked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let gate = Arc::new(std::sync::Barrier::new(2));
        let make = {
            let (blocked, gate) = (blocked.clone(), gate.clone());
            move || {
                if blocked.swap(false, Relaxed) {
                    gate.wait();
                    gate.wait();
                }
                0u64
            }
        };
        let config =
            PoolConfig::default().with_shards(1).with_fresh_run(4).with_max_objects(Some(8));
        let pool = GpPool::with_config(config, make, |_| {});
        let mut boxes: Vec<_> = (0..4).map(|_| pool.alloc()).collect();
        boxes.pop().unwrap().free();
        crate::synchronize();
        assert_eq!(pool.trim(), 1, "one hole");
        blocked.store(true, Relaxed);
        let spares = std::thread::scope(|s| {
            let taker = s.spawn(|| pool.alloc());
            gate.wait(); // the taker is in `make`, its run placed in the hole
            let mine = pool.alloc();
            let spares = pool.stats().spares;
            gate.wait();
            drop((mine, taker.join().unwrap()));
            spares
        });
        assert_eq!(spares, 3, "a full run of 4, not one cut short by a budget not given back");
        drop(boxes);
    }

    #[test]
    fn a_run_goes_back_to_the_allocator_with_its_last_object() {
        let config = PoolConfig::default().with_shards(1).with_fresh_run(4);
        let pool = GpPool::with_config(config, || 0u64, |_| {});
        let a = pool.alloc();
        let b = pool.alloc();
        assert_eq!(pool.runs.blocks(), 1, "one run: a, b and two spares");
        assert_eq!(pool.trim(), 2, "the spares go");
        assert_eq!(pool.runs.blocks(), 1, "a and b still live in it");
        a.free();
        crate::synchronize();
        assert_eq!(pool.trim(), 1);
        assert_eq!(pool.runs.blocks(), 1, "b still lives in it");
        b.free();
        crate::synchronize();
        assert_eq!(pool.trim(), 1);
        assert_eq!(pool.runs.blocks(), 0);
    }

    #[test]
    fn the_slots_a_trim_frees_are_filled_again_before_a_new_run() {
        let config = PoolConfig::default().with_shards(1).with_fresh_run(4);
        let pool = GpPool::with_config(config, || 0u64, |_| {});
        let mut boxes: Vec<_> = (0..4).map(|_| pool.alloc()).collect();
        let addr = |b: &PoolBox<'_, u64>| std::ptr::from_ref::<u64>(b).addr();
        let first = addr(&boxes[0]);
        boxes.drain(..2).for_each(PoolBox::free);
        crate::synchronize();
        assert_eq!(pool.trim(), 2);
        assert_eq!((pool.runs.blocks(), pool.runs.holes()), (1, 2));
        let again = pool.alloc();
        assert_eq!(addr(&again), first, "the lowest hole");
        assert_eq!((pool.runs.blocks(), pool.runs.holes()), (1, 0), "the other is a spare now");
        let s = pool.stats();
        assert_eq!((s.objects, s.spares, s.peak_objects), (4, 1, 4));
    }
}
