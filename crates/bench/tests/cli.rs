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

#[test]
fn selftest_quick_json_ends_with_a_summary() {
    let out = bench(&["selftest", "--quick", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "rows and a summary expected: {text}");
    for l in &lines {
        serde_json::from_str::<serde_json::Value>(l).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    let summary: serde_json::Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(summary["scenario"], "selftest");
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
