//! Counters that do not serialise threads: striped by bucket, relaxed, summed on read.

use std::fmt;

use crate::sync::{AtomicI64, Ordering};

/// Which counter.
#[derive(Clone, Copy)]
pub(crate) enum C {
    Entries,
    Unused,
    Negative,
    EvictRule1,
    EvictRule2,
    EvictGlobal,
    EvictShrink,
}
const COUNTERS: usize = 7;
const STRIPES: usize = 32;

#[repr(align(128))]
struct Stripe([AtomicI64; COUNTERS]);

/// A set of counters, each split over [`STRIPES`] cache lines; writers pick a stripe by bucket.
pub(crate) struct Counters(Box<[Stripe]>);

impl Counters {
    pub(crate) fn new() -> Self {
        Counters((0..STRIPES).map(|_| Stripe(std::array::from_fn(|_| AtomicI64::new(0)))).collect())
    }

    /// Adds `delta` to counter `c` in the stripe of `bucket`.
    pub(crate) fn add(&self, bucket: usize, c: C, delta: i64) {
        // Relaxed: statistics; nothing is ordered by them.
        self.0[bucket % STRIPES].0[c as usize].fetch_add(delta, Ordering::Relaxed);
    }

    pub(crate) fn sum(&self, c: C) -> u64 {
        let total: i64 = self.0.iter().map(|s| s.0[c as usize].load(Ordering::Relaxed)).sum();
        total.max(0) as u64
    }
}

/// A snapshot of the table's counters, in the spirit of `/proc/sys/fs/dentry-state`.
///
/// Each counter is exact once writers are quiet; under load the fields are read one after the
/// other and may disagree by the operations in flight.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Entries in the table.
    pub entries: u64,
    /// Entries on an LRU list: unused when they were put there. As the kernel's `nr_unused`
    /// counts, an entry held again stays counted until `shrink` or an eviction meets it on the
    /// list (holding an entry does not take the list's lock).
    pub unused: u64,
    /// Negative entries.
    pub negative: u64,
    /// Hash buckets (fixed at creation).
    pub buckets: u64,
    /// Negatives evicted by the run rule (at most three unreferenced in a row).
    pub evicted_rule1: u64,
    /// Negatives evicted by the per-bucket cap.
    pub evicted_rule2: u64,
    /// Negatives evicted by the global share cap.
    pub evicted_global: u64,
    /// Entries evicted by `shrink`.
    pub evicted_shrink: u64,
    /// Entries made in a recycled pool cell (one freed at least a grace period before) rather
    /// than a fresh allocation. An insert of a name already present takes no cell; two inserts
    /// of one new name racing each other may both take one, and the loser's counts here too.
    pub recycled: u64,
    /// Freed entries' cells parked in the pool, waiting for reuse.
    pub parked: u64,
}

impl Stats {
    /// Entries per bucket.
    pub fn per_bucket(&self) -> f64 {
        self.entries as f64 / self.buckets.max(1) as f64
    }
}

impl fmt::Display for Stats {
    /// `nr_dentry nr_unused nr_negative nr_buckets`, then the eviction counts, on one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.entries,
            self.unused,
            self.negative,
            self.buckets,
            self.evicted_rule1,
            self.evicted_rule2,
            self.evicted_global,
            self.evicted_shrink
        )
    }
}
