//! Regression tests for crashes the fuzzer found (fuzz/fuzz_targets/neghash.rs).
#![cfg(not(loom))]

use udcache_neghash::{Config, NegHash};

/// Found by the fuzzer: removing an entry from the middle of a chain joined two runs of
/// unreferenced negatives into one longer than rule 1 allows (four in a row).
#[test]
fn removing_an_entry_between_two_runs_retrims() {
    let table: NegHash<()> =
        NegHash::new(Config::with_buckets(1).with_negative_cap(None).with_admission(false));
    // The chain: a, b, p, c, d. A new entry goes in front of the first negative, so `p` goes
    // in as a negative (held: it ends the runs) and turns positive once `a` and `b` are in.
    for name in [&b"d"[..], b"c"] {
        drop(table.insert(0, name, true, ()).unwrap());
    }
    let p = table.insert(0, b"p", true, ()).unwrap();
    for name in [&b"b"[..], b"a"] {
        drop(table.insert(0, name, true, ()).unwrap());
    }
    assert!(p.make_positive());
    let mut chain = Vec::new();
    table.for_each_entry(|e| chain.push(e.name().to_vec()));
    assert_eq!(chain, [&b"a"[..], b"b", b"p", b"c", b"d"]);
    assert_eq!(table.stats().evicted_rule1, 0, "two runs of two");
    table.verify().unwrap();
    assert!(p.remove());
    drop(p);
    table.verify().unwrap();
    assert_eq!(table.stats().evicted_rule1, 1, "the joined run lost its fourth entry");
}
