//! `dcache-flood`: the negative-entry flood of Linux's 2020 "increase poison resistance"
//! thread, through the whole [`Dcache`] (where `neg-flood` floods the bare name table).
//!
//! As `dcache_stress.c` does: names `%08x%08x` (iteration, index) in one directory, each
//! resolved once — a miss, so the "filesystem" is asked (it holds nothing) and the answer is
//! cached as a negative dentry — or, in the touch-twice form (`-s`), resolved a second time:
//! a hit sets the negative dentry's referenced bit (the form that defeated the 2020 rule); a
//! miss (the trimming rules took the dentry as it was released) asks the filesystem again and
//! refiles it, as a second `stat` would (rows: `backend_lookups` above the names resolved).
//! Misses go through [`Dcache::resolve`], the FUSE lookup path. Default configuration (both
//! bounding rules, a cap of 6 negatives per bucket); 2^16 buckets, 16 iterations × 2^20 names
//! (`--quick`: 2^12 buckets, 8 × 2^15). Rows: the dentry-state figures after each iteration.
//!
//! Summary fields: `per_bucket_once`, `per_bucket_twice` (dentries per bucket after the last
//! iteration), `bytes_per_dentry` (heap bytes of the whole cache — both tables, bucket heads,
//! dentries with their 16-byte names — per dentry after the single-touch flood, measured with
//! the harness's counting allocator), `cap`, `buckets`.

use std::time::Instant;

use udcache::{Config, Dcache, Errno, Filesystem, InodeSpec, ROOT_INO, Resolved};

use crate::Options;
use crate::alloc_count::settled_live_bytes;
use crate::report::{Report, Row};

/// The per-bucket cap of the default configuration.
const CAP: usize = 6;

/// A filesystem with nothing in it: every lookup is a miss.
struct Empty;

impl Filesystem for Empty {
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        Ok(None)
    }
}

/// One flood; returns (dentries per bucket at the end, heap bytes per dentry).
fn flood(
    report: &mut Report,
    twice: bool,
    buckets: usize,
    iterations: u32,
    names: u32,
) -> (f64, f64) {
    // Each iteration's figures, kept in room taken before the measurement starts (the rows are
    // made after it ends, so that they are not counted as the cache's).
    let mut after: Vec<(udcache::Stats, f64)> = Vec::with_capacity(iterations as usize);
    let mut name = String::with_capacity(16);
    let before = settled_live_bytes();
    let cache = Dcache::new(
        Config::for_entries(buckets)
            .with_buckets(buckets)
            .with_negative_cap(Some(CAP))
            .with_filesystem(std::sync::Arc::new(Empty)),
    );
    assert_eq!(cache.stats().nr_buckets, buckets as u64);
    let start = Instant::now();
    for it in 1..=iterations {
        for i in 0..names {
            use std::fmt::Write;
            name.clear();
            write!(name, "{it:08x}{i:08x}").unwrap();
            for _ in 0..1 + usize::from(twice) {
                let answer = cache.resolve(ROOT_INO, name.as_bytes());
                assert_eq!(answer, Ok(Resolved::Negative));
            }
        }
        after.push((cache.stats(), start.elapsed().as_secs_f64()));
    }
    let s = cache.stats();
    let bytes = (settled_live_bytes() - before) as f64 / s.nr_dentry.max(1) as f64;
    drop(cache);
    for (it, (s, seconds)) in (1u64..).zip(after) {
        report.row(
            Row::new()
                .with("form", if twice { "twice" } else { "once" })
                .with("iteration", it)
                .with("nr_dentry", s.nr_dentry)
                .with("per_bucket", s.per_bucket())
                .with("nr_negative", s.nr_negative)
                .with("negative_evictions", s.negative_evictions)
                .with("backend_lookups", s.backend_lookups)
                .with("seconds", seconds),
        );
    }
    (s.per_bucket(), bytes)
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (buckets, iterations, names) =
        if opts.quick { (1 << 12, 8, 1 << 15) } else { (1 << 16, 16, 1 << 20) };
    let mut report = Report::new("dcache-flood");
    let (once, bytes_per_dentry) = flood(&mut report, false, buckets, iterations, names);
    let (twice, _) = flood(&mut report, true, buckets, iterations, names);
    report.summary(
        Row::new()
            .with("per_bucket_once", once)
            .with("per_bucket_twice", twice)
            .with("bytes_per_dentry", bytes_per_dentry)
            .with("cap", CAP)
            .with("buckets", buckets),
    );
    report
}
