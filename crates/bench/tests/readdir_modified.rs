//! The `readdir-modified` scenario through the real binary, at the tiny test size
//! (`UDCACHE_BENCH_TINY=1`, n = 5,000): the summary carries the fields, sanely.

use std::process::Command;

#[test]
fn readdir_modified_reports_the_summary_fields() {
    let out = Command::new(env!("CARGO_BIN_EXE_udcache-bench"))
        .args(["readdir-modified", "--quick", "--json"])
        .env("UDCACHE_BENCH_TINY", "1")
        .output()
        .expect("run harness");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let summary = lines.last().unwrap();
    assert_eq!(summary["scenario"], "readdir-modified");
    let ratio = summary["calls_over_ideal"].as_f64().unwrap();
    assert!(ratio > 0.5 && ratio <= 1.02, "index backend calls over ideal: {ratio}");
    let lin = summary["linearity"].as_f64().unwrap();
    assert!(lin > 0.0 && lin.is_finite(), "linearity {lin}");
    assert!(summary["restart_calls_over_ideal"].as_f64().unwrap() > 0.0);
    assert_eq!(summary["missing_or_duplicated"], 0);
    // Every variant ran at n and 2n, with and without the writer.
    let rows = &lines[..lines.len() - 1];
    for v in ["restart", "cursor", "index"] {
        assert_eq!(rows.iter().filter(|r| r["variant"] == v).count(), 4, "{v}");
    }
    assert!(rows.iter().all(|r| r["finished"] == "yes" || r["finished"] == "did not finish"));
    let index_ok = rows.iter().filter(|r| r["variant"] == "index").all(|r| r["finished"] == "yes");
    assert!(index_ok, "the index variant always finishes");
}
