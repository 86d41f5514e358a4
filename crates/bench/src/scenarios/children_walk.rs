//! `children-walk`: iterating a directory's positive children while it also holds a million
//! negative ones.
//!
//! In Linux's 2020 "increase poison resistance" thread, setting an inotify watch on a directory
//! walks its children to mark the positive ones, and took 0.5 s with millions of negative
//! children in the way (0.00001 s once they were swept behind the positives). Here one cache
//! holds two directories with the same 10 positive children (regular files): `with_negatives`
//! also has 1,000,000 negative children (`--quick`: 250,000), `without` has none. The figure
//! is the time of one [`Dcache::children`] call on each, measured over many calls, the two
//! interleaved round by round.
//!
//! The negatives must really be cached, or the comparison says nothing: the name table gets
//! 2^21 buckets (about half a negative per bucket, so the bounding rules evict few) with the
//! default cap of 6 per bucket, and the report gives how many of the negatives stayed.
//!
//! Summary fields: `ratio_with_negatives` (time with the negatives over time without; target
//! ≤ 2), `negatives_kept`, `negatives_added`, `ns_with_negatives`, `ns_without`.

use std::hint::black_box;

use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO};

use crate::Options;
use crate::measure::{interleaved, ns_per_iter};
use crate::report::{Report, Row};

const POSITIVES: u64 = 10;
const BUCKETS: usize = 1 << 21;

/// Makes directory `name` at the root, with `POSITIVES` files and `negatives` negative
/// children; returns its inode number.
fn directory(cache: &Dcache, ino: u64, name: &str, negatives: u32) -> u64 {
    let dir = InodeSpec { ino, kind: FileType::Directory, fs_data: 0 };
    cache.add(ROOT_INO, name.as_bytes(), dir).unwrap();
    for i in 0..POSITIVES {
        let file = InodeSpec { ino: ino * 1000 + i, kind: FileType::Regular, fs_data: i };
        cache.add(ino, format!("file{i:02}.c").as_bytes(), file).unwrap();
    }
    for i in 0..negatives {
        cache.add_negative(ino, format!("{i:08x}{i:08x}").as_bytes()).unwrap();
    }
    ino
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (negatives, calls, rounds): (u32, u64, usize) =
        if opts.quick { (250_000, 20_000, 5) } else { (1_000_000, 100_000, 11) };
    let cache =
        Dcache::new(Config::for_entries(BUCKETS).with_buckets(BUCKETS).with_negative_cap(Some(6)));
    let with = directory(&cache, 2, "with_negatives", negatives);
    let without = directory(&cache, 3, "without", 0);
    let kept = cache.stats().nr_negative;
    for dir in [with, without] {
        assert_eq!(cache.children(dir).unwrap().len() as u64, POSITIVES);
    }

    let walk = |dir: u64| {
        ns_per_iter(calls, |_| {
            black_box(cache.children(black_box(dir)).unwrap());
        })
    };
    let ns = interleaved(&mut [&mut || walk(with), &mut || walk(without)], rounds);

    let mut report = Report::new("children-walk");
    for (variant, ns, negs) in [("with_negatives", ns[0], kept), ("without", ns[1], 0)] {
        report.row(
            Row::new()
                .with("variant", variant)
                .with("positives", POSITIVES)
                .with("negatives_cached", negs)
                .with("ns_per_walk", ns)
                .with("ns_per_positive", ns / POSITIVES as f64),
        );
    }
    report.summary(
        Row::new()
            .with("ratio_with_negatives", ns[0] / ns[1])
            .with("negatives_kept", kept)
            .with("negatives_added", u64::from(negatives))
            .with("ns_with_negatives", ns[0])
            .with("ns_without", ns[1])
            .with("buckets", cache.stats().nr_buckets),
    );
    report
}
