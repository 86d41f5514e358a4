//! Where entries live: a `udcache-gp` pool, and the counted references that hold them.
//!
//! # Rules
//!
//! - **Pool.** Every entry of a table comes from the table's [`EntryPool`] (a
//!   [`GpPool`] of uninitialised cells) and goes back to it. The pool hands a cell out again
//!   only after a grace period has passed since it was freed, and allocates a fresh one
//!   rather than wait; so an entry recycled for another name is never seen by a reader that
//!   saw the old one, and a flood of short-lived negatives reuses a bounded set of cells
//!   instead of calling the allocator for each.
//! - **Counts.** [`EntryRef`] is one count of an entry (its 32-bit `strong`), what an `Arc`
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
//!   entry holds one more count of that `Arc` (taken at allocation, given back after the cell
//!   is parked), since a chain's count may be given up by a deferred function after the table
//!   is gone. The entry finds the pool by its `home`, the 32-bit number the pool was
//!   registered under at the address of its `Arc` (see `home.rs`); the pool takes the number
//!   back when it drops. The last entry freed after its table drops the pool, which frees the
//!   cells once their grace periods have passed.
//! - **Memory.** Parked cells stay in the pool for reuse;
//!   [`NegHash::shrink`](crate::NegHash::shrink) (the memory-pressure hook) also gives back
//!   those whose grace period has passed.
//! - **Under loom** a freed entry is dropped but its cell and its count of the pool are
//!   leaked: a model's deferred functions (the chains' releases) may run while loom tears down
//!   its statics, where the pool's grace-period cookies can no longer be read. The pool's own
//!   loom model (`udcache-gp`'s `tests/loom_pool.rs`) covers reuse after a grace period.
//! - **Layout.** A cell is exactly an entry (the pool lists parked cells outside them), and
//!   the count and the pool's number, which only holders touch, sit at the entry's end,
//!   behind what a lookup reads, in one word: 32 bits each. An entry costs 8 bytes more than
//!   its key, links and value (an `Arc` would cost 16); a reference taken while the count is
//!   past `i32::MAX` aborts, as an `Arc`'s does on a 32-bit target.

use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;

use udcache_gp::{GpPool, PoolBox, PoolConfig};
use udcache_rculist::NodePtr;

use crate::entry::Entry;
use crate::home::{self, Home, Registered};
use crate::sync::{AtomicU32, Ordering, fence};

/// The most references an entry may have before a new one aborts (see [`count_one_more`]).
const MAX_STRONG: u32 = i32::MAX as u32;

/// A pool cell: room for one entry, initialised while the entry is live.
#[repr(transparent)]
pub(crate) struct Cell<V>(MaybeUninit<Entry<V>>);

/// A table's pool of entry cells, and the number its entries name it by (see `home.rs`).
pub(crate) struct EntryPool<V: Send + Sync + 'static> {
    cells: GpPool<Cell<V>>,
    /// Taken back when the pool drops: after its last entry was freed (module rules).
    registered: Registered,
}

impl<V: Send + Sync + 'static> Deref for EntryPool<V> {
    type Target = GpPool<Cell<V>>;
    fn deref(&self) -> &GpPool<Cell<V>> {
        &self.cells
    }
}

/// A new pool for a table's entries, shared with them (see the module rules).
pub(crate) fn new_pool<V: Send + Sync + 'static>() -> Arc<EntryPool<V>> {
    let config = PoolConfig::default();
    let pool = Arc::new(EntryPool {
        // A cell is re-initialised by the insert that takes it: the hook has nothing to do.
        cells: GpPool::with_config(config, || Cell(MaybeUninit::uninit()), |_| {}),
        registered: home::register(),
    });
    // Before any entry exists: what `free` turns the number back into.
    pool.registered.point_at(Arc::as_ptr(&pool).cast());
    pool
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
    /// pool to remember. (Cells are taken with [`GpPool::alloc`] before the bucket lock: the
    /// pool may run deferred functions while it looks for a reusable cell.)
    pub(crate) fn new(
        cell: PoolBox<'_, Cell<V>>,
        pool: &Arc<EntryPool<V>>,
        make: impl FnOnce(Home) -> Entry<V>,
    ) -> Self {
        debug_assert!(std::ptr::eq(PoolBox::pool(&cell), &pool.cells), "a cell of another pool");
        let mut cell = cell;
        // The entry's count of the pool, given back in `free` (through its number).
        std::mem::forget(Arc::clone(pool));
        cell.0.write(make(pool.registered.home()));
        EntryRef(PoolBox::into_raw(cell).cast())
    }

    /// The last count is gone: drop the entry, park its cell, give back its count of the pool.
    ///
    /// # Safety
    ///
    /// `entry` is live, this was its last count, and no reader can reach it (module rules).
    #[cold]
    unsafe fn free(entry: NonNull<Entry<V>>) {
        // SAFETY: the entry is live until the drop below. Its home is the number of the pool
        // of its own `V` that made it (`new`), registered at the address of that pool's `Arc`
        // and holding a count of it for this entry, so the pool is alive and still registered.
        let pool = unsafe { entry.as_ref().home }.pool().cast::<EntryPool<V>>();
        // SAFETY: the last count: nothing else reads or drops the entry.
        unsafe { std::ptr::drop_in_place(entry.as_ptr()) };
        if cfg!(loom) {
            // The cell and the pool's count are leaked (see the module rules).
            return;
        }
        // SAFETY: `pool` is alive (the entry's count of it is still held). The cell came from
        // `PoolBox::into_raw` on this pool (in `new`) and is freed once, here; no reader can
        // reach it (the caller's guarantee).
        unsafe { (*pool).free_raw(entry.cast::<Cell<V>>()) };
        // SAFETY: `pool` is the address of the `Arc` whose count `new` took for this entry,
        // given back once, here; the pool may be dropped now if its table is gone.
        unsafe { Arc::decrement_strong_count(pool) };
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
        count_one_more(&self.strong);
        EntryRef(self.0)
    }
}

/// Counts one more reference (see the module rules, Counts).
fn count_one_more(strong: &AtomicU32) {
    // Relaxed: copied from a live count (see the module rules).
    if strong.fetch_add(1, Ordering::Relaxed) > MAX_STRONG {
        // Leaked references (a `mem::forget` loop) would otherwise wrap the count to a false
        // last one; abort, as `Arc` does, long before it can (to wrap past the check, 2^31
        // threads would each have to add one between this add and this abort).
        std::process::abort();
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
        count_one_more(&entry.strong);
        // SAFETY: as above; the count taken is the new reference's.
        unsafe { Self::from_raw(ptr) }
    }
}
