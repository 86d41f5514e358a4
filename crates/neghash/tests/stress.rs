//! Multi-threaded stress test with invariant checks: writers insert, hold, flip, remove and
//! shrink on a small table while readers look up without locks; then the bounds and counters
//! are checked on the quiet table.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use udcache_neghash::{Config, Insertion, NegHash, Polarity, epoch};

fn name(i: u64) -> Vec<u8> {
    format!("{i:08x}").into_bytes()
}

#[test]
fn churn_keeps_bounds_and_lookups_stay_correct() {
    let table: NegHash<u64> = NegHash::new(Config::with_buckets(64).with_negative_cap(Some(5)));
    // Stable positives, held for the whole test: every lookup must find them, positive.
    let stable: Vec<_> = (0..64u64)
        .map(|i| table.insert(0, &name(i), Polarity::Positive, i).inserted().unwrap())
        .collect();
    let stop = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    let ops = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs(3);
    std::thread::scope(|s| {
        for w in 0..2u64 {
            let (table, stop, ops) = (&table, &stop, &ops);
            s.spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (w + 1);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = name(x % 4096);
                    let parent = 1 + (x >> 20) % 3;
                    match (x >> 32) % 8 {
                        // A flood of misses, filed held then released, or unused at once.
                        0..=1 => drop(table.insert(parent, &key, Polarity::Negative, 0)),
                        2..=3 => drop(table.insert_unused(parent, &key, Polarity::Negative, 0)),
                        4 => {
                            if let Insertion::Inserted(h) =
                                table.insert(parent, &key, Polarity::Positive, x)
                                && x & 1 == 0
                            {
                                h.make_negative();
                            }
                        }
                        5 => {
                            if let Some(h) = table.get(parent, &key) {
                                if (x >> 40) & 1 == 0 {
                                    h.make_positive()
                                } else {
                                    h.remove()
                                };
                            }
                        }
                        6 => drop(table.get(parent, &key)),
                        _ if (x >> 50).is_multiple_of(16) => {
                            table.shrink(8);
                        }
                        _ => drop(table.get(parent, &key)),
                    }
                    n += 1;
                }
                ops.fetch_add(n, Ordering::Relaxed);
            });
        }
        for r in 0..2u64 {
            let (table, stop, lookups) = (&table, &stop, &lookups);
            s.spawn(move || {
                let mut x = 0x2545_f491_4f6c_dd1du64 ^ (r + 3);
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let guard = epoch::pin();
                    let i = x % 64;
                    let e = table.lookup(&guard, 0, &name(i)).expect("a held positive vanished");
                    assert!(!e.is_negative() && *e.value() == i && e.name() == name(i));
                    let key = name((x >> 16) % 4096);
                    let parent = 1 + (x >> 40) % 3;
                    if let Some(e) = table.lookup(&guard, parent, &key) {
                        assert_eq!(
                            (e.parent(), e.name()),
                            (parent, &key[..]),
                            "wrong entry returned"
                        );
                    }
                    n += 1;
                    if n.is_multiple_of(1024) && Instant::now() > deadline {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
                lookups.fetch_add(n, Ordering::Relaxed);
            });
        }
    });
    let (ops, lookups) = (ops.into_inner(), lookups.into_inner());
    eprintln!("writer ops {ops}, lookups {lookups}, stats {:?}", table.stats());
    assert!(ops > 10_000 && lookups > 10_000, "too little work to mean anything");

    // Quiet now: check every bucket and the counters against the chains.
    table.verify().unwrap();
    let stats = table.stats();
    assert!(stats.evicted_rule1 + stats.evicted_rule2 > 0, "the flood never triggered a rule");
    drop(stable);
}

/// Writers keep the three words of each value equal under `write_value` (one writer per
/// entry, as the contract asks), while the table churns around them (misses flood the same
/// buckets, so `state` also takes the trimming rules' flag changes) and readers check every
/// `read_value` snapshot. Invariant: no reader ever sees two different words in one snapshot,
/// and the counts each reader sees never go backwards.
#[test]
fn read_value_snapshots_are_whole_under_writers_and_churn() {
    type Triple = [AtomicU64; 3];
    let table: NegHash<Triple> = NegHash::new(Config::with_buckets(8).with_negative_cap(Some(3)));
    let keys: Vec<Vec<u8>> = (0..8u64).map(name).collect();
    // Held for the whole test, so that the trimming never evicts them.
    let held: Vec<_> = keys
        .iter()
        .map(|k| {
            table
                .insert(0, k, Polarity::Positive, std::array::from_fn(|_| AtomicU64::new(0)))
                .inserted()
                .unwrap()
        })
        .collect();
    let stop = AtomicBool::new(false);
    let (snapshots, writes) = (AtomicU64::new(0), AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(2);
    std::thread::scope(|s| {
        // Two writers, each owning half of the entries.
        for w in 0..2usize {
            let (table, keys, stop, writes) = (&table, &keys, &stop, &writes);
            s.spawn(move || {
                let mine: Vec<_> =
                    keys.iter().skip(w).step_by(2).map(|k| table.get(0, k).unwrap()).collect();
                let mut v = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    v += 1;
                    for e in &mine {
                        e.write_value(|t| t.iter().for_each(|x| x.store(v, Ordering::Relaxed)));
                    }
                }
                writes.fetch_add(v, Ordering::Relaxed);
            });
        }
        // A flood of negatives into the same buckets: trimming flips flag bits of `state`.
        {
            let (table, stop) = (&table, &stop);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let blank = std::array::from_fn(|_| AtomicU64::new(0));
                    drop(table.insert(1, &name(i), Polarity::Negative, blank));
                }
            });
        }
        for _ in 0..2 {
            let (table, keys, stop, snapshots) = (&table, &keys, &stop, &snapshots);
            s.spawn(move || {
                let mut last = vec![0u64; keys.len()];
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let guard = epoch::pin();
                    for (k, last) in keys.iter().zip(&mut last) {
                        let e = table.lookup(&guard, 0, k).expect("held entries stay");
                        let t = e.read_value(|t| t.each_ref().map(|x| x.load(Ordering::Relaxed)));
                        assert!(t[0] == t[1] && t[1] == t[2], "torn snapshot {t:?}");
                        assert!(t[0] >= *last, "went backwards: {} after {last}", t[0]);
                        *last = t[0];
                        n += 1;
                    }
                }
                snapshots.fetch_add(n, Ordering::Relaxed);
            });
        }
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
    });
    drop(held);
    let (n, w) = (snapshots.load(Ordering::Relaxed), writes.load(Ordering::Relaxed));
    assert!(n > 1000 && w > 100, "too little happened: {n} snapshots, {w} writes");
}
