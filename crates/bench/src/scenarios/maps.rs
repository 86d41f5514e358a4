//! What the lookup scenarios share: the concurrent maps udcache is compared with, random
//! lookup orders, running lookups on several threads, and the fields for thread counts above 2.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::{Hash, RandomState};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::report::Row;

/// The baselines' names, in the order scenarios report them.
pub(super) const BASELINES: [&str; 4] = ["papaya", "dashmap", "rwlock", "mutex"];

/// A baseline map to `u64`, hashed with std's `RandomState` (SipHash-1-3, what udcache's name
/// table runs on each name before keyed multiplies mix in the parent): `papaya`, `dashmap`,
/// `rwlock` (`RwLock<HashMap>`) or `mutex` (`Mutex<HashMap>`, the single lock of libfuse's
/// high-level node table).
pub(super) enum Baseline<K> {
    Papaya(papaya::HashMap<K, u64, RandomState>),
    DashMap(dashmap::DashMap<K, u64, RandomState>),
    RwLock(RwLock<HashMap<K, u64, RandomState>>),
    Mutex(Mutex<HashMap<K, u64, RandomState>>),
}

impl<K: Hash + Eq + Send + Sync> Baseline<K> {
    /// The baseline called `variant` (one of [`BASELINES`]) holding `pairs`.
    pub(super) fn build(variant: &str, pairs: impl Iterator<Item = (K, u64)>) -> Self {
        match variant {
            "papaya" => {
                let m = papaya::HashMap::with_hasher(RandomState::new());
                let g = m.pin();
                pairs.for_each(|(k, v)| {
                    g.insert(k, v);
                });
                drop(g);
                Baseline::Papaya(m)
            }
            "dashmap" => {
                let m = dashmap::DashMap::with_hasher(RandomState::new());
                pairs.for_each(|(k, v)| {
                    m.insert(k, v);
                });
                Baseline::DashMap(m)
            }
            "rwlock" => Baseline::RwLock(RwLock::new(pairs.collect())),
            "mutex" => Baseline::Mutex(Mutex::new(pairs.collect())),
            other => panic!("no baseline {other}"),
        }
    }

    /// One lookup, pinning (papaya) or locking (the others) for it alone.
    pub(super) fn get<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> Option<u64>
    where
        K: Borrow<Q>,
    {
        match self {
            Baseline::Papaya(m) => m.pin().get(key).copied(),
            Baseline::DashMap(m) => m.get(key).map(|v| *v),
            Baseline::RwLock(m) => m.read().unwrap().get(key).copied(),
            Baseline::Mutex(m) => m.lock().unwrap().get(key).copied(),
        }
    }
}

/// `threads` threads' lookup orders: `per_thread` random indexes below `n` each (xorshift,
/// seeded by `seed` and the thread number, so every run and variant sees the same orders).
pub(super) fn random_orders(seed: u64, n: u64, per_thread: usize, threads: usize) -> Vec<Vec<u32>> {
    (0..threads as u64)
        .map(|t| {
            let mut x = seed ^ (t + 1);
            (0..per_thread)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % n) as u32
                })
                .collect()
        })
        .collect()
}

/// Runs `work` on `threads` threads, thread i given `orders[i]`; returns the results and the
/// wall time of the whole.
pub(super) fn on_threads<R: Send>(
    orders: &[Vec<u32>],
    threads: usize,
    work: impl Fn(&[u32]) -> R + Sync,
) -> (Vec<R>, Duration) {
    let start = Instant::now();
    let results = std::thread::scope(|s| {
        let work = &work;
        let handles: Vec<_> = orders[..threads].iter().map(|o| s.spawn(move || work(o))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    (results, start.elapsed())
}

/// How a scenario names one variant's figures in a row.
pub(super) struct Fields<'a> {
    /// The figure is `<figure>_<n>t`.
    pub(super) figure: &'a str,
    /// The scaling is `scaling_<n>t<scaling_suffix>`.
    pub(super) scaling_suffix: &'a str,
    /// The figure is a time per operation (else a rate): scaling is its inverse ratio.
    pub(super) time_per_op: bool,
}

/// Adds the figure at `n` threads and the throughput at `n` threads over 1 thread to `row`,
/// named by `fields`, for each thread count `n` above 2; `figures[k]` is the figure at
/// `counts[k]` (`counts[0]` is 1).
pub(super) fn with_more_threads(
    mut row: Row,
    fields: Fields,
    counts: &[usize],
    figures: &[f64],
) -> Row {
    let Fields { figure, scaling_suffix, time_per_op } = fields;
    for (&n, &f) in counts.iter().zip(figures).skip(2) {
        let scaling = if time_per_op { figures[0] / f } else { f / figures[0] };
        row = row
            .with(&format!("{figure}_{n}t"), f)
            .with(&format!("scaling_{n}t{scaling_suffix}"), scaling);
    }
    row
}
