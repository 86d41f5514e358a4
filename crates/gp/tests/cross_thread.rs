//! One thread allocates, another frees, and nothing else in the process pins: the pool must
//! still complete grace periods and reuse objects (it used to grow by every object freed,
//! waiting for some unrelated thread to pin). A test binary of its own, so that no other test
//! drives crossbeam-epoch meanwhile.
#![cfg(not(loom))]

use std::ptr::NonNull;
use std::sync::mpsc;

use udcache_gp::GpPool;

/// An object's address, sent to the freeing thread.
struct Sent(NonNull<[u64; 16]>);

// SAFETY: the pointer is an object given up with `into_raw`; only the receiver uses it.
unsafe impl Send for Sent {}

#[test]
fn a_pool_fed_by_one_thread_and_drained_by_another_levels_off() {
    const ROUNDS: usize = 40;
    const PER_ROUND: usize = 2_500;
    let pool = GpPool::new(|| [0u64; 16], |_| {});
    let (tx, rx) = mpsc::sync_channel::<Sent>(256);
    let objects = std::thread::scope(|s| {
        s.spawn(|| {
            for Sent(p) in rx {
                // SAFETY: each pointer came from `into_raw` of this pool, freed once, and no
                // reader can find it (there are none).
                unsafe { pool.free_raw(p) };
            }
        });
        let mut objects = Vec::new();
        for _ in 0..ROUNDS {
            for _ in 0..PER_ROUND {
                tx.send(Sent(udcache_gp::PoolBox::into_raw(pool.alloc()))).unwrap();
            }
            objects.push(pool.stats().objects);
        }
        drop(tx);
        objects
    });
    let stats = pool.stats();
    assert!(stats.recycled > 0, "nothing was ever reused: {stats:?}");
    // Levelled off: the second half of the run added (almost) nothing. Growing with every
    // free, it would have doubled.
    let (half, last) = (objects[ROUNDS / 2], objects[ROUNDS - 1]);
    assert!(last <= half + PER_ROUND, "still growing: {objects:?}");
}
