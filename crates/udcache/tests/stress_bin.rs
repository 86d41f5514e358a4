//! The `udcache-stress` binary (dcache_stress.c against the cache), run for real with small
//! sizes: its output lines, the bound on negative dentries under both floods, and its
//! handling of bad command lines.

use std::process::{Command, Output};

fn stress(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_udcache-stress")).args(args).output().expect("run the tool")
}

/// One dentry-state block: `nr_dentry`, `nr_buckets`, `nr_unused`, `nr_negative`.
#[derive(Debug, Clone, Copy)]
struct State {
    dentry: u64,
    buckets: u64,
    unused: u64,
    negative: u64,
    avg: f64,
}

/// What a successful run printed.
struct Run {
    text: String,
    /// The cap from the header line.
    cap: u64,
    /// Every dentry-state block, in order (the first before any iteration).
    states: Vec<State>,
}

/// The number after `<key> = ` on a line, and the figure after the tab.
fn field<'a>(line: &'a str, key: &str) -> Option<(u64, &'a str)> {
    let rest = line.strip_prefix(key)?.strip_prefix(" = ")?;
    let (n, after) = rest.split_once('\t')?;
    Some((n.parse().ok()?, after))
}

fn run_ok(args: &[&str]) -> Run {
    let out = stress(args);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{args:?}: {}\n{text}", String::from_utf8_lossy(&out.stderr));
    let header = text.lines().next().unwrap();
    let cap = header
        .split(", at most ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no cap in the header: {header}"));
    let lines: Vec<&str> = text.lines().collect();
    let mut states = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some((dentry, _)) = field(line, "nr_dentry") else { continue };
        let (buckets, avg) = field(lines[i + 1], "nr_buckets").expect("nr_buckets follows");
        let (unused, _) = field(lines[i + 2], "nr_unused").expect("nr_unused follows");
        let (negative, _) = field(lines[i + 3], "nr_negative").expect("nr_negative follows");
        let avg = avg.strip_suffix(" avg").and_then(|a| a.parse().ok()).expect("an average");
        states.push(State { dentry, buckets, unused, negative, avg });
    }
    Run { text, cap, states }
}

fn count(text: &str, prefix: &str) -> usize {
    text.lines().filter(|l| l.starts_with(prefix)).count()
}

const BUCKETS: u64 = 512;
const SMALL: [&str; 6] = ["-i", "3", "-n", "10000", "-b", "512"];

/// Checks the shape of a flood's output and the bound on every state; returns the states.
fn flood(extra: &[&str]) -> Run {
    let args: Vec<&str> = SMALL.iter().chain(extra).copied().collect();
    let run = run_ok(&args);
    // Before, after each of 3 iterations, after the removal.
    assert_eq!(run.states.len(), 5, "{}", run.text);
    assert_eq!(count(&run.text, "start iteration "), 3);
    assert_eq!(count(&run.text, "iteration 3 complete in "), 1, "{}", run.text);
    assert!(run.text.contains("total names 30000"), "{}", run.text);
    assert_eq!(count(&run.text, "inotify time: "), 4, "{}", run.text);
    // The C tool's line exactly (`inotify time: %f seconds`), the count on the next.
    let lines: Vec<&str> = run.text.lines().collect();
    for (i, line) in lines.iter().enumerate().filter(|(_, l)| l.starts_with("inotify time: ")) {
        let secs = line.strip_prefix("inotify time: ").and_then(|l| l.strip_suffix(" seconds"));
        assert!(secs.is_some_and(|t| t.parse::<f64>().is_ok()), "{line}");
        assert!(lines[i + 1].starts_with("positive children: "), "{}", lines[i + 1]);
    }
    assert!(run.text.contains("working in temporary directory dcache_stress."));
    assert!(run.text.contains("remove complete in "));
    for s in &run.states {
        assert_eq!(s.buckets, BUCKETS);
        assert!(s.unused <= s.dentry && s.negative <= s.dentry, "{s:?}");
        assert!((s.avg - s.dentry as f64 / s.buckets as f64).abs() < 0.051, "{s:?}");
        assert!(s.negative <= run.cap * BUCKETS, "negatives beyond the cap: {s:?}");
    }
    // The flood really floods: 10,000 names per iteration over 512 buckets would be about 20
    // per bucket unbounded; the bound keeps well over one per bucket.
    assert!(run.states[1].negative > BUCKETS, "{:?}", run.states[1]);
    run
}

#[test]
fn single_touch_flood_saturates_near_three_per_bucket() {
    let run = flood(&[]);
    let after: Vec<u64> = run.states[1..4].iter().map(|s| s.negative).collect();
    for n in &after {
        assert!(*n <= 3 * BUCKETS, "the run rule holds three per bucket: {after:?}");
    }
    // Removing the working directory drops its negatives with it.
    assert_eq!(run.states[4].dentry, 0, "{}", run.text);
}

#[test]
fn touch_twice_flood_stays_under_the_cap() {
    let run = flood(&["-s"]);
    // Referenced negatives defeat the run rule alone (000); the cap still holds, and the
    // flood does get past three per bucket, so the cap is what bounds it.
    assert!(run.states[3].negative > 3 * BUCKETS, "{:?}", run.states[3]);
}

#[test]
fn other_dir_floods_both_directories() {
    let run = flood(&["-o", "elsewhere"]);
    // The working directory's negatives go with it; the other directory's stay.
    let last = run.states[4];
    assert!(last.negative > 0 && last.negative <= run.cap * BUCKETS, "{last:?}");
}

#[test]
fn mknod_unlink_leaves_negatives() {
    let run = flood(&["-u"]);
    let s = run.states[3];
    assert_eq!(s.negative, s.dentry - 1, "only the working directory is positive: {s:?}");
    // Negatives made by unlink go with their directory too.
    assert_eq!(run.states[4].dentry, 0, "{}", run.text);
}

#[test]
fn mkdir_chdir_keeps_every_directory() {
    let run = run_ok(&["-i", "2", "-n", "300", "-b", "64", "-d"]);
    assert_eq!(run.states.len(), 3, "no removal with -d: {}", run.text);
    let last = run.states[2];
    assert_eq!((last.dentry, last.negative), (601, 0), "positives are never evicted");
    assert_eq!(count(&run.text, "inotify time: "), 0, "-d skips the walks");
    assert!(run.text.contains("leave temporary directory dcache_stress."));
}

#[test]
fn prefix_goes_in_front_of_the_names() {
    let ok = stress(&["-i", "1", "-n", "10", "-b", "16", "-p", "tmp_"]);
    assert!(ok.status.success());
    // A prefix that makes names invalid is refused before anything runs.
    let out = stress(&["-p", "a/b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-p"));
}

#[test]
fn help_prints_usage() {
    let out = stress(&["-h"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for opt in ["-i", "-n", "-p", "-o", "-u", "-s", "-d", "-b"] {
        assert!(text.contains(&format!("  {opt} ")), "{opt} in usage: {text}");
    }
}

#[test]
fn bad_command_lines_exit_2_with_a_message() {
    for (args, says) in [
        (&["-x"][..], "unknown option -x"),
        (&["-n"], "-n needs a value"),
        (&["-n", "lots"], "not a number"),
        (&["-i", "-1"], "not a number"),
        (&["-b", "0"], "buckets"),
        (&["-u", "-d"], "exclude"),
        (&["stray"], "unexpected argument"),
    ] {
        let out = stress(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?} ran");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.contains("usage:"), "{args:?}: {err}");
    }
}
