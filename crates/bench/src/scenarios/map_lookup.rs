//! `map-lookup`: hit throughput of `NegHash` lookups against the usual concurrent maps.
//!
//! The same keys (parent id, 16-byte name) in every map, all hashed with std's `RandomState`
//! (SipHash-1-3, which `NegHash` runs on the name before keyed multiplies mix in the parent);
//! each lookup pins (NegHash, papaya) or locks (the others) on its own, as a single name
//! lookup would. Variants: `neghash`, `papaya`, `dashmap`,
//! `rwlock` (`RwLock<HashMap>`), `mutex` (`Mutex<HashMap>`), each at 1 and 2 threads (and
//! more with `--max-threads`), interleaved round by round. 100,000 keys (`--quick`: 20,000), random order. `NegHash` is
//! sized by `Config::for_entries`, at most one key per bucket: the load the open-addressing
//! maps run at (papaya and hashbrown keep at most 7/8 of their slots full), so every map
//! spends about the same memory on its table.
//!
//! Summary fields: `ratio_vs_papaya_1t`, `ratio_vs_papaya_2t` (NegHash lookups/s over papaya's: a
//! throughput ratio, where `lookup`'s field of the same name is a time ratio),
//! `scaling_2t` (NegHash 2-thread over 1-thread), plus `mops_<variant>_<threads>t`; with
//! `--max-threads`, `mops_neghash_<n>t` and `scaling_<n>t` for each count n above 2; and the
//! machine's own scaling, measured in the same rounds (see [`crate::machine`]):
//! `machine_scaling_<n>t` for every count, `scaling_<n>t_of_machine` and
//! `machine_line_round_trip_ns`.

use std::hint::black_box;

use udcache_neghash::{Config, NegHash, Polarity, epoch};

use super::maps::{BASELINES, Baseline, Fields, on_threads, random_orders, with_more_threads};
use crate::measure::interleaved;
use crate::report::{Report, Row};
use crate::{Options, machine};

type Key = (u64, Vec<u8>);

enum Map {
    NegHash(NegHash<u64>),
    Baseline(Baseline<Key>),
}

fn build(variant: &str, keys: &[Key]) -> Map {
    let pairs = keys.iter().enumerate().map(|(i, k)| (k.clone(), i as u64));
    match variant {
        "neghash" => {
            let t = NegHash::new(Config::for_entries(keys.len()));
            for (k, v) in pairs {
                drop(t.insert(k.0, &k.1, Polarity::Positive, v));
            }
            Map::NegHash(t)
        }
        _ => Map::Baseline(Baseline::build(variant, pairs)),
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
            Map::Baseline(m) => m.get(k),
        };
        hits += u64::from(black_box(hit).is_some());
    }
    hits
}

/// Million lookups per second with `threads` threads, each doing `order.len()` lookups.
fn mops(map: &Map, keys: &[Key], orders: &[Vec<u32>], threads: usize) -> f64 {
    let (hits, time) = on_threads(orders, threads, |o| lookups(map, keys, o));
    let total = (orders[0].len() * threads) as u64;
    assert_eq!(hits.iter().sum::<u64>(), total, "every key is present");
    total as f64 / time.as_secs_f64() / 1e6
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (n, per_thread, rounds): (u32, usize, usize) =
        if opts.quick { (20_000, 400_000, 5) } else { (100_000, 2_000_000, 9) };
    let keys: Vec<Key> =
        (0..n).map(|i| (u64::from(i % 64), format!("{:016x}", i).into_bytes())).collect();
    let counts = &opts.threads;
    let orders =
        random_orders(0x9e37_79b9_7f4a_7c15, u64::from(n), per_thread, counts[counts.len() - 1]);
    let variants: Vec<&str> = ["neghash"].into_iter().chain(BASELINES).collect();
    let maps: Vec<Map> = variants.iter().map(|v| build(v, &keys)).collect();
    let mut runs: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for &threads in counts {
        for m in &maps {
            let (keys, orders) = (&keys, &orders);
            runs.push(Box::new(move || mops(m, keys, orders, threads)));
        }
    }
    runs.extend(machine::calibrations(counts));
    let mut refs: Vec<&mut dyn FnMut() -> f64> = runs.iter_mut().map(|r| &mut **r as _).collect();
    let m = interleaved(&mut refs, rounds);
    let (m, machine_figures) = m.split_at(counts.len() * variants.len());
    // at[k][i]: variant i at counts[k] threads.
    let at: Vec<&[f64]> = m.chunks(variants.len()).collect();
    let (one, two) = (at[0], at[1]);
    let across = |i: usize| -> Vec<f64> { at.iter().map(|a| a[i]).collect() };
    let rate = |figure| Fields { figure, scaling_suffix: "", time_per_op: false };
    let mut report = Report::new("map-lookup");
    let mut summary = Row::new()
        .with("ratio_vs_papaya_1t", one[0] / one[1])
        .with("ratio_vs_papaya_2t", two[0] / two[1])
        .with("scaling_2t", two[0] / one[0]);
    for (i, v) in variants.iter().enumerate() {
        let row = Row::new()
            .with("variant", *v)
            .with("mops_1t", one[i])
            .with("mops_2t", two[i])
            .with("scaling_2t", two[i] / one[i])
            .with("ratio_vs_neghash_1t", one[i] / one[0]);
        report.row(with_more_threads(row, rate("mops"), counts, &across(i)));
        summary =
            summary.with(&format!("mops_{v}_1t"), one[i]).with(&format!("mops_{v}_2t"), two[i]);
    }
    let summary = with_more_threads(summary, rate("mops_neghash"), counts, &across(0));
    report.summary(machine::with_machine_scaling(summary, counts, machine_figures));
    report
}
