//! Loom models of the pool's guarantee, run on crossbeam-epoch's own loom build:
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p udcache-gp --test loom_pool`
//!
//! A reader pins and loads a published pointer; a writer unpublishes it, frees it and allocates
//! again (driving the grace-period machinery as it polls). In no interleaving may the reader,
//! still pinned, see the object re-initialised.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::ptr::NonNull;
use udcache_gp::{GpPool, PoolBox, PoolConfig};

mod common;

struct Obj {
    generation: AtomicU64,
}

fn model(body: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(body);
}

// Counted outside loom (plain std atomics) and checked after the model, so a violation is
// reported without panicking inside an execution. Each test binary runs its models in turn
// (the counters are reset by `run`, and loom tests share a lock below).
static REUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static VIOLATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the model; returns (executions that reused the freed object, violations seen).
fn run(config: PoolConfig) -> (usize, usize) {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    REUSED.store(0, std::sync::atomic::Ordering::Relaxed);
    VIOLATIONS.store(0, std::sync::atomic::Ordering::Relaxed);
    free_then_alloc_under_a_reader(config);
    (
        REUSED.load(std::sync::atomic::Ordering::Relaxed),
        VIOLATIONS.load(std::sync::atomic::Ordering::Relaxed),
    )
}

#[test]
fn reader_never_sees_reinit_while_pinned() {
    let (reused, violations) = run(PoolConfig::default().with_request_every(1));
    assert_eq!(violations, 0, "object re-initialised under a pinned reader");
    // The model is only meaningful if some interleavings really recycle the object.
    assert!(reused > 0, "no execution reused the object");
}

#[test]
fn negative_control_immediate_reuse_fails_the_model() {
    // SAFETY: deliberately unsound: the model must catch it.
    let (_, violations) = run(unsafe { PoolConfig::default().reuse_immediately() });
    assert!(violations > 0, "the model did not catch immediate reuse");
}

fn free_then_alloc_under_a_reader(config: PoolConfig) {
    model(move || {
        let pool = Arc::new(GpPool::with_config(
            config.clone(),
            || Obj { generation: AtomicU64::new(0) },
            |o: &mut Obj| {
                o.generation.fetch_add(1, Ordering::Relaxed);
            },
        ));
        let first = PoolBox::into_raw(pool.alloc()).as_ptr();
        let published = Arc::new(AtomicPtr::new(first));

        let reader = common::spawn_pinned_reader(&published, |p: *mut Obj| {
            // SAFETY: pinned, and the pool keeps parked memory valid.
            let g1 = unsafe { (*p).generation.load(Ordering::Relaxed) };
            loom::thread::yield_now();
            // SAFETY: as above, still pinned.
            let g2 = unsafe { (*p).generation.load(Ordering::Relaxed) };
            if g1 != g2 {
                VIOLATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });

        let old = published.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: from into_raw of this pool, unpublished just now, freed once.
        unsafe { pool.free_raw(NonNull::new(old).unwrap()) };
        // Allocate twice: each may reuse `old` only after the reader's grace period.
        let a = pool.alloc();
        let b = pool.alloc();
        if [&*a, &*b].iter().any(|o| std::ptr::eq(*o, old)) {
            REUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        reader.join().unwrap();
        drop((a, b));
    });
}
