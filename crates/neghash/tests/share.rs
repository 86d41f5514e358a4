//! The global cap on negatives: [`Config::with_negative_share`].
#![cfg(not(loom))]

use udcache_neghash::{Config, NegHash, Polarity};

#[test]
fn negatives_past_their_share_of_all_entries_are_evicted() {
    let config = Config::with_buckets(64)
        .with_negative_cap(None)
        .with_rule1(false)
        .with_admission(false)
        .with_negative_share(Some(0.5));
    let table: NegHash<u32> = NegHash::new(config);
    let name = |kind: &str, i: u32| format!("{kind}{i}").into_bytes();
    // Ten positives, held: never evicted.
    let positives: Vec<_> = (0..10)
        .map(|i| table.insert(0, &name("p", i), Polarity::Positive, i).inserted().unwrap())
        .collect();
    for i in 0..40 {
        drop(table.insert(0, &name("n", i), Polarity::Negative, i).inserted().unwrap());
        let s = table.stats();
        assert!(2 * s.negative <= s.entries, "after n{i}: {s:?}");
    }
    let s = table.stats();
    assert_eq!((s.entries, s.negative, s.evicted_global), (20, 10, 30));
    table.verify().unwrap();
    drop(positives);
}

#[test]
fn a_share_that_is_not_a_number_from_0_to_1_is_refused() {
    for share in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
        let refused =
            std::panic::catch_unwind(|| Config::for_entries(16).with_negative_share(Some(share)));
        assert!(refused.is_err(), "{share}");
    }
    for share in [0.0, 0.25, 1.0] {
        let config = Config::for_entries(16).with_negative_share(Some(share));
        drop(NegHash::<()>::new(config));
    }
}
