//! What every loom model of this crate builds on.

use std::sync::atomic::{AtomicUsize, Ordering};

use udcache::Config;

/// A loom model runner: at most `preemptions` preemptions per execution, and room for the
/// branches a cache's writers take.
pub fn builder(preemptions: usize) -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.max_branches = 20_000;
    b
}

/// One bucket per table: the tables' random hash keys then pick nothing, so every execution
/// of a model touches the same atomics (loom needs a deterministic model).
pub fn loom_config() -> Config {
    Config::for_entries(16).with_buckets(1)
}

/// Counts, across a model's executions, how often an outcome happened (a std atomic: outside
/// the model, read after it with [`counts`] to check that each outcome happened at all).
#[allow(dead_code, reason = "each model file includes this module; not all count outcomes")]
pub fn bump(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// What [`bump`] counted.
#[allow(dead_code, reason = "as for `bump`")]
pub fn counts<const N: usize>(counters: &[AtomicUsize; N]) -> [usize; N] {
    counters.each_ref().map(|c| c.load(Ordering::Relaxed))
}
