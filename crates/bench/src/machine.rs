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
//!   and leaves the share, a loss of the scenario's own lowers the share.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// One calibration measurement per thread count in `counts`, to run among a scenario's
/// variants in [`interleaved`](crate::measure::interleaved); their figures are rates.
pub fn calibrations(counts: &[usize]) -> Vec<Box<dyn FnMut() -> f64>> {
    counts.iter().map(|&n| Box::new(move || rate(n)) as Box<dyn FnMut() -> f64>).collect()
}

/// `summary` with `machine_scaling_<n>t` for each count n above 1 (`rates[k]` is the
/// calibration's rate at `counts[k]`, `counts[0]` being 1), then `<field>_of_machine` for each
/// field `scaling_<n>t…` it holds.
pub fn with_machine_scaling(summary: Row, counts: &[usize], rates: &[f64]) -> Row {
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
        let row = with_machine_scaling(summary, &[1, 2, 4], &[10.0, 20.0, 30.0]);
        let json = row.to_json();
        for (key, value) in [
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
