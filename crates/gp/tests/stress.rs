//! Stress test of the pool's guarantee, with real threads, and a negative control.
//!
//! Writers keep replacing objects published in a table of slots, freeing the old ones and
//! allocating new ones (bumping the object's generation on every hand-out). Readers pin, load a
//! published object and its generation, hold it for a random time, and check the generation
//! again before unpinning. The guarantee says the object cannot be handed out again while the
//! reader is pinned, so the generation cannot change: any change is a violation.
//!
//! The negative control runs the same checker on a pool that reuses immediately
//! ([`PoolConfig::reuse_immediately`]) and must see violations — proving the checker can fail.
//! (That pool really is unsound with these readers: that is the point of the control.)
#![cfg(not(loom))]

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use udcache_gp::{GpPool, PoolBox, PoolConfig, pin};

struct Obj {
    generation: AtomicU64,
    _payload: [u64; 28],
}

const SLOTS: usize = 64;

#[derive(Debug, Default)]
struct Outcome {
    reads: u64,
    violations: u64,
    pairs: u64,
}

/// Runs 2 writers and 2 readers until the readers made `target_reads` checked reads (or the
/// deadline passes, or — with `stop_on_violation` — the first violation).
fn run(
    config: PoolConfig,
    target_reads: u64,
    deadline: Duration,
    stop_on_violation: bool,
) -> Outcome {
    let pool = GpPool::with_config(
        config,
        || Obj { generation: AtomicU64::new(0), _payload: [0; 28] },
        |_| {},
    );
    let hand_out = |b: PoolBox<'_, Obj>| {
        // Release: a reader that loads the pointer (Acquire) sees at least this generation.
        b.generation.fetch_add(1, Ordering::Release);
        PoolBox::into_raw(b).as_ptr()
    };
    let slots: Vec<AtomicPtr<Obj>> =
        (0..SLOTS).map(|_| AtomicPtr::new(hand_out(pool.alloc()))).collect();
    let stop = AtomicBool::new(false);
    let reads = AtomicU64::new(0);
    let violations = AtomicU64::new(0);
    let pairs = AtomicU64::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (pool, slots, stop, pairs) = (&pool, &slots, &stop, &pairs);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ w;
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let fresh = hand_out(pool.alloc());
                    // AcqRel: publishes `fresh` (Release, pairs with the readers' Acquire) and
                    // takes ownership of the old object.
                    let old = slots[x as usize % SLOTS].swap(fresh, Ordering::AcqRel);
                    // SAFETY: `old` came from into_raw on this pool, was just unpublished, and
                    // is freed once (the swap gave it to this thread only).
                    unsafe { pool.free_raw(NonNull::new(old).unwrap()) };
                    n += 1;
                }
                pairs.fetch_add(n, Ordering::Relaxed);
            });
        }
        for r in 0..2u64 {
            let (slots, stop, reads, violations) = (&slots, &stop, &reads, &violations);
            s.spawn(move || {
                let mut x = 0x2545_f491_4f6c_dd1du64 ^ (r + 7);
                let mut n = 0u64;
                loop {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let guard = pin();
                    let p = slots[x as usize % SLOTS].load(Ordering::Acquire);
                    // SAFETY: `p` was published and we are pinned: the object's memory stays
                    // valid (the pool never releases memory of a parked object before its grace
                    // period), so reading its atomic generation is sound.
                    let g1 = unsafe { (*p).generation.load(Ordering::Acquire) };
                    for _ in 0..(x >> 40) % 200 {
                        std::hint::spin_loop();
                    }
                    // SAFETY: as above, still pinned.
                    let g2 = unsafe { (*p).generation.load(Ordering::Acquire) };
                    drop(guard);
                    if g1 != g2 {
                        violations.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 1;
                    if n.is_multiple_of(4096) {
                        let total = reads.fetch_add(4096, Ordering::Relaxed) + 4096;
                        let bad = violations.load(Ordering::Relaxed) > 0;
                        if total >= target_reads
                            || start.elapsed() > deadline
                            || (stop_on_violation && bad)
                        {
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            });
        }
    });
    for s in &slots {
        // SAFETY: all threads have stopped; each published object is freed once.
        unsafe { pool.free_raw(NonNull::new(s.load(Ordering::Relaxed)).unwrap()) };
    }
    Outcome {
        reads: reads.into_inner(),
        violations: violations.into_inner(),
        pairs: pairs.into_inner(),
    }
}

#[test]
fn pool_never_reuses_under_a_pinned_reader() {
    let out = run(PoolConfig::default(), 3_000_000, Duration::from_secs(20), false);
    eprintln!("after-grace-period pool: {out:?}");
    assert_eq!(out.violations, 0, "an object was reused under a pinned reader");
    assert!(
        out.reads >= 100_000 && out.pairs >= 10_000,
        "too little work to mean anything: {out:?}"
    );
}

#[test]
fn wait_for_grace_period_policy_is_also_safe() {
    let out = run(
        PoolConfig::default().wait_for_grace_period(),
        1_000_000,
        Duration::from_secs(10),
        false,
    );
    eprintln!("wait-for-grace-period pool: {out:?}");
    assert_eq!(out.violations, 0);
    assert!(out.reads >= 100_000, "{out:?}");
}

#[test]
fn negative_control_immediate_reuse_is_caught() {
    // SAFETY: not safe at all with these readers — this test exists to show the checker sees it.
    let config = unsafe { PoolConfig::default().reuse_immediately() };
    let out = run(config, 50_000_000, Duration::from_secs(20), true);
    eprintln!("immediate-reuse pool (negative control): {out:?}");
    assert!(out.violations > 0, "the checker failed to catch immediate reuse: {out:?}");
}
