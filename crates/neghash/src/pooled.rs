//! Where entries live: a `udcache-gp` pool, and the counted references that hold them.
//!
//! # Rules
//!
//! - **Pool.** Every entry of a table comes from the table's [`EntryPool`] (a
//!   [`GpPool`] of uninitialised cells) and goes back to it. The pool hands a cell out again
//!   only after a grace period has passed since it was freed, and allocates a fresh one
//!   rather than wait; so an entry recycled for another name is never seen by a reader that
//!   saw the old one, and a flood of short-lived negatives reuses a bounded set of cells
//!   instead of calling the allocator for each (seed 003).
//! - **Counts.** [`EntryRef`] is one count of an entry (its `strong` word), what an `Arc`
//!   would be: the hash chain holds one while the entry is on it, the LRU one while it is on
//!   it, each [`Held`](crate::Held) handle one, writers temporaries. Increments are `Relaxed`
//!   (a count is only copied from a live one); the decrement is `Release` and the last one is
//!   followed by an `Acquire` fence, so every use through any count happens before the free
//!   (the `Arc` argument).
//! - **The last count.** Its holder drops the entry in place — its value and its name — and
//!   parks the cell in the pool. No lockless reader can still see the entry then: readers
//!   reach entries only through hash chains, and a chain gives up its count only a grace
//!   period after the entry left it (`udcache_rculist`'s `Unlinked`), by which time every
//!   reader that found it has unpinned. (So the pool's own grace period before reuse is not
//!   what protects readers here; it costs a cell one more grace period parked.)
//! - **Lifetime of the pool.** The table holds the pool through an `Arc`, and every live
//!   entry holds one more count of that `Arc` (its `home`, made by `Arc::into_raw`, taken at
//!   allocation and given back after the cell is parked), since a chain's count may be given
//!   up by a deferred function after the table is gone. The last entry freed after its table
//!   drops the pool, which frees the cells once their grace periods have passed.
//! - **Memory.** Parked cells stay in the pool for reuse; [`NegHash::shrink`] (the
//!   memory-pressure hook) also gives back those whose grace period has passed.
//! - **Under loom** a freed entry is dropped but its cell and its count of the pool are
//!   leaked: a model's deferred functions (the chains' releases) may run while loom tears down
//!   its statics, where the pool's grace-period cookies can no longer be read. The pool's own
//!   loom model (`udcache-gp`'s `tests/loom_pool.rs`) covers reuse after a grace period.
//! - **Layout.** A cell is exactly an entry (the pool lists parked cells outside them), and
//!   the count and the pool pointer, which only holders touch, sit at the entry's end, behind
//!   what a lookup reads: an entry costs what it cost in an `Arc` (16 bytes beside it).

use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

use udcache_gp::{GpPool, PoolBox, PoolConfig};
use udcache_rculist::NodePtr;

use crate::entry::Entry;
use crate::sync::{Ordering, fence};

/// A pool cell: room for one entry, initialised while the entry is live.
#[repr(transparent)]
pub(crate) struct Cell<V>(MaybeUninit<Entry<V>>);

/// A table's pool of entry cells.
pub(crate) type EntryPool<V> = GpPool<Cell<V>>;

/// The pool an entry goes back to, as the entry stores it (see the module rules): one count
/// of the pool's `Arc<EntryPool<V>>`, from `Arc::into_raw`, for the entry's own `V`, its type
/// erased so that `Entry<V>` needs no bounds.
pub(crate) struct Home(NonNull<()>);

// SAFETY: a shared pointer to a pool, which is `Sync`; every live entry holds a count of the
// pool's `Arc`, so the pool outlives the entries that point at it.
unsafe impl Send for Home {}
// SAFETY: as above.
unsafe impl Sync for Home {}

/// A new pool for a table's entries, shared with them (see the module rules).
pub(crate) fn new_pool<V: Send + Sync + 'static>() -> Arc<EntryPool<V>> {
    let config = PoolConfig::default();
    // A cell is re-initialised by the insert that takes it: the hook has nothing to do.
    Arc::new(GpPool::with_config(config, || Cell(MaybeUninit::uninit()), |_| {}))
}

/// One counted reference to a pooled entry (what `Arc<Entry<V>>` would be).
pub(crate) struct EntryRef<V: Send + Sync + 'static>(NonNull<Entry<V>>);

// SAFETY: an `EntryRef` is a shared reference with a count; `Entry<V>` is `Sync` for `V: Sync`
// (its mutable state is atomic), the count is atomic, and the last holder drops the `V`.
unsafe impl<V: Send + Sync + 'static> Send for EntryRef<V> {}
// SAFETY: as above.
unsafe impl<V: Send + Sync + 'static> Sync for EntryRef<V> {}

impl<V: Send + Sync + 'static> EntryRef<V> {
    /// A new entry with one count in `cell`, a cell of `pool`; `make` builds it, given the
    /// pool to remember. (Cells are taken with [`EntryPool::alloc`] before the bucket lock: the
    /// pool may run deferred functions while it looks for a reusable cell.)
    pub(crate) fn new(
        cell: PoolBox<'_, Cell<V>>,
        pool: &Arc<EntryPool<V>>,
        make: impl FnOnce(Home) -> Entry<V>,
    ) -> Self {
        debug_assert!(std::ptr::eq(PoolBox::pool(&cell), &**pool), "a cell of another pool");
        let mut cell = cell;
        // The entry's count of the pool, given back in `free`.
        let home = NonNull::new(Arc::into_raw(Arc::clone(pool)).cast_mut()).expect("not null");
        cell.0.write(make(Home(home.cast())));
        EntryRef(PoolBox::into_raw(cell).cast())
    }

    /// The last count is gone: drop the entry, park its cell, give back its count of the pool.
    ///
    /// # Safety
    ///
    /// `entry` is live, this was its last count, and no reader can reach it (module rules).
    #[cold]
    unsafe fn free(entry: NonNull<Entry<V>>) {
        // SAFETY: the entry is live until the drop below; its home is a count of the `Arc` of
        // the pool of its own `V` that made it (`new`).
        let pool = unsafe { entry.as_ref().home.0 }.cast::<EntryPool<V>>();
        // SAFETY: the last count: nothing else reads or drops the entry.
        unsafe { std::ptr::drop_in_place(entry.as_ptr()) };
        if cfg!(loom) {
            // The cell and the pool's count are leaked (see the module rules).
            return;
        }
        // SAFETY: the cell came from `PoolBox::into_raw` on this pool (in `new`) and is freed
        // once, here; no reader can reach it (the caller's guarantee).
        unsafe { pool.as_ref().free_raw(entry.cast::<Cell<V>>()) };
        // SAFETY: `pool` is the `Arc::into_raw` of the count `new` took for this entry, given
        // back once, here; the pool may be dropped now if its table is gone.
        unsafe { Arc::decrement_strong_count(pool.as_ptr().cast_const()) };
    }
}

impl<V: Send + Sync + 'static> Deref for EntryRef<V> {
    type Target = Entry<V>;
    fn deref(&self) -> &Entry<V> {
        // SAFETY: this reference holds a count, so the entry is live.
        unsafe { self.0.as_ref() }
    }
}

impl<V: Send + Sync + 'static> Clone for EntryRef<V> {
    fn clone(&self) -> Self {
        // Relaxed: copied from a live count (see the module rules).
        self.strong.fetch_add(1, Ordering::Relaxed);
        EntryRef(self.0)
    }
}

impl<V: Send + Sync + 'static> Drop for EntryRef<V> {
    fn drop(&mut self) {
        // Release: orders this holder's uses before the free; pairs with the fence below in
        // whichever thread drops the last count.
        if self.strong.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // SAFETY: that was the last count, and no reader can reach the entry: see the rules.
        unsafe { Self::free(self.0) };
    }
}

// SAFETY: `into_raw` and `from_raw` pass one count through a raw pointer without touching it;
// an entry stays in its cell while any count exists (the cell is parked only by `free`, after
// the last); `Deref` reads the entry at that address; `clone_raw` adds a count to a live one.
unsafe impl<V: Send + Sync + 'static> NodePtr for EntryRef<V> {
    fn into_raw(this: Self) -> *const Entry<V> {
        ManuallyDrop::new(this).0.as_ptr().cast_const()
    }

    unsafe fn from_raw(ptr: *const Entry<V>) -> Self {
        // SAFETY: the caller passes a pointer from `into_raw`, which was not null.
        EntryRef(unsafe { NonNull::new_unchecked(ptr.cast_mut()) })
    }

    unsafe fn clone_raw(ptr: *const Entry<V>) -> Self {
        // SAFETY: the caller guarantees another count keeps the entry live.
        let entry = unsafe { &*ptr };
        // Relaxed: as in `clone`.
        entry.strong.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above; the count taken is the new reference's.
        unsafe { Self::from_raw(ptr) }
    }
}
