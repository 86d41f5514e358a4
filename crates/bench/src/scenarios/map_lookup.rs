//! `map-lookup`: hit throughput of `NegHash` lookups against the usual concurrent maps.
//!
//! The same keys (parent id, 16-byte name) in every map, all hashed with std's `RandomState`
//! (SipHash-1-3, what `NegHash` uses); each lookup pins (NegHash, papaya) or locks (the others)
//! on its own, as a single name lookup would. Variants: `neghash`, `papaya`, `dashmap`,
//! `rwlock` (`RwLock<HashMap>`), `mutex` (`Mutex<HashMap>`), each at 1 and 2 threads,
//! interleaved round by round. 100,000 keys (`--quick`: 20,000), random order.
//!
//! Summary fields: `ratio_vs_papaya_1t`, `ratio_vs_papaya_2t` (NegHash lookups/s over papaya's),
//! `scaling_2t` (NegHash 2-thread over 1-thread), plus `mops_<variant>_<threads>t`.

use std::collections::HashMap;
use std::hash::RandomState;
use std::hint::black_box;
use std::sync::{Mutex, RwLock};
use std::time::Instant;

use udcache_neghash::{Config, NegHash, epoch};

use crate::Options;
use crate::measure::interleaved;
use crate::report::{Report, Row};

type Key = (u64, Vec<u8>);

enum Map {
    NegHash(NegHash<u64>),
    Papaya(papaya::HashMap<Key, u64, RandomState>),
    DashMap(dashmap::DashMap<Key, u64, RandomState>),
    RwLock(RwLock<HashMap<Key, u64, RandomState>>),
    Mutex(Mutex<HashMap<Key, u64, RandomState>>),
}

const VARIANTS: [&str; 5] = ["neghash", "papaya", "dashmap", "rwlock", "mutex"];

fn build(variant: &str, keys: &[Key]) -> Map {
    let pairs = keys.iter().enumerate().map(|(i, k)| (k.clone(), i as u64));
    match variant {
        "neghash" => {
            let t = NegHash::new(Config::for_entries(keys.len()));
            for (k, v) in pairs {
                drop(t.insert(k.0, &k.1, false, v).ok());
            }
            Map::NegHash(t)
        }
        "papaya" => {
            let m = papaya::HashMap::with_hasher(RandomState::new());
            let g = m.pin();
            pairs.for_each(|(k, v)| {
                g.insert(k, v);
            });
            drop(g);
            Map::Papaya(m)
        }
        "dashmap" => {
            let m = dashmap::DashMap::with_hasher(RandomState::new());
            pairs.for_each(|(k, v)| {
                m.insert(k, v);
            });
            Map::DashMap(m)
        }
        "rwlock" => Map::RwLock(RwLock::new(pairs.collect::<HashMap<_, _, _>>())),
        _ => Map::Mutex(Mutex::new(pairs.collect::<HashMap<_, _, _>>())),
    }
}

/// Looks up `keys[order[i]]` for every i; returns how many hits.
fn lookups(map: &Map, keys: &[Key], order: &[u32]) -> u64 {
    let mut hits = 0u64;
    for &i in order {
        let k = &keys[i as usize];
        let hit = match map {
            Map::NegHash(t) => {
                let g = epoch::pin();
                t.lookup(&g, k.0, &k.1).map(|e| *e.value())
            }
            Map::Papaya(m) => m.pin().get(k).copied(),
            Map::DashMap(m) => m.get(k).map(|v| *v),
            Map::RwLock(m) => m.read().unwrap().get(k).copied(),
            Map::Mutex(m) => m.lock().unwrap().get(k).copied(),
        };
        hits += u64::from(black_box(hit).is_some());
    }
    hits
}

/// Million lookups per second with `threads` threads, each doing `order.len()` lookups.
fn mops(map: &Map, keys: &[Key], orders: &[Vec<u32>], threads: usize) -> f64 {
    let start = Instant::now();
    let hits: u64 = std::thread::scope(|s| {
        let handles: Vec<_> =
            orders[..threads].iter().map(|o| s.spawn(move || lookups(map, keys, o))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let total = (orders[0].len() * threads) as u64;
    assert_eq!(hits, total, "every key is present");
    total as f64 / start.elapsed().as_secs_f64() / 1e6
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (n, per_thread, rounds): (u32, usize, usize) =
        if opts.quick { (20_000, 400_000, 5) } else { (100_000, 2_000_000, 9) };
    let keys: Vec<Key> =
        (0..n).map(|i| (u64::from(i % 64), format!("{:016x}", i).into_bytes())).collect();
    let orders: Vec<Vec<u32>> = (0..2u64)
        .map(|t| {
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1);
            (0..per_thread)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % u64::from(n)) as u32
                })
                .collect()
        })
        .collect();
    let maps: Vec<Map> = VARIANTS.iter().map(|v| build(v, &keys)).collect();
    let mut runs: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for threads in [1, 2] {
        for m in &maps {
            let (keys, orders) = (&keys, &orders);
            runs.push(Box::new(move || mops(m, keys, orders, threads)));
        }
    }
    let mut refs: Vec<&mut dyn FnMut() -> f64> = runs.iter_mut().map(|r| &mut **r as _).collect();
    let m = interleaved(&mut refs, rounds);
    let (one, two) = m.split_at(VARIANTS.len());
    let mut report = Report::new("map-lookup");
    let mut summary = Row::new()
        .with("ratio_vs_papaya_1t", one[0] / one[1])
        .with("ratio_vs_papaya_2t", two[0] / two[1])
        .with("scaling_2t", two[0] / one[0]);
    for (i, v) in VARIANTS.iter().enumerate() {
        report.row(
            Row::new()
                .with("variant", *v)
                .with("mops_1t", one[i])
                .with("mops_2t", two[i])
                .with("scaling_2t", two[i] / one[i])
                .with("ratio_vs_neghash_1t", one[i] / one[0]),
        );
        summary =
            summary.with(&format!("mops_{v}_1t"), one[i]).with(&format!("mops_{v}_2t"), two[i]);
    }
    report.summary(summary);
    report
}
