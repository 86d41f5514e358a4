//! Regression tests for crashes the fuzzer found (fuzz/fuzz_targets/neghash.rs) and defects
//! reviews found.
#![cfg(not(loom))]

use udcache_neghash::{Config, NegHash, Polarity, epoch};

/// Found by the fuzzer: removing an entry from the middle of a chain joined two runs of
/// unreferenced negatives into one longer than rule 1 allows (four in a row).
#[test]
fn removing_an_entry_between_two_runs_retrims() {
    let table: NegHash<()> =
        NegHash::new(Config::with_buckets(1).with_negative_cap(None).with_admission(false));
    // The chain: a, b, p, c, d. A new entry goes in front of the first negative, so `p` goes
    // in as a negative (held: it ends the runs) and turns positive once `a` and `b` are in.
    for name in [&b"d"[..], b"c"] {
        drop(table.insert(0, name, Polarity::Negative, ()).inserted().unwrap());
    }
    let p = table.insert(0, b"p", Polarity::Negative, ()).inserted().unwrap();
    for name in [&b"b"[..], b"a"] {
        drop(table.insert(0, name, Polarity::Negative, ()).inserted().unwrap());
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

fn chain(t: &NegHash<()>) -> Vec<Vec<u8>> {
    let mut chain = Vec::new();
    t.for_each_entry(|e| chain.push(e.name().to_vec()));
    chain
}

/// Admission evicted a released negative that sat between two runs and did not look at the
/// chain again: the run before it and the run after it became one of four.
#[test]
fn admission_evicting_an_entry_between_two_runs_retrims() {
    let t: NegHash<()> = NegHash::new(Config::with_buckets(1).with_negative_cap(None));
    for name in [&b"d"[..], b"c", b"b"] {
        drop(t.insert(0, name, Polarity::Negative, ()).inserted().unwrap());
    }
    // Held, `r` ends the runs: `a` before it, `b c d` after it.
    let r = t.insert(0, b"r", Polarity::Negative, ()).inserted().unwrap();
    drop(t.insert(0, b"a", Polarity::Negative, ()).inserted().unwrap());
    assert_eq!(chain(&t), [&b"a"[..], b"r", b"b", b"c", b"d"]);
    t.verify().unwrap();
    // Released, `r` starts a run of four (r b c d): admission evicts it, joining `a` to `b c d`.
    drop(r);
    t.verify().unwrap();
    assert_eq!(chain(&t), [&b"a"[..], b"b", b"c"], "the joined run lost its fourth entry");
}

/// When every settled negative of an over-cap bucket was protected, rule 2 spent their
/// chances by clearing only `REFERENCED`: a refault's working-set mark survived, so the next
/// time the bucket went over the cap a newer unprotected negative went instead of the oldest
/// one whose chance was spent.
#[test]
fn rule_2_spends_a_refaults_working_set_mark_with_its_reference() {
    let t: NegHash<()> =
        NegHash::new(Config::with_buckets(1).with_rule1(false).with_negative_cap(Some(3)));
    let miss = |name: &[u8]| drop(t.insert(0, name, Polarity::Negative, ()).inserted().unwrap());
    // `a` goes at `d`'s insert and leaves a ghost; then each refault is kept (working set)
    // and pushes out the oldest unprotected entry, whose ghost lets it refault next.
    for name in [&b"a"[..], b"b", b"c", b"d", b"a", b"b", b"c", b"d"] {
        miss(name);
    }
    // At `d`'s refault `c`, `b` and `a` were all protected: their chances were spent and the
    // oldest, `a`, went (`d`, being inserted, was held).
    assert_eq!(chain(&t), [&b"d"[..], b"c", b"b"]);
    assert!(t.get(0, b"d").unwrap().remove());
    miss(b"e"); // [e c b]: at the cap
    miss(b"f"); // over it: the oldest unprotected settled negative is `b`
    assert_eq!(chain(&t), [&b"f"[..], b"e", b"c"]);
}

/// `shrink(usize::MAX)`, "everything unused", overflowed the scan's bound.
#[test]
fn shrinking_by_usize_max_shrinks_everything() {
    let t: NegHash<()> = NegHash::new(Config::with_buckets(64).with_negative_cap(None));
    for i in 0..100u32 {
        drop(t.insert(0, format!("p{i}").as_bytes(), Polarity::Positive, ()).inserted().unwrap());
    }
    assert_eq!(t.shrink(usize::MAX), 100);
    assert_eq!(t.stats().entries, 0);
}

/// Counts what a table holds: (entries, negatives).
fn counts<V: Send + Sync + 'static>(t: &NegHash<V>) -> (u64, u64) {
    (t.stats().entries, t.stats().negative)
}

/// A shrink spent the second chance of a referenced negative between two runs, and rule 1
/// then evicted entries of the joined run that the shrink did not count: it went on to evict
/// positives for the count it was short, and returned less than it removed. (Found through
/// the C ABI: a directory with files and one looked-up miss, then a flood of misses.)
#[test]
fn shrink_counts_what_rule_1_evicts_after_a_spent_chance() {
    let t: NegHash<()> = NegHash::new(Config::with_buckets(16));
    for i in 0..20 {
        drop(
            t.insert(2, format!("file{i}").as_bytes(), Polarity::Positive, ()).inserted().unwrap(),
        );
    }
    drop(t.insert(2, b"looked-up", Polarity::Negative, ()).inserted().unwrap());
    assert!(t.lookup(&epoch::pin(), 2, b"looked-up").is_some());
    for i in 0..1000 {
        drop(t.insert(3, format!("flood{i}").as_bytes(), Polarity::Negative, ()));
    }
    t.verify().unwrap();
    let (entries, negatives) = counts(&t);
    let n = usize::try_from(negatives).unwrap();
    assert_eq!(t.shrink(n), n);
    assert_eq!(counts(&t), (entries - negatives, 0), "exactly the negatives went");
    t.verify().unwrap();
}

/// A second chance whose spending would make rule 1 evict more than the shrink has left to
/// evict is not spent: `shrink(1)` evicts one entry, not the five that spending `r`'s chance
/// in the middle of a chain of seven negatives (a run of seven: rule 1 takes four) and the
/// eviction after it would have.
#[test]
fn a_shrink_never_evicts_more_than_asked() {
    let t: NegHash<()> = NegHash::new(Config::with_buckets(1).with_negative_cap(None));
    let miss = |name: &[u8]| drop(t.insert(0, name, Polarity::Negative, ()).inserted().unwrap());
    // `r` is evicted, leaving its ghost: inserted again, it refaults (protected).
    miss(b"r");
    assert_eq!(t.shrink(1), 1);
    // `d e f` held while `r` and `a b c` are released: `r` comes first on the LRU.
    let held: Vec<_> = [&b"f"[..], b"e", b"d"]
        .map(|n| t.insert(0, n, Polarity::Negative, ()).inserted().unwrap())
        .into();
    miss(b"r");
    for name in [&b"c"[..], b"b", b"a"] {
        miss(name);
    }
    drop(held);
    assert_eq!(chain(&t), [&b"a"[..], b"b", b"c", b"r", b"d", b"e", b"f"]);
    assert!(t.bucket_shape(0)[3].referenced, "`r` is protected");
    t.verify().unwrap();
    assert_eq!(t.shrink(1), 1);
    assert_eq!(counts(&t), (6, 6), "one entry went");
    t.verify().unwrap();
}

/// A name of 2^32 + 5 bytes was filed as one of 5 (its length is kept in 32 bits): read back
/// from the wrong half of the name's storage, never found again, its copy never freed. It is
/// refused now. (The zeroed vector is mapped, never touched: the check comes before hashing.)
#[test]
#[cfg(target_pointer_width = "64")]
#[should_panic(expected = "at most u32::MAX")]
fn a_name_longer_than_u32_max_bytes_is_refused() {
    let t: NegHash<()> = NegHash::new(Config::for_entries(16));
    let name = vec![0u8; (1usize << 32) + 5];
    drop(t.insert(1, &name, Polarity::Negative, ()));
}

/// A writer that checks whether a name is present before it changes anything (udcache's
/// `add`, refused if the name is positive) set the entry's referenced bit through `lookup`,
/// so a refused call gave the entry a second chance against `shrink`. `peek` finds without
/// writing; `insert` of a present name hands it back as it was.
#[test]
fn peeking_and_inserting_a_present_name_leave_the_referenced_bit_as_it_was() {
    let t: NegHash<u8> = NegHash::new(Config::with_buckets(1));
    drop(t.insert(0, b"p", Polarity::Positive, 1).inserted().unwrap());
    let guard = epoch::pin();
    assert!(!t.peek(&guard, 0, b"p").unwrap().is_referenced());
    let found = t.insert(0, b"p", Polarity::Positive, 2).present().unwrap();
    assert!(!found.is_referenced(), "insert is no lookup");
    drop(found);
    assert!(!t.peek(&guard, 0, b"p").unwrap().is_referenced());
    assert!(t.lookup(&guard, 0, b"p").unwrap().is_referenced());
    assert!(t.peek(&guard, 0, b"p").unwrap().is_referenced(), "nor is it cleared");
    assert!(t.peek(&guard, 0, b"absent").is_none());
}
