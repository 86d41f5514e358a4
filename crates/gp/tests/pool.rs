//! Single-threaded behaviour of the pool: recycling order, stats, the cap, misuse detection.
#![cfg(not(loom))]

use std::ptr::NonNull;
use udcache_gp::{GpPool, PoolBox, PoolConfig, pin, synchronize};

fn pool(config: PoolConfig) -> GpPool<(u64, u64)> {
    // Objects are (id, generation); reinit bumps the generation.
    GpPool::with_config(config, || (0, 0), |o| o.1 += 1)
}

#[test]
fn recycles_only_after_the_grace_period_oldest_first() {
    let p = pool(PoolConfig::default());
    let mut a = p.alloc();
    a.0 = 1;
    let mut b = p.alloc();
    b.0 = 2;
    let guard = pin();
    a.free();
    b.free();
    // Pinned: neither may come back.
    for _ in 0..100 {
        let c = p.alloc();
        assert_eq!(c.0, 0, "reused while a reader was pinned");
        std::mem::forget(c);
    }
    drop(guard);
    synchronize();
    // a and b share one cookie (one batch); within a batch the newest comes first (cache-hot).
    let first = p.alloc();
    let second = p.alloc();
    let mut ids = [first.0, second.0];
    ids.sort();
    assert_eq!(ids, [1, 2], "the parked objects come back before any fresh one");
    assert_eq!((first.1, second.1), (1, 1), "re-initialised once each");
    let s = p.stats();
    assert_eq!(s.recycled, 2);
    assert_eq!(s.fresh, 102);
    assert_eq!(s.stalls, 0);
}

#[test]
fn stats_count_objects_and_peak() {
    let p = pool(PoolConfig::default().with_fresh_run(1));
    let boxes: Vec<_> = (0..10).map(|_| p.alloc()).collect();
    drop(boxes);
    let s = p.stats();
    assert_eq!((s.objects, s.peak_objects, s.parked, s.fresh), (10, 10, 10, 10));
    synchronize();
    assert_eq!(p.trim(), 10);
    let s = p.stats();
    assert_eq!((s.objects, s.peak_objects, s.parked), (0, 10, 0));
}

#[test]
fn fresh_runs_leave_spares_that_trim_releases() {
    let p = pool(PoolConfig::default().with_fresh_run(8).with_shards(1));
    let mut live = vec![p.alloc()];
    let s = p.stats();
    assert_eq!((s.fresh, s.spares, s.objects, s.peak_objects), (1, 7, 8, 8));
    live.extend((0..7).map(|_| p.alloc()));
    let s = p.stats();
    assert_eq!((s.fresh, s.spares, s.objects), (8, 0, 8), "the spares were handed out first");
    assert!(live.iter().all(|o| o.1 == 0), "a spare is not re-initialised");
    live.push(p.alloc());
    let s = p.stats();
    assert_eq!((s.fresh, s.spares, s.objects), (9, 7, 16), "a second run");
    assert_eq!(p.trim(), 7, "the spares go back; the live objects stay");
    assert_eq!((p.stats().spares, p.stats().objects), (0, 9));
    drop(live);
    synchronize();
    assert_eq!(p.trim(), 9);
    assert_eq!(p.stats().objects, 0);
}

#[test]
fn the_default_run_is_a_page_of_objects() {
    let small = pool(PoolConfig::default().with_shards(1));
    drop(small.alloc());
    assert_eq!(small.stats().objects, 32, "16-byte objects: the run's cap of 32");
    let big = GpPool::with_config(PoolConfig::default().with_shards(1), || [0u8; 1000], |_| {});
    drop(big.alloc());
    assert_eq!(big.stats().objects, 4, "1000-byte objects: four fit in 4 KiB");
    let huge = GpPool::with_config(PoolConfig::default(), || [0u8; 8192], |_| {});
    drop(huge.alloc());
    assert_eq!(huge.stats().objects, 1, "larger than a page: one at a time");
}

#[test]
fn a_configured_run_is_clamped_to_what_a_block_records() {
    assert_eq!(PoolConfig::default().with_fresh_run(0).fresh_run(), Some(1));
    assert_eq!(PoolConfig::default().with_fresh_run(1 << 20).fresh_run(), Some(65_535));
}

#[test]
fn a_fresh_run_stops_at_the_cap() {
    let p = pool(PoolConfig::default().with_fresh_run(8).with_max_objects(Some(5)));
    let live: Vec<_> = (0..5).map(|_| p.alloc()).collect();
    let s = p.stats();
    assert_eq!((s.objects, s.peak_objects, s.spares, s.fresh), (5, 5, 0, 5));
    drop(live);
}

#[test]
fn at_the_cap_spares_of_another_thread_are_handed_out() {
    let p = std::sync::Arc::new(pool(
        PoolConfig::default().with_fresh_run(4).with_max_objects(Some(4)).with_shards(8),
    ));
    // One object held, three spares left on that thread's shard: the whole budget.
    let first = p.clone();
    let held =
        std::thread::spawn(move || PoolBox::into_raw(first.alloc()).as_ptr().expose_provenance())
            .join()
            .unwrap();
    // Another thread (threads take shards round-robin) wants three more. Detached, so that
    // a failure is reported rather than waited for.
    let (tx, rx) = std::sync::mpsc::channel();
    let second = p.clone();
    std::thread::spawn(move || {
        let rest: Vec<_> = (0..3).map(|_| second.alloc()).collect();
        tx.send(rest.len()).unwrap();
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(10));
    assert_eq!(got, Ok(3), "waited at the cap while spares sat on another shard");
    let s = p.stats();
    assert_eq!((s.peak_objects, s.spares, s.stalls), (4, 0, 0));
    let held = NonNull::new(std::ptr::with_exposed_provenance_mut(held)).unwrap();
    // SAFETY: from into_raw of this pool (an address only to cross threads), never published.
    unsafe { p.free_raw(held) };
}

#[test]
fn trim_starts_the_grace_period_it_waits_for() {
    // Fewer frees than `request_every`: nothing else asks for a grace period to start.
    let p = pool(PoolConfig::default().with_request_every(1_000).with_fresh_run(1));
    drop((0..5).map(|_| p.alloc()).collect::<Vec<_>>());
    let mut released = p.trim();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while released < 5 {
        assert!(std::time::Instant::now() < deadline, "trim released {released} of 5");
        udcache_gp::pin().flush();
        released += p.trim();
    }
    assert_eq!(p.stats().parked, 0);
}

#[test]
fn cap_reached_stalls_on_the_oldest_cookie_instead_of_growing() {
    let p = pool(PoolConfig::default().with_max_objects(Some(4)));
    for _ in 0..50 {
        let v: Vec<_> = (0..4).map(|_| p.alloc()).collect();
        drop(v);
    }
    let s = p.stats();
    assert_eq!(s.peak_objects, 4);
    assert!(s.stalls > 0 && s.recycled > 0, "{s:?}");
}

#[test]
fn wait_policy_reuses_newest_and_counts_stalls() {
    let p = pool(PoolConfig::default().wait_for_grace_period());
    let mut a = p.alloc();
    a.0 = 7;
    a.free();
    let b = p.alloc();
    assert_eq!(b.0, 7, "003's policy reuses the freed object, waiting if needed");
    assert!(p.stats().stalls <= 1);
}

#[test]
fn raw_round_trip() {
    let p = pool(PoolConfig::default());
    let mut a = p.alloc();
    a.0 = 5;
    let raw = PoolBox::into_raw(a);
    // SAFETY: from into_raw of this pool, converted back once.
    let back = unsafe { p.from_raw(raw) };
    assert_eq!(back.0, 5);
    let raw = PoolBox::into_raw(back);
    // SAFETY: freed once, never published.
    unsafe { p.free_raw(raw) };
    assert_eq!(p.stats().parked, 1);
}

// The misuse checks exist only with debug assertions; scripts/test.sh (the test command, run by
// CI) runs this file once more in the debug profile for these two.
#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "freed twice")]
fn double_free_raw_panics_in_debug() {
    let p = pool(PoolConfig::default());
    let raw: NonNull<(u64, u64)> = PoolBox::into_raw(p.alloc());
    // SAFETY: deliberately wrong: the second free must be caught.
    unsafe {
        p.free_raw(raw);
        p.free_raw(raw);
    }
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "did not make it")]
fn foreign_free_raw_panics_in_debug() {
    let p = pool(PoolConfig::default());
    let q = pool(PoolConfig::default());
    let raw = PoolBox::into_raw(p.alloc());
    // SAFETY: deliberately wrong: freeing into another pool must be caught.
    unsafe { q.free_raw(raw) };
}

#[test]
fn objects_of_an_exited_thread_are_reused() {
    let p = pool(PoolConfig::default());
    std::thread::scope(|s| {
        s.spawn(|| {
            let v: Vec<_> = (0..32).map(|_| p.alloc()).collect();
            drop(v);
        });
    });
    synchronize();
    let v: Vec<_> = (0..32).map(|_| p.alloc()).collect();
    assert_eq!(p.stats().fresh, 32, "the exited thread's parked objects were stranded");
    drop(v);
}
