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
    quick_json_with(scenario, &[])
}

/// [`quick_json`] with more options.
fn quick_json_with(scenario: &str, more: &[&str]) -> (Vec<serde_json::Value>, serde_json::Value) {
    let args: Vec<&str> =
        [scenario, "--quick", "--json"].into_iter().chain(more.iter().copied()).collect();
    let out = bench(&args);
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
    for args in [
        &["no-such-scenario"][..],
        &["selftest", "--bogus"],
        &[],
        &["make-j", "--max-threads"],
        &["make-j", "--max-threads", "1"],
        &["make-j", "--max-threads", "many"],
    ] {
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

#[test]
fn neg_flood_reports_bounds() {
    let (rows, s) = quick_json("neg-flood");
    assert!(!rows.is_empty());
    for f in [
        "per_bucket_once_full",
        "per_bucket_twice_full",
        "per_bucket_twice_rule1",
        "per_bucket_once_unbounded",
        "bytes_per_entry",
    ] {
        assert!(s[f].as_f64().is_some_and(|v| v > 0.0), "{f}: {s}");
    }
    // The bounds are properties of the table, not speed figures: they must hold.
    let cap = s["cap"].as_f64().unwrap();
    assert!(s["per_bucket_once_full"].as_f64().unwrap() <= 3.0, "{s}");
    assert!(s["per_bucket_twice_full"].as_f64().unwrap() <= cap, "{s}");
    assert!(s["per_bucket_once_unbounded"].as_f64().unwrap() > cap, "the flood must flood: {s}");
}

#[test]
fn include_path_negatives_survive_the_flood() {
    const COMPILES: u64 = 10; // --quick
    let (rows, s) = quick_json("include-path");
    // Header h exists in directory h % 11 only; a compile probes 0, 1, ... until it is found.
    let absent_per_compile: u64 = (0..300).map(|h| h % 11).sum();
    let mut rate = std::collections::HashMap::new();
    for variant in ["unbounded", "rule1", "full"] {
        let rows: Vec<_> = rows.iter().filter(|r| r["variant"] == variant).collect();
        assert_eq!(rows.len() as u64, COMPILES, "{variant}: one row per compile");
        let (mut absent, mut hits) = (0, 0);
        for (round, r) in rows.iter().enumerate() {
            assert_eq!(r["compile"], round, "{r}");
            assert_eq!(r["absent_lookups"], absent_per_compile, "the same probes each time: {r}");
            let h = r["negative_hits"].as_u64().unwrap();
            if round == 0 {
                assert_eq!(h, 0, "the first compile meets an empty table: {r}");
            } else {
                (absent, hits) = (absent + absent_per_compile, hits + h);
            }
        }
        let field = match variant {
            "full" => "include_negative_hit_rate".to_owned(),
            v => format!("include_negative_hit_rate_{v}"),
        };
        let reported = s[&field].as_f64().unwrap();
        assert!((reported - hits as f64 / absent as f64).abs() < 1e-12, "{field} from rows: {s}");
        rate.insert(variant, (reported, rows));
    }
    // Hit rates are properties of the table's rules (the hash seed moves them a little), not
    // speed figures. Unbounded: nothing is evicted, so every negative the first compile made
    // answers every later probe.
    let (unbounded, rows) = &rate["unbounded"];
    assert_eq!(*unbounded, 1.0, "{s}");
    assert!(rows.iter().skip(1).all(|r| r["negative_hits"] == absent_per_compile), "{rows:?}");
    // The 2020 run rule alone (about three negatives kept per bucket): the first flood pushes
    // out about 30% of the include-path negatives made before it, and later compiles miss and
    // re-ask the filesystem. That loss is what the default table's admission and ghosts
    // exist to avoid; checking it keeps the scenario's contrast real.
    let (rule1, rows) = &rate["rule1"];
    let after_first_flood = rows[1]["hit_rate"].as_f64().unwrap();
    assert!(after_first_flood < 0.9, "the flood did not hurt the run rule: {}", rows[1]);
    // The default table (run rule, cap, admission, ghosts): the same bound per bucket, yet
    // the include-path negatives keep hitting under the flood, compile after compile.
    let (full, rows) = &rate["full"];
    assert!(*full >= 0.995, "the flood pushed out include-path negatives: {s}");
    for r in rows.iter().skip(1) {
        assert!(r["hit_rate"].as_f64().unwrap() >= 0.99, "{r}");
    }
    assert!(*full > rule1 + 0.02, "admission and ghosts bought nothing: {s}");
}

#[test]
fn map_lookup_reports_ratios() {
    let (rows, s) = quick_json("map-lookup");
    assert_eq!(rows.len(), 5, "one row per map");
    for f in ["ratio_vs_papaya_1t", "ratio_vs_papaya_2t", "scaling_2t"] {
        assert!(s[f].as_f64().is_some_and(|v| v > 0.0), "{f}: {s}");
    }
    assert_machine_shares(&s, &[1, 2]);
}

#[test]
fn lookup_reports_per_component_figures() {
    let (rows, s) = quick_json("lookup");
    assert_eq!(rows.len(), 5, "one row per variant");
    for f in ["ns_per_component", "ratio_vs_papaya_1t", "scaling_2t", "scaling_2t_mutex"] {
        assert!(s[f].as_f64().is_some_and(|v| v > 0.0), "{f}: {s}");
    }
    let ns = s["ns_per_component"].as_f64().unwrap();
    assert_eq!(ns, s["ns_per_component_udcache_1t"].as_f64().unwrap());
    let ratio = ns / s["ns_per_component_papaya_1t"].as_f64().unwrap();
    assert_same(&s, "ratio_vs_papaya_1t", ratio);
    // Scaling is throughput with 2 threads over 1: time per component with 1 over with 2.
    for (field, variant) in [("scaling_2t", "udcache"), ("scaling_2t_mutex", "mutex")] {
        let ns = |t: u32| s[format!("ns_per_component_{variant}_{t}t")].as_f64().unwrap();
        assert_same(&s, field, ns(1) / ns(2));
    }
    assert_machine_shares(&s, &[1, 2]);
}

/// The machine's scaling at every count in `counts` above 1 and its line round trip are in
/// `s`, and every scaling field of `s` (`scaling_<n>t…`) comes with its share of the
/// machine's, computed from the two.
fn assert_machine_shares(s: &serde_json::Value, counts: &[u32]) {
    for n in counts.iter().skip(1) {
        let machine = s[format!("machine_scaling_{n}t")].as_f64();
        assert!(machine.is_some_and(|m| m > 0.0), "machine_scaling_{n}t: {s}");
    }
    // A cache line between two CPUs: tens of nanoseconds at least, far less than a millisecond
    // unless the two threads shared one CPU throughout.
    let round_trip = s["machine_line_round_trip_ns"].as_f64();
    assert!(round_trip.is_some_and(|ns| ns > 1.0 && ns < 1e6), "round trip: {s}");
    let fields = s.as_object().unwrap();
    let scalings: Vec<&String> = fields
        .keys()
        .filter(|k| k.starts_with("scaling_") && !k.ends_with("_of_machine"))
        .collect();
    assert!(scalings.iter().any(|k| *k == "scaling_2t"), "{s}");
    for key in scalings {
        let n = key["scaling_".len()..].split('t').next().unwrap();
        let machine = s[format!("machine_scaling_{n}t")].as_f64().unwrap();
        assert_same(s, &format!("{key}_of_machine"), s[key].as_f64().unwrap() / machine);
    }
}

/// `s[field]` is `expected`, computed from other fields of the same run (a swapped or
/// inverted formula fails here).
fn assert_same(s: &serde_json::Value, field: &str, expected: f64) {
    let got = s[field].as_f64().unwrap_or_else(|| panic!("{field} missing: {s}"));
    assert!((got - expected).abs() <= 1e-9 * expected.abs(), "{field}: {got} vs {expected}: {s}");
}

#[test]
fn make_j_reports_scaling() {
    // Thread counts 1, 2 and 3: the 2-thread fields as without the option, and 3-thread ones.
    let (rows, s) = quick_json_with("make-j", &["--max-threads", "3"]);
    assert_eq!(rows.len(), 2, "udcache and mutex");
    for f in ["scaling_2t", "scaling_2t_mutex", "ratio_vs_mutex_1t", "ratio_vs_mutex_2t"] {
        assert!(s[f].as_f64().is_some_and(|v| v > 0.0), "{f}: {s}");
    }
    for (scaling, rate) in
        [("scaling_3t", "compiles_per_s_udcache"), ("scaling_3t_mutex", "compiles_per_s_mutex")]
    {
        let rate = |t: u32| s[format!("{rate}_{t}t")].as_f64().expect("a rate per count");
        assert_same(&s, scaling, rate(3) / rate(1));
        assert_same(&s, &scaling.replace("3t", "2t"), rate(2) / rate(1));
    }
    assert!(s.get("scaling_4t").is_none(), "no count above --max-threads: {s}");
    assert!(rows.iter().all(|r| r["scaling_3t"].as_f64().is_some()), "{rows:?}");
    // 20 headers x (50 include dirs + the system dir): each name is asked for at least once.
    assert!(s["backend_lookups"].as_u64().is_some_and(|n| n >= 1020), "{s}");
    let (misses, sleeps) = (s["coalesced_misses"].as_u64(), s["coalesced_sleeps"].as_u64());
    assert!(sleeps.is_some_and(|z| Some(z) <= misses), "{s}");
    let rate = |v: &str, t: u32| s[format!("compiles_per_s_{v}_{t}t")].as_f64().unwrap();
    assert_same(&s, "ratio_vs_mutex_3t", rate("udcache", 3) / rate("mutex", 3));
    assert_machine_shares(&s, &[1, 2, 3]);
    assert!(s.get("scaling_3t_of_machine").is_some() && s.get("machine_scaling_4t").is_none());
    for n in 1..=3 {
        let shares = ["start_share", "first_compile_share", "slow_compile_share", "tail_share"]
            .map(|f| s[format!("{f}_{n}t")].as_f64().expect("a share per count"));
        assert!(s[format!("coalesced_wait_share_{n}t")].as_f64().is_some(), "{s}");
        assert!(shares.iter().sum::<f64>() < 1.0, "{n} threads: {shares:?}: {s}");
        assert!(s[format!("steady_compile_us_{n}t")].as_f64().is_some_and(|us| us > 0.0));
    }
}

#[test]
fn children_walk_keeps_its_negatives() {
    let (rows, s) = quick_json("children-walk");
    assert_eq!(rows.len(), 2);
    let ns = |f: &str| s[f].as_f64().unwrap();
    assert_same(&s, "ratio_with_negatives", ns("ns_with_negatives") / ns("ns_without"));
    // The comparison is only meaningful if the negatives are really cached.
    let (kept, added) = (s["negatives_kept"].as_u64().unwrap(), s["negatives_added"].as_u64());
    assert!(kept as f64 >= 0.9 * added.unwrap() as f64 && Some(kept) <= added, "{s}");
}

#[test]
fn dcache_flood_reports_bounds() {
    let (rows, s) = quick_json("dcache-flood");
    assert_eq!(rows.len(), 16, "8 iterations, once and twice");
    for form in ["once", "twice"] {
        let last = rows.iter().rfind(|r| r["form"] == form).expect("a row of each form");
        assert_same(&s, &format!("per_bucket_{form}"), last["per_bucket"].as_f64().unwrap());
    }
    // A dentry entry is 112 bytes and its share of the tables a few more; several times that
    // is not a figure per dentry (divided by buckets, say).
    let bytes = s["bytes_per_dentry"].as_f64().unwrap();
    assert!((112.0..400.0).contains(&bytes), "{s}");
    // The bounds are properties of the cache, not speed figures: they must hold.
    let cap = s["cap"].as_f64().unwrap();
    assert!(s["per_bucket_once"].as_f64().unwrap() <= 3.0, "{s}");
    let twice = s["per_bucket_twice"].as_f64().unwrap();
    assert!(twice > 3.0 && twice <= cap, "the cap, not the run rule, bounds it: {s}");
}

#[test]
fn make_j_reval_reports_lockless_share_scaling_and_access_cost() {
    let (rows, s) = quick_json("make-j-reval");
    assert_eq!(rows.len(), 4, "reval at 1 and 2 threads, then reval and forever throughput");
    let share = s["lockless_share"].as_f64().expect("a number");
    assert!(share > 0.99 && share <= 1.0, "{s}");
    assert!(s["scaling_2t"].as_f64().is_some_and(|v| v > 0.0), "{s}");
    // A difference of two timings: finite, and small against a component's cost.
    let access = s["access_check_ns"].as_f64().expect("a number");
    assert!(access.abs() < s["ns_per_component_no_access"].as_f64().unwrap(), "{s}");
    // Properties of the load, not speeds: the directory changes cost fallbacks only there, and
    // expiry sends the filesystem GETATTRs and ACCESS calls.
    let inside = s["lockless_share_invalidated_dir"].as_f64().unwrap();
    assert!(inside < share, "{s}");
    for f in ["rpc_getattr", "rpc_access", "revalidations", "fallback_access"] {
        assert!(s[f].as_u64().is_some_and(|n| n > 0), "{f}: {s}");
    }
    assert_machine_shares(&s, &[1, 2]);
    assert!(s.get("scaling_2t_forever_of_machine").is_some(), "{s}");
}
