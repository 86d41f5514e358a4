//! A global allocator that counts live heap bytes, so scenarios can report memory per entry
//! exactly (requested bytes; the system allocator's own per-chunk overhead is not included).
//!
//! The count is striped: each thread adds to its own stripe, alone on its cache lines, and
//! [`live_bytes`] sums them. One shared counter would be a line every allocating thread
//! writes: the scaling scenarios would measure the counter's contention, not the code under
//! test.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// Stripes: more than the threads a scaling scenario runs at once on most machines (two
/// threads sharing a stripe only share its line, the count stays exact).
const STRIPES: usize = 64;

/// One stripe of the count, alone on its cache lines (128 bytes: adjacent-line prefetch).
#[repr(align(128))]
struct Stripe(AtomicIsize);

/// Bytes allocated minus bytes freed, per stripe (a stripe may go negative: a thread frees
/// what another allocated); their sum is the live count.
static LIVE: [Stripe; STRIPES] = [const { Stripe(AtomicIsize::new(0)) }; STRIPES];

/// The stripe the next thread to allocate takes.
static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe (`usize::MAX` until its first allocation). Const-initialised and
    /// without a destructor, so reading it never allocates and works during thread exit.
    static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The calling thread's stripe.
fn stripe() -> &'static AtomicIsize {
    let at = MINE.with(|m| {
        if m.get() == usize::MAX {
            // Relaxed: a stripe index orders nothing.
            m.set(NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES);
        }
        m.get()
    });
    &LIVE[at].0
}

/// Adds `delta` bytes to the calling thread's stripe.
fn count(delta: isize) {
    // Relaxed: a statistic read after the measured work (see `live_bytes`).
    stripe().fetch_add(delta, Ordering::Relaxed);
}

/// Wraps the system allocator, adding and subtracting each allocation's size.
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counter is bookkeeping only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Live heap bytes now: the stripes' sum. Exact for the work of threads that have finished
/// (or that the caller has synchronised with), as the scenarios read it after their work.
pub fn live_bytes() -> usize {
    // Relaxed: see `count`; the scenarios' joins order the threads' counts before this read.
    let sum: isize = LIVE.iter().map(|s| s.0.load(Ordering::Relaxed)).sum();
    sum.max(0) as usize
}

/// Runs the frees still deferred by earlier work: flushes the epoch until 1,000 flushes in a
/// row bring the live count no lower (a flush itself allocates and frees the epoch's bag
/// nodes, so the count never quite stands still). What a table dropped before gives back
/// late (its entries are released a grace period after the drop, and their pool after the
/// last of them) is then not paid for inside the next measurement: by its threads' pins,
/// which run deferred frees, or in what it subtracts from the live count.
pub fn settle_deferred_frees() {
    let mut low = live_bytes();
    let mut quiet = 0;
    while quiet < 1_000 {
        udcache_neghash::epoch::pin().flush();
        let now = live_bytes();
        if now < low {
            low = now;
            quiet = 0;
        } else {
            quiet += 1;
        }
    }
}

/// Live heap bytes once the frees still deferred by earlier work have run (see
/// [`settle_deferred_frees`]): a memory measurement starts from here.
pub fn settled_live_bytes() -> usize {
    settle_deferred_frees();
    live_bytes()
}
