//! `udcache-bench`: the side-by-side benchmark harness.
//!
//! ```text
//! udcache-bench list
//! udcache-bench <scenario> [--quick] [--json]
//! ```
//!
//! Every comparison variant of a scenario runs in the same process run, interleaved where it
//! matters, and ratios are computed from that run: the machines this runs on are shared and
//! noisy, so only same-run ratios are meaningful. `--quick` finishes in under a minute; the full
//! run is what the README reports. With `--json`, one JSON object per line, the last line being
//! the summary `{"scenario": "<name>", ...}`.

mod alloc_count;
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
}

const USAGE: &str = "\
usage: udcache-bench list
       udcache-bench <scenario> [--quick] [--json]

  list      list the scenarios
  --quick   smaller sizes; finishes in under 60 seconds
  --json    one JSON object per line; the last line is the summary
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = Options { quick: false, json: false };
    let mut name = None;
    for a in &args {
        match a.as_str() {
            "--quick" => opts.quick = true,
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
