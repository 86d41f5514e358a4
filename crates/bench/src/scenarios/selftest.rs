//! `selftest`: a trivial scenario that exercises the harness contract end to end.
//!
//! Two variants sum the same slice — front to back and back to front — measured interleaved in
//! one run; the summary reports both and their ratio. Summary fields: `ns_forward`,
//! `ns_reverse`, `ratio_reverse_vs_forward`, `rounds`.

use std::hint::black_box;

use crate::Options;
use crate::measure::{interleaved, ns_per_iter};
use crate::report::{Report, Row};

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (len, rounds) = if opts.quick { (4096, 5) } else { (65536, 21) };
    let data: Vec<u64> = (0..len).collect();
    let per_round = 64;
    let sum = |reverse: bool| {
        ns_per_iter(per_round, |_| {
            let d = black_box(&data);
            let s = if reverse {
                d.iter().rev().fold(0u64, |a, &b| a.wrapping_add(b))
            } else {
                d.iter().fold(0u64, |a, &b| a.wrapping_add(b))
            };
            black_box(s);
        }) / len as f64
    };
    let m = interleaved(&mut [&mut || sum(false), &mut || sum(true)], rounds);
    let mut report = Report::new("selftest");
    report.row(Row::new().with("variant", "forward").with("ns_per_element", m[0]));
    report.row(Row::new().with("variant", "reverse").with("ns_per_element", m[1]));
    report.summary(
        Row::new()
            .with("ns_forward", m[0])
            .with("ns_reverse", m[1])
            .with("ratio_reverse_vs_forward", m[1] / m[0])
            .with("rounds", rounds),
    );
    report
}
