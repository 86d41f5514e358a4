//! `gp-batch`: the allocation test of Linux's "xfs: require an rcu grace period before inode recycle" thread — is reuse after a grace period free?
//!
//! One thread allocates B inode-sized (256-byte) objects, each with a fixed unit of work
//! standing for the filesystem operation around it (default 1 µs of computation), then frees
//! them all; repeatedly, for B in {1, 4, …, 1024}. A second thread pins and unpins continuously,
//! as path walks do. Three variants of the same pool, interleaved round by round:
//! - `immediate`: reuses at once (unsafe with lockless readers: the baseline);
//! - `cond_sync`: reuses the newest freed object after `cond_synchronize` on its cookie (that thread's policy);
//! - `pool`: `GpPool` as shipped (reuse only completed cookies, allocate fresh meanwhile).
//!
//! Then the same with the work unit at 0, for the raw cost of an alloc/free pair.
//!
//! Each row's `latency_objects` is what the median grace-period latency requires at the pool's
//! rate (objects/s × `gp_latency_us`), `latency_max_objects` what the worst one seen requires
//! (a reader preempted while pinned holds every grace period back for a scheduler quantum: the
//! pool grows through it rather than stall, and keeps those objects in circulation).
//!
//! Summary fields: `min_ratio_pool`, `min_ratio_cond_sync`, `stalls`, `max_peak_over_batch`,
//! `pool_overhead_ns`, plus `gp_latency_us` (median time from `start_poll` to completion with
//! the reader running) and `work_ns` (the work per object the calibration aims at: `work` is
//! run for as many iterations as took that long, measured before the readers start).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use udcache_gp::{GpPool, PoolBox, PoolConfig};

use crate::Options;
use crate::measure::{interleaved, median};
use crate::report::{Report, Row};

type Inode = [u64; 32];

const BATCHES: [usize; 10] = [1, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const VARIANTS: [&str; 3] = ["immediate", "cond_sync", "pool"];

fn make_pool(variant: &str) -> GpPool<Inode> {
    let config = match variant {
        // SAFETY: the benchmark's reader never dereferences pooled objects; `immediate` is
        // only the speed baseline.
        "immediate" => unsafe { PoolConfig::default().reuse_immediately() },
        "cond_sync" => PoolConfig::default().wait_for_grace_period(),
        _ => PoolConfig::default(),
    };
    // Re-init on reuse, like an inode's: a new generation and a few fields cleared.
    GpPool::with_config(
        config,
        || [0; 32],
        |i| {
            i[0] += 1;
            i[1..8].fill(0);
        },
    )
}

/// Busy work of about `iters` dependent multiply-adds.
fn work(iters: u64) {
    let mut x = black_box(1u64);
    for _ in 0..iters {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    black_box(x);
}

/// Iterations of `work` that take about `ns` nanoseconds here.
fn calibrate(ns: f64) -> u64 {
    if ns <= 0.0 {
        return 0;
    }
    let iters = 1_000_000;
    let samples: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            work(iters);
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    (ns / median(samples)).round().max(1.0) as u64
}

/// ns per alloc/free pair over `pairs` pairs in batches of `b`.
fn batch_loop(pool: &GpPool<Inode>, b: usize, pairs: usize, work_iters: u64) -> f64 {
    let rounds = (pairs / b).max(1);
    let mut held: Vec<PoolBox<'_, Inode>> = Vec::with_capacity(b);
    let start = Instant::now();
    for _ in 0..rounds {
        for _ in 0..b {
            let mut obj = pool.alloc();
            obj[2] = obj[0];
            work(work_iters);
            held.push(obj);
        }
        held.drain(..).for_each(PoolBox::free);
    }
    start.elapsed().as_nanos() as f64 / (rounds * b) as f64
}

/// µs from `start_poll` to `poll` seeing it complete, while the reader runs: (median, max).
fn gp_latency_us(samples: usize) -> (f64, f64) {
    let v: Vec<f64> = (0..samples)
        .map(|_| {
            let c = udcache_gp::start_poll();
            let t = Instant::now();
            while !udcache_gp::poll(&c) {
                std::hint::spin_loop();
            }
            t.elapsed().as_nanos() as f64 / 1000.0
        })
        .collect();
    let max = v.iter().copied().fold(0.0, f64::max);
    (median(v), max)
}

struct Measured {
    ns: Vec<f64>,
    stalls: u64,
    peak: usize,
}

/// Runs every variant at batch size `b`, interleaved, each on its own pool.
fn measure(b: usize, pairs: usize, rounds: usize, work_iters: u64) -> Vec<Measured> {
    let pools: Vec<GpPool<Inode>> = VARIANTS.iter().map(|v| make_pool(v)).collect();
    let mut runs: Vec<_> =
        pools.iter().map(|p| move || batch_loop(p, b, pairs, work_iters)).collect();
    let mut refs: Vec<&mut dyn FnMut() -> f64> =
        runs.iter_mut().map(|r| r as &mut dyn FnMut() -> f64).collect();
    let ns = interleaved(&mut refs, rounds);
    pools
        .iter()
        .zip(ns)
        .map(|(p, ns)| {
            let s = p.stats();
            Measured { ns: vec![ns], stalls: s.stalls, peak: s.peak_objects }
        })
        .collect()
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (pairs, rounds) = if opts.quick { (16_384, 3) } else { (131_072, 5) };
    let work_ns = 1000.0;
    let work_iters = calibrate(work_ns);
    let stop = AtomicBool::new(false);
    let mut report = Report::new("gp-batch");
    let (mut min_pool, mut min_cond, mut stalls, mut max_peak, mut overhead) =
        (f64::INFINITY, f64::INFINITY, 0u64, 0f64, f64::NEG_INFINITY);
    let (mut latency, mut latency_max) = (0.0, 0.0);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                black_box(udcache_gp::pin());
            }
        });
        (latency, latency_max) = gp_latency_us(if opts.quick { 200 } else { 1000 });
        for &b in &BATCHES {
            let m = measure(b, pairs, rounds, work_iters);
            let raw = measure(b, pairs, rounds, 0);
            let per_s = |ns: f64| 1e9 / ns;
            let base = per_s(m[0].ns[0]);
            let (cond, pool) = (per_s(m[1].ns[0]), per_s(m[2].ns[0]));
            min_pool = min_pool.min(pool / base);
            min_cond = min_cond.min(cond / base);
            stalls += m[2].stalls + raw[2].stalls;
            // The peak that matters is the one under the workload (with the work unit); the
            // raw run frees tens of millions of objects a second and is reported beside it.
            let peak = m[2].peak;
            max_peak = max_peak.max(peak as f64 / b as f64);
            let over = raw[2].ns[0] - raw[0].ns[0];
            overhead = overhead.max(over);
            report.row(
                Row::new()
                    .with("batch", b)
                    .with("immediate_per_s", base)
                    .with("cond_sync_per_s", cond)
                    .with("pool_per_s", pool)
                    .with("ratio_cond_sync", cond / base)
                    .with("ratio_pool", pool / base)
                    .with("cond_sync_stalls", m[1].stalls)
                    .with("pool_stalls", m[2].stalls + raw[2].stalls)
                    .with("pool_peak", peak)
                    .with("latency_objects", (pool * latency / 1e6).ceil())
                    .with("latency_max_objects", (pool * latency_max / 1e6).ceil())
                    .with("raw_pool_peak", raw[2].peak)
                    .with("raw_immediate_ns", raw[0].ns[0])
                    .with("raw_cond_sync_ns", raw[1].ns[0])
                    .with("raw_pool_ns", raw[2].ns[0]),
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
    report.summary(
        Row::new()
            .with("min_ratio_pool", min_pool)
            .with("min_ratio_cond_sync", min_cond)
            .with("stalls", stalls)
            .with("max_peak_over_batch", max_peak)
            .with("pool_overhead_ns", overhead)
            .with("gp_latency_us", latency)
            .with("gp_latency_max_us", latency_max)
            .with("work_ns", work_ns),
    );
    report
}
