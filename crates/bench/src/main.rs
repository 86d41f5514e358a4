//! `udcache-bench`: the side-by-side benchmark harness.
//!
//! ```text
//! udcache-bench list
//! udcache-bench <scenario> [--quick] [--json] [--max-threads N]
//! ```
//!
//! Every comparison variant of a scenario runs in the same process run, interleaved where it
//! matters, and ratios are computed from that run: the machines this runs on are shared and
//! noisy, so only same-run ratios are meaningful. `--quick` finishes in under a minute; the full
//! run is what the README reports. With `--json`, one JSON object per line, the last line being
//! the summary `{"scenario": "<name>", ...}`. `--max-threads N` makes the
//! scenarios that measure thread scaling (`lookup`, `map-lookup`, `make-j`) run each variant
//! at 1, 2, 4, … and N threads (default 2: only 1 and 2), adding `scaling_<n>t` fields for the
//! counts above 2; the 1- and 2-thread fields stay as they are. Those scenarios and
//! `make-j-reval` also report the machine's own scaling, measured in the same rounds
//! (`machine_scaling_<n>t`, each scaling as a share of it, and the line round trip between
//! two threads, `machine_line_round_trip_ns`: see [`machine`]).

mod alloc_count;
mod machine;
mod measure;
mod report;
mod scenarios;

use std::process::ExitCode;

#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;

/// Options common to every scenario.
pub struct Options {
    /// Smaller sizes: finishes in under 60 seconds.
    pub quick: bool,
    /// One JSON object per line instead of a table.
    pub json: bool,
    /// The thread counts scaling scenarios measure: 1, 2, then doubling up to `--max-threads`.
    pub threads: Vec<usize>,
}

/// 1, 2, 4, … below `max`, then `max` (`max` ≥ 2).
fn thread_counts(max: usize) -> Vec<usize> {
    let mut counts: Vec<usize> =
        std::iter::successors(Some(1usize), |n| Some(n * 2)).take_while(|&n| n < max).collect();
    counts.push(max);
    counts
}

const USAGE: &str = "\
usage: udcache-bench list
       udcache-bench <scenario> [--quick] [--json] [--max-threads N]

  list             list the scenarios
  --quick          smaller sizes; finishes in under 60 seconds
  --json           one JSON object per line; the last line is the summary
  --max-threads N  lookup, map-lookup, make-j: also 4, 8, ... and N threads (N >= 2; default 2)
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = Options { quick: false, json: false, threads: thread_counts(2) };
    let mut name = None;
    let mut args = args.iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--max-threads" => match args.next().and_then(|n| n.parse::<usize>().ok()) {
                Some(max @ 2..=1024) => opts.threads = thread_counts(max),
                _ => return usage_error("--max-threads takes a number from 2 to 1024"),
            },
            "--json" => opts.json = true,
            "-h" | "--help" | "help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            s if s.starts_with('-') => return usage_error(&format!("unknown option {s}")),
            s if name.is_none() => name = Some(s),
            s => return usage_error(&format!("unexpected argument {s}")),
        }
    }
    match name {
        None => usage_error("no scenario given"),
        Some("list") => {
            for s in scenarios::ALL {
                println!("{:<20} {}", s.name, s.about);
            }
            ExitCode::SUCCESS
        }
        Some(n) => match scenarios::find(n) {
            Some(s) => {
                for line in (s.run)(&opts).render(opts.json) {
                    println!("{line}");
                }
                ExitCode::SUCCESS
            }
            None => usage_error(&format!("unknown scenario {n} (try `udcache-bench list`)")),
        },
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprint!("udcache-bench: {msg}\n{USAGE}");
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::thread_counts;

    #[test]
    fn thread_counts_double_up_to_the_maximum() {
        assert_eq!(thread_counts(2), [1, 2]);
        assert_eq!(thread_counts(3), [1, 2, 3]);
        assert_eq!(thread_counts(16), [1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(12), [1, 2, 4, 8, 12]);
    }
}
