//! Loom model of `trim` running concurrently with free and alloc, on crossbeam-epoch's own loom
//! build:
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p udcache-gp --test loom_trim`
//! (with a separate `CARGO_TARGET_DIR`, as `.ci/run` does). Three threads over crossbeam's loom
//! build are many more executions than `loom_pool`'s two: the preemption bound is 1 (about 2 s;
//! a bound of 2 takes over 5 minutes on two cores). Trim releasing everything parked, grace
//! period or not, fails it.
//!
//! A reader pins and loads a published pointer; a writer unpublishes it, frees it and allocates
//! (driving the grace-period machinery as it polls) while a third thread trims. In no
//! interleaving may the object be dropped (released by `trim`) or handed out again while the
//! reader that saw it is still pinned.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicPtr, Ordering};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use udcache_gp::{GpPool, PoolBox, PoolConfig};

mod common;

// Plain std atomics, outside the model: loom does not switch threads at them, so the reader's
// `SEEN` store happens in the same step as its load of the pointer.
/// The address the pinned reader loaded and may still be reading (0: none).
static SEEN: AtomicUsize = AtomicUsize::new(0);
/// The freed object's address, and how many executions released it by `trim`.
static OLD: AtomicUsize = AtomicUsize::new(0);
static TRIMMED_OLD: AtomicUsize = AtomicUsize::new(0);
static IN_TRIM: AtomicUsize = AtomicUsize::new(0);
static VIOLATIONS: AtomicUsize = AtomicUsize::new(0);

struct Obj {
    _payload: u64,
}

impl Drop for Obj {
    fn drop(&mut self) {
        let addr = std::ptr::from_ref(self).addr();
        if SEEN.load(Relaxed) == addr {
            VIOLATIONS.fetch_add(1, Relaxed); // released under a pinned reader that saw it
        }
        if OLD.load(Relaxed) == addr && IN_TRIM.load(Relaxed) > 0 {
            TRIMMED_OLD.fetch_add(1, Relaxed);
        }
    }
}

/// Runs the model; returns (executions in which trim released the freed object, violations).
fn run(config: PoolConfig) -> (usize, usize) {
    TRIMMED_OLD.store(0, Relaxed);
    VIOLATIONS.store(0, Relaxed);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(1);
    b.check(move || {
        SEEN.store(0, Relaxed);
        IN_TRIM.store(0, Relaxed);
        let pool = Arc::new(GpPool::with_config(config.clone(), || Obj { _payload: 0 }, |_| {}));
        let first = PoolBox::into_raw(pool.alloc()).as_ptr();
        OLD.store(first.addr(), Relaxed);
        let published = Arc::new(AtomicPtr::new(first));

        let reader = common::spawn_pinned_reader(&published, |p: *mut Obj| {
            SEEN.store(p.addr(), Relaxed);
            loom::thread::yield_now();
            SEEN.store(0, Relaxed);
        });
        let trimmer = {
            let pool = pool.clone();
            loom::thread::spawn(move || {
                IN_TRIM.fetch_add(1, Relaxed);
                pool.trim();
                IN_TRIM.fetch_sub(1, Relaxed);
            })
        };

        let old = published.swap(std::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: from into_raw of this pool, unpublished just now, freed once.
        unsafe { pool.free_raw(NonNull::new(old).unwrap()) };
        let a = pool.alloc();
        if std::ptr::from_ref::<Obj>(&a).addr() == SEEN.load(Relaxed) {
            VIOLATIONS.fetch_add(1, Relaxed); // handed out under a pinned reader that saw it
        }
        reader.join().unwrap();
        trimmer.join().unwrap();
        drop(a);
    });
    (TRIMMED_OLD.load(Relaxed), VIOLATIONS.load(Relaxed))
}

#[test]
fn trim_never_releases_an_object_under_a_pinned_reader() {
    let (trimmed, violations) = run(PoolConfig::default().with_request_every(1));
    assert_eq!(violations, 0, "object released or reused under a pinned reader");
    // Only meaningful if some interleavings really let trim release the freed object.
    assert!(trimmed > 0, "no execution had trim release the freed object");
}
