//! The harness contract, checked through the real binary.

use std::process::Command;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_udcache-bench")).args(args).output().expect("run harness")
}

#[test]
fn list_names_selftest() {
    let out = bench(&["list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l.split_whitespace().next() == Some("selftest")), "{text}");
}

/// Runs `scenario --quick --json`, checks every line is JSON, returns the rows and the summary.
pub fn quick_json(scenario: &str) -> (Vec<serde_json::Value>, serde_json::Value) {
    let out = bench(&[scenario, "--quick", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let summary = lines.pop().expect("a summary line");
    assert_eq!(summary["scenario"], scenario);
    (lines, summary)
}

#[test]
fn selftest_quick_json_ends_with_a_summary() {
    let (rows, summary) = quick_json("selftest");
    assert!(!rows.is_empty(), "rows before the summary");
    let ratio = summary["ratio_reverse_vs_forward"].as_f64().expect("ratio is a number");
    let a = summary["ns_forward"].as_f64().unwrap();
    let b = summary["ns_reverse"].as_f64().unwrap();
    assert!(a > 0.0 && b > 0.0);
    assert!((ratio - b / a).abs() < 1e-9 * ratio.max(1.0), "ratio computed from the same run");
}

#[test]
fn human_output_is_a_table_with_summary() {
    let out = bench(&["selftest", "--quick"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("summary:") && text.contains("ratio_reverse_vs_forward"), "{text}");
}

#[test]
fn unknown_scenario_and_option_are_usage_errors() {
    for args in [&["no-such-scenario"][..], &["selftest", "--bogus"], &[]] {
        let out = bench(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
    }
}

#[test]
fn gp_batch_reports_its_contract_fields() {
    let (rows, summary) = quick_json("gp-batch");
    assert_eq!(rows.len(), 10, "one row per batch size");
    for field in
        ["min_ratio_pool", "min_ratio_cond_sync", "max_peak_over_batch", "pool_overhead_ns"]
    {
        assert!(summary[field].as_f64().is_some(), "{field} missing: {summary}");
    }
    assert!(summary["min_ratio_pool"].as_f64().unwrap() > 0.0);
    // An uncapped GpPool never waits: this is a property, not a speed figure.
    assert_eq!(summary["stalls"], 0, "{summary}");
    assert!(rows.iter().all(|r| r["cond_sync_stalls"].as_u64().is_some()));
}
