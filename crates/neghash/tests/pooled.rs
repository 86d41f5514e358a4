//! Entries live in a `udcache-gp` pool: freed cells are reused after a grace period, never
//! under a reader that saw the old entry; every value is dropped exactly once, also when the
//! table goes before its entries' deferred releases have run. The last two tests walk the
//! unsafe paths at a size Miri can run (`cargo +nightly miri test -p udcache-neghash --test
//! pooled -- pinned_reader values_are_read`): pooled entries inserted, found by a pinned
//! reader on another thread, removed, evicted and trimmed, their cells reused after a grace
//! period, and a table dropped with entries still live.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use udcache_neghash::{Config, NegHash, Polarity, epoch};

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
            let held =
                table.insert(1, &name(round * 64 + i), Polarity::Positive, i).inserted().unwrap();
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
        let held = table.insert(parent, &name(i), Polarity::Positive, i).inserted().unwrap();
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
    drop(table.insert(1, b"old", Polarity::Positive, 7).inserted().unwrap());
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
            let held = table
                .insert(
                    1,
                    &name(i),
                    if negative { Polarity::Negative } else { Polarity::Positive },
                    Counted(i, drops.clone()),
                )
                .inserted()
                .unwrap();
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

/// Grace periods pass and the chains' deferred releases run.
fn settle_all() {
    for _ in 0..4 {
        epoch::pin().flush();
        udcache_gp::synchronize();
    }
}

#[test]
fn a_pinned_reader_keeps_its_entry_through_remove_evict_and_reuse() {
    let drops = Arc::new(AtomicUsize::new(0));
    let made = 24u64;
    {
        let table: NegHash<Counted> =
            NegHash::new(Config::with_buckets(4).with_negative_cap(Some(3)));
        let value = |i| Counted(i, drops.clone());
        drop(table.insert(1, b"seen", Polarity::Positive, value(0)).inserted().unwrap());
        let (found, changed) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let guard = epoch::pin();
                let e = table.lookup(&guard, 1, b"seen").unwrap();
                found.wait();
                changed.wait();
                assert_eq!((e.name(), e.value().0), (&b"seen"[..], 0));
                assert!(!e.is_hashed());
            });
            found.wait();
            table.get(1, b"seen").unwrap().remove();
            // Negatives past the cap are evicted; positives flip and go.
            for i in 1..made / 2 {
                let name = format!("n{i}");
                drop(
                    table
                        .insert(2, name.as_bytes(), Polarity::Negative, value(i))
                        .inserted()
                        .unwrap(),
                );
            }
            for i in made / 2..made {
                let held = table
                    .insert(3, format!("p{i}").as_bytes(), Polarity::Positive, value(i))
                    .inserted()
                    .unwrap();
                if i % 2 == 0 {
                    assert!(held.make_negative());
                } else {
                    held.remove();
                }
            }
            changed.wait();
        });
        table.verify().unwrap();
        settle_all();
        // Cells freed above come back for new entries once their grace period is over.
        for i in 0..4u64 {
            drop(
                table
                    .insert(4, format!("r{i}").as_bytes(), Polarity::Positive, value(made + i))
                    .inserted()
                    .unwrap(),
            );
        }
        assert!(table.stats().recycled > 0, "{:?}", table.stats());
        assert!(table.shrink_negative(2).evicted > 0);
        let old = table.oldest_unused(2, Polarity::Positive);
        assert!(!old.is_empty());
        drop(old);
        table.purge_negatives(&|parent| parent == 2);
        // Dropped with entries on its chains and a reader pinned: their releases run later.
        let guard = epoch::pin();
        assert!(table.lookup(&guard, 4, b"r0").is_some());
        drop(table);
        drop(guard);
    }
    for _ in 0..64 {
        if drops.load(Ordering::Relaxed) == made as usize + 4 {
            break;
        }
        settle_all();
    }
    assert_eq!(drops.load(Ordering::Relaxed), made as usize + 4);
}

#[test]
fn values_are_read_whole_while_written() {
    use std::sync::atomic::AtomicU64;
    let table = NegHash::new(Config::with_buckets(2));
    drop(
        table
            .insert(1, b"pair", Polarity::Positive, (AtomicU64::new(0), AtomicU64::new(0)))
            .inserted()
            .unwrap(),
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..8 {
                let guard = epoch::pin();
                let e = table.lookup(&guard, 1, b"pair").unwrap();
                let (a, b) =
                    e.read_value(|(a, b)| (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)));
                assert_eq!(a, b);
            }
        });
        let e = table.get(1, b"pair").unwrap();
        for v in 1..8 {
            e.write_value(|(a, b)| {
                a.store(v, Ordering::Relaxed);
                b.store(v, Ordering::Relaxed);
            });
        }
    });
}
