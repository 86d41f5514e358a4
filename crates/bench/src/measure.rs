//! Timing helpers shared by the scenarios.
//!
//! The machine the figures come from is shared and noisy, so comparisons are made inside one
//! process run: variants are measured round-robin (`interleaved`), and a figure is the median of
//! its rounds, so a burst of interference lands on every variant alike instead of on one.

use std::time::Instant;

/// Measures `variants` round-robin for `rounds` rounds; returns each variant's median.
///
/// Each closure runs one measurement and returns its figure (for example ns per operation).
pub fn interleaved(variants: &mut [&mut dyn FnMut() -> f64], rounds: usize) -> Vec<f64> {
    let mut samples = vec![Vec::with_capacity(rounds); variants.len()];
    for _ in 0..rounds.max(1) {
        for (i, run) in variants.iter_mut().enumerate() {
            samples[i].push(run());
        }
    }
    samples.into_iter().map(median).collect()
}

/// Nanoseconds per iteration of `f`, run `iters` times.
pub fn ns_per_iter(iters: u64, mut f: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    for i in 0..iters {
        f(i);
    }
    start.elapsed().as_nanos() as f64 / iters.max(1) as f64
}

/// The median of `v` (the mean of the middle two for an even count); NaN when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }

    #[test]
    fn interleaved_runs_round_robin() {
        let order = std::cell::RefCell::new(Vec::new());
        let mut a = || {
            order.borrow_mut().push('a');
            1.0
        };
        let mut b = || {
            order.borrow_mut().push('b');
            2.0
        };
        let m = interleaved(&mut [&mut a, &mut b], 3);
        assert_eq!(m, vec![1.0, 2.0]);
        assert_eq!(order.into_inner(), vec!['a', 'b', 'a', 'b', 'a', 'b']);
    }
}
