//! Corners of the pool a review found broken: `alloc` at the cap when the only parked object
//! sits on another shard (the wait and immediate policies), objects still parked when the pool
//! is dropped, a pinned `alloc` under the wait policy, and a `make` hook that panics in the
//! middle of a run. Real threads where it takes them.
#![cfg(not(loom))]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use udcache_gp::{GpPool, PoolConfig, pin, synchronize};

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// One object (a cap of 1) on two shards, freed by one thread; fresh threads (each takes the
/// next shard, round-robin) allocate one after another. Each must get the object: it is
/// parked and reusable once its grace period passes.
fn freed_on_one_shard_wanted_on_another(config: PoolConfig) {
    let pool = Arc::new(GpPool::with_config(
        config.with_max_objects(Some(1)).with_fresh_run(1).with_shards(2),
        || 0u64,
        |_| {},
    ));
    {
        let p = pool.clone();
        std::thread::spawn(move || p.alloc().free()).join().unwrap();
    }
    for attempt in 0..16 {
        let (tx, rx) = mpsc::channel();
        let p = pool.clone();
        // Detached: a thread stuck in `alloc` fails the test instead of hanging it.
        std::thread::spawn(move || {
            let b = p.alloc();
            tx.send(()).unwrap();
            b.free(); // parked again, on this thread's shard
        });
        let got = rx.recv_timeout(Duration::from_secs(10));
        assert!(
            got.is_ok(),
            "attempt {attempt}: alloc at the cap never returned; the only object is parked on \
             another shard ({:?})",
            pool.stats()
        );
    }
}

#[test]
fn wait_policy_at_the_cap_reuses_an_object_parked_on_another_shard() {
    freed_on_one_shard_wanted_on_another(PoolConfig::default().wait_for_grace_period());
}

#[test]
fn immediate_policy_at_the_cap_reuses_an_object_parked_on_another_shard() {
    // SAFETY: no reader ever dereferences these objects.
    freed_on_one_shard_wanted_on_another(unsafe { PoolConfig::default().reuse_immediately() });
}

#[test]
fn objects_parked_at_the_pools_drop_are_dropped_once_their_readers_unpin() {
    let drops = Arc::new(AtomicUsize::new(0));
    let pinned = Arc::new(Barrier::new(2));
    let release_reader = Arc::new(Barrier::new(2));
    // A reader pinned across the free and the pool's drop: the object's cookie cannot complete.
    let reader = {
        let (pinned, release) = (pinned.clone(), release_reader.clone());
        std::thread::spawn(move || {
            let guard = pin();
            pinned.wait();
            release.wait();
            drop(guard);
        })
    };
    pinned.wait();
    // The owner makes the pool, frees one object (parked: the reader is pinned), drops the
    // pool, and lives on without pinning (a server's main thread, say): the object must not
    // wait in its bag of deferred functions.
    let (dropped_tx, dropped_rx) = mpsc::channel();
    let (exit_tx, exit_rx) = mpsc::channel::<()>();
    let owner = {
        let drops = drops.clone();
        std::thread::spawn(move || {
            let config = PoolConfig::default().with_fresh_run(1);
            let pool = GpPool::with_config(config, move || Counted(drops.clone()), |_| {});
            pool.alloc().free();
            drop(pool);
            dropped_tx.send(()).unwrap();
            let _ = exit_rx.recv();
        })
    };
    dropped_rx.recv().unwrap();
    release_reader.wait();
    reader.join().unwrap();
    // Every reader has unpinned; grace periods keep passing on this thread.
    let deadline = Instant::now() + Duration::from_secs(10);
    while drops.load(SeqCst) == 0 && Instant::now() < deadline {
        synchronize();
        pin().flush();
        std::thread::sleep(Duration::from_millis(1));
    }
    let dropped = drops.load(SeqCst);
    exit_tx.send(()).unwrap();
    owner.join().unwrap();
    assert_eq!(dropped, 1, "the object parked at the pool's drop was never dropped");
}

#[test]
fn a_pinned_alloc_under_the_wait_policy_panics_without_losing_the_object() {
    let drops = Arc::new(AtomicUsize::new(0));
    let d = drops.clone();
    let pool = GpPool::with_config(
        PoolConfig::default().wait_for_grace_period().with_fresh_run(1).with_shards(1),
        move || Counted(d.clone()),
        |_| {},
    );
    pool.alloc().free();
    let guard = pin();
    // Freed in the grace period this thread is holding open: it cannot wait for it.
    let panicked = catch_unwind(AssertUnwindSafe(|| drop(pool.alloc()))).is_err();
    drop(guard);
    assert!(panicked);
    let s = pool.stats();
    assert_eq!((s.objects, s.parked), (1, 1), "the object is still parked: {s:?}");
    // It is handed out again once the grace period has passed, and dropped with the pool.
    synchronize();
    drop(pool.alloc());
    drop(pool);
    synchronize();
    synchronize();
    assert_eq!(drops.load(SeqCst), 1);
}

/// A `make` hook that panics on its call number `which` (counting from 0), else makes a
/// `Counted`.
fn panics_on(which: usize, drops: Arc<AtomicUsize>) -> impl Fn() -> Counted + Send + Sync {
    let calls = AtomicUsize::new(0);
    move || {
        assert_ne!(calls.fetch_add(1, SeqCst), which, "make failed");
        Counted(drops.clone())
    }
}

#[test]
fn a_run_whose_make_panics_gives_its_budget_back() {
    let drops = Arc::new(AtomicUsize::new(0));
    let config = PoolConfig::default().with_shards(1).with_fresh_run(2).with_max_objects(Some(2));
    let pool = Arc::new(GpPool::with_config(config, panics_on(0, drops.clone()), |_| {}));
    assert!(catch_unwind(AssertUnwindSafe(|| drop(pool.alloc()))).is_err());
    assert_eq!(pool.stats().objects, 0, "nothing was made");
    // Two objects still fit under the cap (a thread of its own: a stuck one fails the test).
    let (tx, rx) = mpsc::channel();
    let p = pool.clone();
    std::thread::spawn(move || {
        let both = (p.alloc(), p.alloc());
        tx.send(()).unwrap();
        drop(both);
    });
    let done = rx.recv_timeout(Duration::from_secs(10));
    assert!(done.is_ok(), "alloc blocked under a cap of 2 with nothing made: {:?}", pool.stats());
}

#[test]
fn objects_a_run_made_before_its_make_panicked_are_dropped_and_their_room_reused() {
    let drops = Arc::new(AtomicUsize::new(0));
    let config = PoolConfig::default().with_shards(1).with_fresh_run(2);
    // A new block: its first object is made, the second panics.
    let pool = GpPool::with_config(config.clone(), panics_on(1, drops.clone()), |_| {});
    assert!(catch_unwind(AssertUnwindSafe(|| drop(pool.alloc()))).is_err());
    assert_eq!((drops.load(SeqCst), pool.stats().objects), (1, 0));
    drop(pool);
    // In holes: two objects freed and trimmed leave two holes in their block (a third keeps
    // it); the run made in them panics at its second object (the pool's sixth).
    let drops = Arc::new(AtomicUsize::new(0));
    let pool = GpPool::with_config(config.with_fresh_run(4), panics_on(5, drops.clone()), |_| {});
    let held = pool.alloc();
    let (a, b) = (pool.alloc(), pool.alloc());
    let spare = pool.alloc();
    for freed in [a, b, spare] {
        freed.free();
    }
    synchronize();
    pool.trim();
    assert_eq!(drops.load(SeqCst), 3);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(pool.alloc()))).is_err());
    assert_eq!((drops.load(SeqCst), pool.stats().objects), (4, 1), "only `held` is left");
    // The holes are holes again: the next run is made in them, and works.
    drop((pool.alloc(), pool.alloc()));
    drop(held);
    drop(pool);
    synchronize();
    synchronize();
    // Made: 4 in the first block, 1 in the failed run, 3 in the holes (one a spare).
    assert_eq!(drops.load(SeqCst), 8, "every object made was dropped once");
}

/// Configurations a user may write that used to hang or panic: a cap of 0 (every `alloc`
/// spun for ever) and a shard count whose power of two overflows.
#[test]
fn a_cap_of_zero_and_a_huge_shard_count_are_clamped() {
    let pool =
        GpPool::with_config(PoolConfig::default().with_max_objects(Some(0)), || 0u64, |_| {});
    assert_eq!(pool.config().max_objects(), Some(1));
    drop(pool.alloc());
    for shards in [usize::MAX, 1 << 40] {
        let pool = GpPool::with_config(PoolConfig::default().with_shards(shards), || 0u64, |_| {});
        drop(pool.alloc());
    }
}

/// One `alloc` that waits at the cap for another thread's free is one stall, however many
/// times it looks again while it waits.
#[test]
fn an_alloc_that_waits_is_one_stall() {
    let config = PoolConfig::default().with_max_objects(Some(1)).with_fresh_run(1).with_shards(1);
    let pool = GpPool::with_config(config, || 0u64, |_| {});
    let held = pool.alloc();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| drop(pool.alloc()));
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        waiter.join().unwrap();
    });
    let stats = pool.stats();
    assert_eq!(stats.stalls, 1, "{stats:?}");
    assert!(stats.stall_time >= Duration::from_millis(40), "{stats:?}");
}

/// A `reinit` hook that panics: the object it was preparing leaves the pool (dropped, its
/// share of the cap given back) rather than staying counted with no owner.
#[test]
fn a_reinit_that_panics_gives_the_object_back() {
    let drops = Arc::new(AtomicUsize::new(0));
    let config = PoolConfig::default().with_fresh_run(1).with_shards(1).with_max_objects(Some(1));
    let d = drops.clone();
    let pool = GpPool::with_config(config, move || Counted(d.clone()), |_| panic!("reinit"));
    drop(pool.alloc());
    synchronize();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(pool.alloc()))).is_err());
    let stats = pool.stats();
    assert_eq!((stats.objects, stats.parked, stats.spares), (0, 0, 0), "{stats:?}");
    assert_eq!(drops.load(SeqCst), 1);
    // The cap's one object can be made again.
    drop(pool.alloc());
}
