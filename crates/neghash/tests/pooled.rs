//! Entries live in a `udcache-gp` pool: freed cells are reused after a grace period, never
//! under a reader that saw the old entry; every value is dropped exactly once, also when the
//! table goes before its entries' deferred releases have run.
#![cfg(not(loom))]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use udcache_neghash::{Config, NegHash, epoch};

/// A value that counts its drops.
#[derive(Debug)]
struct Counted(u64, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

/// Pins and flushes until `done()` holds (deferred releases and grace periods have run);
/// false after 10 s.
fn settle(done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        epoch::pin().flush();
        std::thread::yield_now();
    }
    true
}

fn name(i: u64) -> Vec<u8> {
    format!("{i:08x}").into_bytes()
}

#[test]
fn removed_entries_cells_are_recycled() {
    let table: NegHash<u64> = NegHash::new(Config::with_buckets(64));
    for round in 0..50u64 {
        for i in 0..64 {
            let held = table.insert(1, &name(round * 64 + i), false, i).unwrap();
            held.remove();
        }
        // The removals' chain references are released by deferred functions (flushed to the
        // global queue here, run once their epoch has passed), which park the cells under a
        // cookie; the next round reuses them once that cookie has completed. Two full grace
        // periods cover both steps, so the count below does not depend on timing.
        epoch::pin().flush();
        udcache_gp::synchronize();
        udcache_gp::synchronize();
    }
    let s = table.stats();
    assert_eq!(s.entries, 0);
    assert!(s.recycled > 0, "3,200 entries made and freed, none in a recycled cell: {s:?}");
    assert!(s.recycled > 1_000, "most of 3,200 entries reuse cells: {s:?}");
    // Memory pressure: `shrink` gives the parked cells back once their grace period is over.
    assert!(s.parked > 0, "{s:?}");
    assert!(settle(|| {
        table.shrink(0);
        table.stats().parked == 0
    }));
}

/// Makes and frees `n` entries under `parent`, flushing now and then.
fn churn(table: &NegHash<u64>, parent: u64, n: u64) {
    for i in 0..n {
        let held = table.insert(parent, &name(i), false, i).unwrap();
        held.remove();
        drop(held);
        if i % 256 == 0 {
            epoch::pin().flush();
        }
    }
}

#[test]
fn a_reader_keeps_the_entry_it_saw_while_others_churn() {
    let table: NegHash<u64> = NegHash::new(Config::with_buckets(16));
    drop(table.insert(1, b"old", false, 7).unwrap());
    let guard = epoch::pin();
    let seen = table.lookup(&guard, 1, b"old").unwrap();
    table.get(1, b"old").unwrap().remove();
    // Other threads make and free many entries while this reader stays pinned: no cell may
    // be handed out again meanwhile, the reader's least of all.
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let table = &table;
            s.spawn(move || churn(table, 2 + t, 20_000));
        }
    });
    assert_eq!((seen.parent(), seen.name(), *seen.value()), (1, &b"old"[..], 7));
    assert!(!seen.is_hashed());
    assert_eq!(table.stats().recycled, 0, "a cell was reused under a pinned reader");
    drop(guard);
    // Unpinned, the same churn reuses cells.
    assert!(settle(|| {
        churn(&table, 4, 1_000);
        table.stats().recycled > 0
    }));
}

#[test]
fn every_value_is_dropped_once_even_after_the_table_is_gone() {
    let drops = Arc::new(AtomicUsize::new(0));
    let made = 5_000;
    {
        let table: NegHash<Counted> = NegHash::new(Config::with_buckets(256));
        for i in 0..made {
            let negative = i % 2 == 0;
            let held = table.insert(1, &name(i), negative, Counted(i, drops.clone())).unwrap();
            if i % 3 == 0 {
                held.remove();
            }
        }
        // A reader pinned across the table's drop: removed entries' releases wait for it.
        let guard = epoch::pin();
        assert!(table.lookup(&guard, 1, &name(1)).is_some_and(|e| e.value().0 == 1));
        drop(guard);
    }
    assert!(
        settle(|| drops.load(Ordering::Relaxed) == made as usize),
        "{} of {made} values dropped",
        drops.load(Ordering::Relaxed)
    );
    // No value is dropped twice (a count past `made` would show it after more flushing).
    for _ in 0..100 {
        epoch::pin().flush();
    }
    assert_eq!(drops.load(Ordering::Relaxed), made as usize);
}
