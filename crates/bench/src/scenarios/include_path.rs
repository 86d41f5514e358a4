//! `include-path`: the workload the 2020 thread's reviewers feared a negative-entry bound would
//! break — compiler include paths.
//!
//! 11 include directories × 300 header names; each header exists in exactly one directory
//! (header `h` in directory `h % 11`). A "compile" looks up every header in directory order
//! until found: a cached positive ends the search, a cached negative moves on, a miss asks the
//! "filesystem" and caches its answer (positive or negative). Between compiles, a flood of
//! 100,000 unique names (looked up once, missed, cached negative) runs in another directory,
//! on the same table. The figure: of the compile lookups after the first compile whose answer
//! is "absent", the share answered by a cached negative entry.
//!
//! Variants `unbounded`, `rule1`, `full` as in `neg-flood`, 2^16 buckets; 20 compiles
//! (`--quick`: 2^12 buckets and a flood of 6,250 names, the same pressure per bucket; 10
//! compiles). Summary field:
//! `include_negative_hit_rate` (for `full`), and the same for the other variants.

use udcache_neghash::{NegHash, Polarity, epoch};

use super::neg_flood::config;

use crate::Options;
use crate::report::{Report, Row};

const DIRS: u64 = 11;
const HEADERS: u64 = 300;
const FLOOD_PARENT: u64 = 1000;

#[derive(Default)]
struct Counts {
    absent: u64,
    negative_hits: u64,
}

/// One compile; returns the counts of "absent" answers and how many came from the cache.
fn compile(table: &NegHash<()>) -> Counts {
    let mut c = Counts::default();
    for h in 0..HEADERS {
        let name = format!("header{h:03}.h");
        for dir in 0..DIRS {
            let present = dir == h % DIRS;
            let guard = epoch::pin();
            match table.lookup(&guard, dir, name.as_bytes()) {
                Some(e) if !e.is_negative() => break,
                Some(_) => c.negative_hits += 1,
                None => {
                    let polarity = if present { Polarity::Positive } else { Polarity::Negative };
                    drop(table.insert(dir, name.as_bytes(), polarity, ()));
                }
            }
            if present {
                break;
            }
            c.absent += 1;
        }
    }
    c
}

fn flood(table: &NegHash<()>, round: u64, names: u64) {
    for i in 0..names {
        let name = format!("{round:08x}{i:08x}");
        let guard = epoch::pin();
        if table.lookup(&guard, FLOOD_PARENT, name.as_bytes()).is_none() {
            drop(table.insert(FLOOD_PARENT, name.as_bytes(), Polarity::Negative, ()));
        }
    }
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (buckets, compiles, flood_names) =
        if opts.quick { (1 << 12, 10, 6_250) } else { (1 << 16, 20, 100_000) };
    let mut report = Report::new("include-path");
    let mut summary = Row::new();
    for variant in ["unbounded", "rule1", "full"] {
        let table: NegHash<()> = NegHash::new(config(variant, buckets));
        let mut after_first = Counts::default();
        for round in 0..compiles {
            let c = compile(&table);
            if round > 0 {
                after_first.absent += c.absent;
                after_first.negative_hits += c.negative_hits;
            }
            report.row(
                Row::new()
                    .with("variant", variant)
                    .with("compile", round)
                    .with("absent_lookups", c.absent)
                    .with("negative_hits", c.negative_hits)
                    .with("hit_rate", c.negative_hits as f64 / c.absent.max(1) as f64)
                    .with("entries", table.stats().entries),
            );
            flood(&table, round, flood_names);
        }
        let rate = after_first.negative_hits as f64 / after_first.absent.max(1) as f64;
        let field = if variant == "full" {
            "include_negative_hit_rate".to_owned()
        } else {
            format!("include_negative_hit_rate_{variant}")
        };
        summary = summary.with(&field, rate);
    }
    report.summary(summary);
    report
}
