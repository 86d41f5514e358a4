//! `neg-flood`: the negative-entry flood of Linux's 2020 "increase poison resistance" thread.
//!
//! Names are formatted as `dcache_stress.c` does (`%08x%08x`: iteration, index); each is looked
//! up once, missed, inserted as a negative entry and released. In the touch-twice form (`-s`)
//! each name is then touched again the same way: a hit sets its referenced bit — the form that
//! defeats the 2020 rule — and a miss (the trimming rules took the entry as it was released)
//! inserts it again, as a second `stat` would (rows: `second_touch_hits`). Three tables, same
//! sizes: `unbounded` (no trimming), `rule1` (the 2020 rule), `full` (rule 1 and the
//! per-bucket cap). 2^16 buckets, 16 iterations × 2^20 names (`--quick`: 2^12 buckets,
//! 8 × 2^15). Rows: entries per bucket after each iteration.
//!
//! A table whose chains grow without bound makes every lookup and insert walk them: at the full
//! size the unbounded variants reach hundreds of entries per chain and each name costs
//! microseconds (the slowdown of walks over negative entries the 2020 thread measured). Each
//! flood therefore has a time budget (120 s in the full run); a flood that runs out stops after
//! the iteration in progress, its last row says `finished: false`, and its summary figure is
//! the entries per bucket it had reached — a lower bound of where it was going.
//!
//! Summary fields: `per_bucket_once_full`, `per_bucket_twice_full`, `per_bucket_twice_rule1`,
//! `per_bucket_once_unbounded`, `cap`, `bytes_per_entry` (heap bytes per entry for 16-byte
//! names, table included — bucket heads, ghost slots, LRU heads — measured with a counting
//! allocator on the `full` table after the single-touch flood, where about 3 entries share a
//! bucket), and `per_bucket_once_rule1`.

use std::time::{Duration, Instant};

use udcache_neghash::{Config, NegHash, Polarity, Stats, epoch};

use crate::Options;
use crate::alloc_count::settled_live_bytes;
use crate::report::{Report, Row};

const CAP: usize = 6;

/// The table for a variant: `unbounded` (no trimming), `rule1` (the 2020 rule exactly), `full`
/// (everything: rule 1 with admission and ghosts, and the per-bucket cap).
pub(super) fn config(variant: &str, buckets: usize) -> Config {
    let c = Config::with_buckets(buckets);
    match variant {
        "unbounded" => c.with_rule1(false).with_negative_cap(None),
        "rule1" => c.with_admission(false).with_negative_cap(None),
        _ => c.with_negative_cap(Some(CAP)),
    }
}

/// One flood; returns (entries per bucket at the end, heap bytes per entry).
fn flood(
    report: &mut Report,
    variant: &str,
    twice: bool,
    buckets: usize,
    iterations: u32,
    names: u32,
    budget: Duration,
) -> (f64, f64) {
    // Each iteration's figures, kept in room taken before the measurement starts (the rows are
    // made after it ends, so that they are not counted as the table's).
    let mut after: Vec<(Stats, u64, f64)> = Vec::with_capacity(iterations as usize);
    let mut name = String::with_capacity(16);
    let before = settled_live_bytes();
    let table: NegHash<()> = NegHash::new(config(variant, buckets));
    let start = Instant::now();
    let mut second_hits = 0u64;
    for it in 0..iterations {
        for i in 0..names {
            use std::fmt::Write;
            name.clear();
            write!(name, "{it:08x}{i:08x}").unwrap();
            let guard = epoch::pin();
            // A stat: a hit, or a miss that inserts the name as a negative entry.
            let touch = || {
                let hit = table.lookup(&guard, 1, name.as_bytes()).is_some();
                if !hit {
                    drop(table.insert(1, name.as_bytes(), Polarity::Negative, ()));
                }
                hit
            };
            touch();
            if twice && touch() {
                second_hits += 1;
            }
        }
        after.push((table.stats(), second_hits, start.elapsed().as_secs_f64()));
        if start.elapsed() > budget {
            break;
        }
    }
    let s = table.stats();
    let bytes = (settled_live_bytes() - before) as f64 / s.entries.max(1) as f64;
    drop(table);
    for (it, (s, second_hits, seconds)) in after.into_iter().enumerate() {
        let mut row = Row::new()
            .with("variant", variant)
            .with("form", if twice { "twice" } else { "once" })
            .with("iteration", it)
            .with("entries", s.entries)
            .with("per_bucket", s.per_bucket())
            .with("evicted_rule1", s.evicted_rule1)
            .with("evicted_rule2", s.evicted_rule2)
            .with("seconds", seconds)
            .with("finished", it + 1 == iterations as usize || seconds <= budget.as_secs_f64());
        if twice {
            row = row.with("second_touch_hits", second_hits);
        }
        report.row(row);
    }
    (s.per_bucket(), bytes)
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (buckets, iterations, names, budget) = if opts.quick {
        (1 << 12, 8, 1 << 15, Duration::from_secs(60))
    } else {
        (1 << 16, 16, 1 << 20, Duration::from_secs(120))
    };
    let mut report = Report::new("neg-flood");
    let mut summary = Row::new();
    let mut bytes_per_entry = 0.0;
    for twice in [false, true] {
        for variant in ["unbounded", "rule1", "full"] {
            let (per_bucket, bytes) =
                flood(&mut report, variant, twice, buckets, iterations, names, budget);
            if variant == "full" && !twice {
                bytes_per_entry = bytes;
            }
            let field = format!("per_bucket_{}_{variant}", if twice { "twice" } else { "once" });
            summary = summary.with(&field, per_bucket);
        }
    }
    report.summary(summary.with("cap", CAP).with("bytes_per_entry", bytes_per_entry));
    report
}
