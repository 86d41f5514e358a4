//! Lookups with a name hash made ahead ([`NegHash::lookup_hashed`]).
#![cfg(not(loom))]

use udcache_neghash::{Config, NegHash, Polarity, epoch};

#[test]
fn a_hash_made_ahead_finds_what_lookup_finds() {
    let table = NegHash::new(Config::for_entries(1024));
    for i in 0..1000u64 {
        drop(
            table
                .insert(i % 7, format!("n{i}").as_bytes(), Polarity::Positive, i)
                .inserted()
                .unwrap(),
        );
    }
    let guard = epoch::pin();
    for i in 0..1000u64 {
        let name = format!("n{i}");
        let hash = table.name_hash(name.as_bytes());
        for parent in 0..7 {
            let at_once = table.lookup(&guard, parent, name.as_bytes()).map(|e| *e.value());
            let ahead = table.lookup_hashed(&guard, parent, name.as_bytes(), hash);
            assert_eq!(ahead.map(|e| *e.value()), at_once, "{name} in {parent}");
            assert_eq!(at_once.is_some(), parent == i % 7);
        }
    }
}

#[test]
fn a_wrong_hash_misses_and_never_finds_another_entry() {
    // One bucket: every entry sits on the chain a wrong hash leads to.
    let table = NegHash::new(Config::with_buckets(1));
    drop(table.insert(1, b"a", Polarity::Positive, 'a').inserted().unwrap());
    drop(table.insert(1, b"b", Polarity::Positive, 'b').inserted().unwrap());
    let other = NegHash::<char>::new(Config::with_buckets(1));
    let guard = epoch::pin();
    assert!(table.lookup_hashed(&guard, 1, b"a", table.name_hash(b"b")).is_none());
    assert!(table.lookup_hashed(&guard, 1, b"b", table.name_hash(b"a")).is_none());
    // Another table's keys: a miss (with 2^-32 odds of a hit on the right entry; never `b`).
    let foreign = table.lookup_hashed(&guard, 1, b"a", other.name_hash(b"a"));
    assert!(foreign.is_none_or(|e| *e.value() == 'a'));
    assert_eq!(
        table.lookup_hashed(&guard, 1, b"a", table.name_hash(b"a")).map(|e| *e.value()),
        Some('a')
    );
}
