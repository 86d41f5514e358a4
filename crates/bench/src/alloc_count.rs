//! A global allocator that counts live heap bytes, so scenarios can report memory per entry
//! exactly (requested bytes; the system allocator's own per-chunk overhead is not included).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Wraps the system allocator, adding and subtracting each allocation's size.
pub struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the
// counter is bookkeeping only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Relaxed: a statistic read after the measured work, by the thread that did it.
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Live heap bytes now.
pub fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Live heap bytes once the frees still deferred by earlier work have run: flushes the epoch
/// until 1,000 flushes in a row bring the count no lower (a flush itself allocates and frees
/// the epoch's bag nodes, so the count never quite stands still). A measurement starts from
/// here, so that what a table dropped before it gives back late (its entries are released a
/// grace period after the drop, and their pool after the last of them) is not subtracted from
/// what it measures.
pub fn settled_live_bytes() -> usize {
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
    live_bytes()
}
