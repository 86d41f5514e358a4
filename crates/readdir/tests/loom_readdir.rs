//! Loom models of the directory lock protocol (`dir.rs`): coalesced fills, and a change
//! announced while a fill runs. Run with
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p udcache-readdir --test loom_readdir`.
#![cfg(loom)]

use std::sync::Arc;

use loom::thread;
use udcache_readdir::reference::{CookieStyle, MemDir};
use udcache_readdir::{Config, DirCache, ReaddirCache};

fn setup(budget: usize) -> (ReaddirCache, DirCache<Arc<MemDir>>) {
    let cache =
        ReaddirCache::with_config(Config::default().with_budget_pages(budget).with_page_entries(4));
    let dir = cache.dir(Arc::new(MemDir::with_entries(CookieStyle::Hashed, 16, 0..3)));
    (cache, dir)
}

/// A no-op loom operation: loom may switch threads here.
fn branch_point() {
    // Relaxed: the operation orders nothing; it only exists to be a scheduling point.
    loom::sync::atomic::AtomicUsize::new(0).fetch_add(1, loom::sync::atomic::Ordering::Relaxed);
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// Two readers of the same cookie: whatever the interleaving, one backend call, the same
/// answer, and at most one of them waited, served by the other's fill (it is always kept).
#[test]
fn concurrent_reads_of_one_cookie_share_one_fill() {
    model(|| {
        let (cache, dir) = setup(4);
        let other = dir.clone();
        let t = thread::spawn(move || other.read(0, 8).unwrap());
        let mine = dir.read(0, 8).unwrap();
        let theirs = t.join().unwrap();
        assert_eq!(mine, theirs);
        assert_eq!(mine.entries.len(), 3);
        let s = cache.stats();
        assert_eq!(s.backend_calls, 1, "{s:?}");
        assert!(s.waits <= 1, "{s:?}");
        assert_eq!(s.coalesced, s.waits, "{s:?}");
        assert_eq!(s.hits + s.misses, 2);
    });
}

/// A reader fills while a writer removes an entry and announces it: afterwards the cache never
/// serves the removed entry, whichever order the fill and the announcement took.
#[test]
fn a_change_announced_during_a_fill_is_never_hidden() {
    model(|| {
        let (_cache, dir) = setup(4);
        let reader = dir.clone();
        let t = thread::spawn(move || reader.read(0, 8).unwrap());
        // The backend is not a loom object: give loom a point to run the reader's fill first.
        branch_point();
        let v = dir.backend().remove(1).unwrap();
        dir.set_verifier(v);
        let during = t.join().unwrap();
        assert!(during.entries.len() == 2 || during.entries.len() == 3);
        let after = dir.read(0, 8).unwrap();
        let names: Vec<&[u8]> = after.entries.iter().map(|e| &*e.name).collect();
        assert_eq!(names.len(), 2, "the removed entry is gone: {names:?}");
        assert!(!names.contains(&&b"n1"[..]));
    });
}

/// Two directories sharing a one-page budget, read concurrently: eviction crosses directories
/// without deadlock (never two directory locks at once), and the budget holds.
#[test]
fn eviction_across_directories_keeps_the_budget() {
    model(|| {
        let cache =
            ReaddirCache::with_config(Config::default().with_budget_pages(1).with_page_entries(4));
        let a = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 8, 0..3));
        let b = cache.dir(MemDir::with_entries(CookieStyle::Ordered, 8, 0..3));
        let b2 = b.clone();
        let t = thread::spawn(move || b2.read(0, 8).unwrap().entries.len());
        assert_eq!(a.read(0, 8).unwrap().entries.len(), 3);
        assert_eq!(t.join().unwrap(), 3);
        let s = cache.stats();
        assert_eq!((s.pages, s.evictions), (1, 1));
        assert_eq!(a.cached_pages() + b.cached_pages(), 1, "the victim's directory dropped it");
    });
}
