//! The scenario registry: each scenario is one module with a `run` function.
//!
//! To add one, write `scenarios/<name>.rs` with `pub fn run(opts: &Options) -> Report` and list
//! it in [`ALL`]. Its issue fixes its name and its summary fields: they are a contract.

use crate::Options;
use crate::report::Report;

mod gp_batch;
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
        name: "gp-batch",
        about: "003's alloc/free batch loop: immediate reuse vs cond_synchronize vs GpPool",
        run: gp_batch::run,
    },
];

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    ALL.iter().find(|s| s.name == name)
}
