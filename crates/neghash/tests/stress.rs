//! Multi-threaded stress test with invariant checks: writers insert, hold, flip, remove and
//! shrink on a small table while readers look up without locks; then the bounds and counters
//! are checked on the quiet table.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use udcache_neghash::{Config, NegHash, epoch};

fn name(i: u64) -> Vec<u8> {
    format!("{i:08x}").into_bytes()
}

#[test]
fn churn_keeps_bounds_and_lookups_stay_correct() {
    let table: NegHash<u64> = NegHash::new(Config::with_buckets(64).with_negative_cap(Some(5)));
    // Stable positives, held for the whole test: every lookup must find them, positive.
    let stable: Vec<_> = (0..64u64).map(|i| table.insert(0, &name(i), false, i).unwrap()).collect();
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
                        0..=3 => drop(table.insert(parent, &key, true, 0)), // flood of misses
                        4 => {
                            if let Ok(h) = table.insert(parent, &key, false, x)
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
