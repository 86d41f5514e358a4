//! The machine's own scaling, measured beside a scaling scenario's rounds.
//!
//! A scenario's `scaling_<n>t` is throughput at n threads over 1 thread; on a shared machine
//! it also moves with whatever else runs there. The calibration is a compute-only load that
//! shares nothing: a chain of dependent multiply-adds, cut into [`CHUNKS`] chunks that the
//! threads take from a counter (as `make-j`'s threads take compiles), in threads spawned for
//! each measurement (as every scaling scenario's are). A scaling scenario adds one
//! calibration per thread count to its interleaved rounds ([`calibrations`]), so a burst of
//! interference lands on the calibration as on the scenario, and reports
//! ([`with_machine_scaling`]):
//!
//! - `machine_scaling_<n>t`: the calibration's rate at n threads over 1 thread (the median
//!   rounds' rates), for every thread count n above 1;
//! - `<scaling>_of_machine` for every `scaling_<n>t…` field of the summary: that scaling over
//!   `machine_scaling_<n>t`. 1.0 is all the machine gives; a noisy window lowers both figures
//!   and leaves the share, a loss of the scenario's own lowers the share;
//! - `machine_line_round_trip_ns`: how long one cache line takes to go from one thread to
//!   another and back (the median over rounds), measured by two threads spawned as the scenario's
//!   are, bouncing a counter ([`round_trip_ns`]). The calibration shares nothing, so it cannot
//!   see this cost; a scenario whose threads write shared lines (a coalesced miss's turns on
//!   the list of calls, the global epoch that a pin's collection advances) pays it. A host that
//!   places two vCPUs on cores far apart makes it several times dearer: a share of the machine
//!   read beside it tells that window from a loss of the scenario's own.

use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Instant;

use crate::report::{Row, Value};

/// Chunks per calibration measurement: divisible by 1, 2, 4, 8 and 16 threads, and fine
/// enough (each about 12 µs) that threads finish within a chunk of each other.
const CHUNKS: usize = 1600;

/// Multiply-adds per chunk: a dependent chain, about 12 µs on a 3 GHz core.
const CHAIN: u64 = 10_000;

/// One chunk: `CHAIN` dependent multiply-adds from `x0`.
fn chunk(x0: u64) -> u64 {
    let mut x = x0;
    for _ in 0..CHAIN {
        x = black_box(x).wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(0x1405_7b7e_f767_814f);
    }
    x
}

/// Chunks per second with `threads` threads sharing [`CHUNKS`] chunks.
pub fn rate(threads: usize) -> f64 {
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                // Relaxed: a work counter; each chunk is independent.
                while let c @ 0..CHUNKS = next.fetch_add(1, Ordering::Relaxed) {
                    black_box(chunk(c as u64));
                }
            });
        }
    });
    CHUNKS as f64 / start.elapsed().as_secs_f64()
}

/// Round trips per line measurement: a few milliseconds between vCPUs far apart.
const ROUND_TRIPS: u32 = 10_000;

/// A counter alone on its cache lines (and the adjacent line a prefetcher pairs with it).
#[repr(align(128))]
struct Line(AtomicU32);

/// Waits until `line` reads `value`: spinning, and yielding now and then, so two threads the
/// scheduler put on one CPU still take turns (slowly: that placement shows in the figure).
fn wait_for(line: &Line, value: u32) {
    let mut spins = 0u32;
    // Acquire: pairs with the other thread's Release store of `value`.
    while line.0.load(Ordering::Acquire) != value {
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(1024) {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Nanoseconds for one cache line to go from one thread to another and back: the mean of
/// [`ROUND_TRIPS`] turns between two threads spawned for the measurement (as a scenario's
/// are), timed after a first, untimed turn that waits for both to start. Each thread writes
/// the counter the other is waiting for.
pub fn round_trip_ns() -> f64 {
    let line = Line(AtomicU32::new(0));
    std::thread::scope(|s| {
        s.spawn(|| {
            for turn in 0..=ROUND_TRIPS {
                wait_for(&line, 2 * turn + 1);
                // Release: pairs with the Acquire load in the other thread's `wait_for`.
                line.0.store(2 * turn + 2, Ordering::Release);
            }
        });
        let timed = s.spawn(|| {
            let mut start = Instant::now();
            for turn in 0..=ROUND_TRIPS {
                if turn == 1 {
                    start = Instant::now();
                }
                // Release: pairs with the Acquire load in the echoing thread's `wait_for`.
                line.0.store(2 * turn + 1, Ordering::Release);
                wait_for(&line, 2 * turn + 2);
            }
            start.elapsed()
        });
        timed.join().expect("no panic").as_nanos() as f64 / f64::from(ROUND_TRIPS)
    })
}

/// One calibration measurement per thread count in `counts`, then one line measurement, to
/// run among a scenario's variants in [`interleaved`](crate::measure::interleaved); the
/// calibrations' figures are rates, the last a round trip in ns.
pub fn calibrations(counts: &[usize]) -> Vec<Box<dyn FnMut() -> f64>> {
    let rates = counts.iter().map(|&n| Box::new(move || rate(n)) as Box<dyn FnMut() -> f64>);
    rates.chain([Box::new(round_trip_ns) as Box<dyn FnMut() -> f64>]).collect()
}

/// `summary` with `machine_scaling_<n>t` for each count n above 1 and
/// `machine_line_round_trip_ns`, then `<field>_of_machine` for each field `scaling_<n>t…` it
/// holds. `figures` are the [`calibrations`]' medians: `figures[k]` the rate at `counts[k]`
/// (`counts[0]` being 1), then the round trip.
pub fn with_machine_scaling(summary: Row, counts: &[usize], figures: &[f64]) -> Row {
    let (&round_trip, rates) = figures.split_last().expect("the round trip ends the figures");
    assert_eq!(rates.len(), counts.len(), "a rate per thread count");
    let machine = |n: usize| counts.iter().position(|&c| c == n).map(|k| rates[k] / rates[0]);
    let shares: Vec<(String, f64)> = summary
        .fields()
        .iter()
        .filter_map(|(key, value)| {
            let n = key.strip_prefix("scaling_")?.split_once('t')?.0.parse().ok()?;
            let Value::Num(scaling) = value else { return None };
            Some((format!("{key}_of_machine"), scaling / machine(n)?))
        })
        .collect();
    let mut summary = summary;
    for (&n, &r) in counts.iter().zip(rates).skip(1) {
        summary = summary.with(&format!("machine_scaling_{n}t"), r / rates[0]);
    }
    summary = summary.with("machine_line_round_trip_ns", round_trip);
    shares.into_iter().fold(summary, |row, (key, share)| row.with(&key, share))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scaling_field_gets_its_share_of_the_machine() {
        let summary = Row::new()
            .with("scaling_2t", 1.5)
            .with("scaling_2t_mutex", 0.5)
            .with("scaling_4t", 3.0)
            .with("ratio_vs_mutex_2t", 3.0)
            .with("scaling_notes", "x");
        let row = with_machine_scaling(summary, &[1, 2, 4], &[10.0, 20.0, 30.0, 70.0]);
        let json = row.to_json();
        for (key, value) in [
            ("machine_line_round_trip_ns", "70"),
            ("machine_scaling_2t", "2"),
            ("machine_scaling_4t", "3"),
            ("scaling_2t_of_machine", "0.75"),
            ("scaling_2t_mutex_of_machine", "0.25"),
            ("scaling_4t_of_machine", "1"),
        ] {
            assert!(json.contains(&format!("\"{key}\": {value}")), "{key}: {json}");
        }
        assert!(!json.contains("ratio_vs_mutex_2t_of") && !json.contains("notes_of"), "{json}");
    }
}
