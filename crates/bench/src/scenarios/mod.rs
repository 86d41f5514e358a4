//! The scenario registry: each scenario is one module with a `run` function.
//!
//! To add one, write `scenarios/<name>.rs` with `pub fn run(opts: &Options) -> Report` and list
//! it in [`ALL`]. Its issue fixes its name and its summary fields: they are a contract.

use crate::Options;
use crate::report::Report;

mod children_walk;
mod dcache_flood;
mod gp_batch;
mod include_path;
mod lookup;
mod make_j;
mod make_j_reval;
mod map_lookup;
mod maps;
mod neg_flood;
mod readdir_modified;
mod selftest;

/// A runnable benchmark scenario.
pub struct Scenario {
    /// The name given on the command line.
    pub name: &'static str,
    /// One line on what it measures.
    pub about: &'static str,
    /// Runs it.
    pub run: fn(&Options) -> Report,
}

/// Every scenario, in the order `list` prints them.
pub const ALL: &[Scenario] = &[
    Scenario {
        name: "selftest",
        about: "exercises the harness contract: two interleaved variants and a ratio",
        run: selftest::run,
    },
    Scenario {
        name: "neg-flood",
        about: "the negative-entry flood (once and touch-twice): unbounded vs rule1 vs full",
        run: neg_flood::run,
    },
    Scenario {
        name: "include-path",
        about: "include-path compiles interleaved with a flood: negative hit rate per variant",
        run: include_path::run,
    },
    Scenario {
        name: "map-lookup",
        about: "hit throughput at 1 and 2 threads: neghash vs papaya, dashmap, RwLock, Mutex",
        run: map_lookup::run,
    },
    Scenario {
        name: "gp-batch",
        about: "the alloc/free batch loop: immediate reuse vs cond_synchronize vs GpPool",
        run: gp_batch::run,
    },
    Scenario {
        name: "readdir-modified",
        about: "list a large directory while it changes: restart vs cursor vs cookie index",
        run: readdir_modified::run,
    },
    Scenario {
        name: "lookup",
        about: "cached 6-component path walk at 1 and 2 threads: udcache vs maps per component",
        run: lookup::run,
    },
    Scenario {
        name: "make-j",
        about: "the make -j load (negative lookups through 50 -I dirs): udcache vs a Mutex",
        run: make_j::run,
    },
    Scenario {
        name: "dcache-flood",
        about: "the negative-entry flood through the whole Dcache (once and touch-twice): dentries per bucket",
        run: dcache_flood::run,
    },
    Scenario {
        name: "children-walk",
        about: "positive children of a dir with 10 positives + 1M negatives vs 10 and none",
        run: children_walk::run,
    },
    Scenario {
        name: "make-j-reval",
        about: "make-j with expiring entries, a changing include dir and access checks",
        run: make_j_reval::run,
    },
];

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    ALL.iter().find(|s| s.name == name)
}
