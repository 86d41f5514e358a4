//! Where an insert puts an entry on its chain (`table.rs`, Chain order).
#![cfg(not(loom))]

use udcache_neghash::{Config, NegHash, Polarity, epoch};

/// The names on a one-bucket table's chain, in chain order, each with its polarity.
fn chain(table: &NegHash<()>) -> Vec<(String, bool)> {
    let mut names = Vec::new();
    table.for_each_entry(|e| {
        names.push((String::from_utf8(e.name().to_vec()).unwrap(), e.is_negative()));
    });
    names
}

fn table() -> NegHash<()> {
    // No bounds: every negative stays, so the whole order is visible.
    NegHash::new(Config::with_buckets(1).with_negative_cap(None).with_rule1(false))
}

#[test]
fn positives_lead_oldest_first_and_negatives_follow_newest_first() {
    let t = table();
    for (name, negative) in
        [("n1", true), ("p1", false), ("n2", true), ("p2", false), ("p3", false)]
    {
        drop(
            t.insert(
                7,
                name.as_bytes(),
                if negative { Polarity::Negative } else { Polarity::Positive },
                (),
            )
            .inserted()
            .unwrap(),
        );
    }
    let want = [("p1", false), ("p2", false), ("p3", false), ("n2", true), ("n1", true)];
    assert_eq!(chain(&t), want.map(|(n, neg)| (n.to_string(), neg)));
    // Every one is found, whatever its place.
    let guard = epoch::pin();
    for (name, negative) in want {
        assert_eq!(t.lookup(&guard, 7, name.as_bytes()).unwrap().is_negative(), negative);
    }
    t.verify().unwrap();
}

#[test]
fn an_entry_that_changes_polarity_stays_in_place() {
    let t = table();
    let n1 = t.insert(7, b"n1", Polarity::Negative, ()).inserted().unwrap();
    drop(t.insert(7, b"p1", Polarity::Positive, ()).inserted().unwrap());
    // The chain is p1, n1; n1 turns positive where it is, so p2 goes in behind it.
    assert!(n1.make_positive());
    drop(t.insert(7, b"p2", Polarity::Positive, ()).inserted().unwrap());
    drop(t.insert(7, b"n2", Polarity::Negative, ()).inserted().unwrap());
    let names: Vec<String> = chain(&t).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["p1", "n1", "p2", "n2"]);
    // A positive at the front turning negative does not move either: the next negative goes
    // in front of it.
    let p1 = t.get(7, b"p1").unwrap();
    assert!(p1.make_negative());
    drop(t.insert(7, b"n3", Polarity::Negative, ()).inserted().unwrap());
    let names: Vec<String> = chain(&t).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["n3", "p1", "n1", "p2", "n2"]);
    t.verify().unwrap();
}
