//! Admission and the ghost slot (`trim.rs`): a first-time negative whose release would make its
//! run longer than three is evicted itself, and its hash goes to the bucket's ghost slot;
//! missed again while it is there (a refault), it is kept, and the settled negatives stay too.
#![cfg(not(loom))]

use udcache_neghash::{Config, NegHash, Polarity};

/// One bucket, the run rule with admission (the defaults), no cap: every victim is the run
/// rule's.
fn table(admission: bool) -> NegHash<()> {
    NegHash::new(Config::with_buckets(1).with_negative_cap(None).with_admission(admission))
}

fn miss(t: &NegHash<()>, name: &[u8]) {
    // Inserted and released at once: a remembered miss, unused.
    drop(t.insert(7, name, Polarity::Negative, ()).inserted().unwrap());
}

/// Whether each name is cached, read off the chain: a lookup would set referenced bits, which
/// end runs and so change what the rules do next.
fn cached(t: &NegHash<()>, names: &[&[u8]]) -> Vec<bool> {
    let mut on_chain = Vec::new();
    t.for_each_entry(|e| on_chain.push(e.name().to_vec()));
    names.iter().map(|n| on_chain.iter().any(|c| c == n)).collect()
}

#[test]
fn a_negative_missed_twice_is_admitted_and_one_missed_once_is_not() {
    let t = table(true);
    for n in [b"a", b"b", b"c"] {
        miss(&t, n);
    }
    miss(&t, b"x");
    assert_eq!(cached(&t, &[b"a", b"b", b"c", b"x"]), [true, true, true, false], "x refused");
    miss(&t, b"x");
    assert_eq!(cached(&t, &[b"a", b"b", b"c", b"x"]), [true; 4], "x refaulted: kept");
    assert_eq!(t.stats().evicted_rule1, 1, "only x's first miss was evicted");
    t.verify().unwrap();
}

#[test]
fn without_admission_a_first_miss_pushes_out_the_oldest_of_its_run() {
    let t = table(false);
    for n in [b"a", b"b", b"c", b"x"] {
        miss(&t, n);
    }
    assert_eq!(cached(&t, &[b"a", b"b", b"c", b"x"]), [false, true, true, true]);
    t.verify().unwrap();
}
