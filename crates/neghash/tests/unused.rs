//! `insert_unused` against `insert` with its hold dropped at once: on one thread the two leave
//! the same table after every step (the same chains, polarities, second chances and LRU
//! membership, the same counts and evictions), whatever inserts, lookups and shrinks came
//! before, under each combination of the trimming rules. One bucket: each table hashes with
//! keys of its own, so only a single chain puts the same names in the same place in both.
#![cfg(not(loom))]

use proptest::prelude::*;
use udcache_neghash::{Config, Insertion, NegHash, Polarity, Shape, epoch};

#[derive(Clone, Debug)]
enum Op {
    Insert { parent: u64, name: u8, negative: bool },
    Lookup { parent: u64, name: u8 },
    Shrink(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..3u64, 0..40u8, any::<bool>())
            .prop_map(|(parent, name, negative)| Op::Insert { parent, name, negative }),
        3 => (0..3u64, 0..40u8).prop_map(|(parent, name)| Op::Lookup { parent, name }),
        1 => (0..6usize).prop_map(Op::Shrink),
    ]
}

fn name(n: u8) -> Vec<u8> {
    format!("n{n:03}").into_bytes()
}

/// Every bucket's shape, its entries in chain order, and the counters (all but `recycled`,
/// which follows the grace periods of each table's own pool).
type State = (Vec<Vec<Shape>>, Vec<(u64, Vec<u8>, bool)>, [u64; 7]);

fn state(t: &NegHash<u8>) -> State {
    let s = t.stats();
    let counts = [
        s.entries,
        s.unused,
        s.negative,
        s.evicted_rule1,
        s.evicted_rule2,
        s.evicted_global,
        s.evicted_shrink,
    ];
    let mut entries = Vec::new();
    t.for_each_entry(|e| entries.push((e.parent(), e.name().to_vec(), e.is_negative())));
    ((0..t.buckets()).map(|b| t.bucket_shape(b)).collect(), entries, counts)
}

fn run(config: Config, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let held_then_dropped: NegHash<u8> = NegHash::new(config.clone());
    let unused: NegHash<u8> = NegHash::new(config);
    for op in ops {
        match op {
            Op::Insert { parent, name: n, negative } => {
                let polarity = if negative { Polarity::Negative } else { Polarity::Positive };
                let key = name(n);
                let a = match held_then_dropped.insert(parent, &key, polarity, n) {
                    Insertion::Inserted(_) => None,
                    Insertion::Present(found) => Some((found.is_negative(), *found.value())),
                };
                let b = unused
                    .insert_unused(parent, &key, polarity, n)
                    .err()
                    .map(|found| (found.is_negative(), *found.value()));
                prop_assert_eq!(a, b, "what insert found of {:?}", key);
            }
            Op::Lookup { parent, name: n } => {
                let guard = epoch::pin();
                let a = held_then_dropped.lookup(&guard, parent, &name(n)).map(|e| e.is_negative());
                let b = unused.lookup(&guard, parent, &name(n)).map(|e| e.is_negative());
                prop_assert_eq!(a, b);
            }
            Op::Shrink(n) => prop_assert_eq!(held_then_dropped.shrink(n), unused.shrink(n)),
        }
        prop_assert_eq!(state(&held_then_dropped), state(&unused));
        if let Err(e) = unused.verify() {
            return Err(TestCaseError::fail(e));
        }
    }
    Ok(())
}

/// Every combination of the trimming rules, on one bucket.
fn config() -> impl Strategy<Value = Config> {
    let one = || Config::with_buckets(1);
    prop_oneof![
        (1..7usize, any::<bool>()).prop_map(move |(cap, admission)| {
            one().with_negative_cap(Some(cap)).with_admission(admission)
        }),
        Just(one().with_negative_cap(None)),
        Just(one().with_rule1(false).with_negative_cap(None)),
        (1..5usize).prop_map(move |cap| one().with_rule1(false).with_negative_cap(Some(cap))),
        Just(one().with_negative_share(Some(0.25))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn the_same_table_after_every_step(config in config(), ops in prop::collection::vec(op(), 1..200)) {
        run(config, ops)?;
    }
}

#[test]
fn the_new_entry_is_unused_and_on_the_lru() {
    let t: NegHash<u8> = NegHash::new(Config::with_buckets(1));
    assert!(t.insert_unused(0, b"a", Polarity::Negative, 1).is_ok());
    let shape = t.bucket_shape(0);
    assert_eq!(shape.len(), 1);
    assert!(!shape[0].held && shape[0].on_lru && shape[0].polarity == Polarity::Negative);
    // A hold taken later is released as any: the entry stays unused, once on the LRU.
    drop(t.get(0, b"a").expect("present"));
    assert_eq!((t.stats().unused, t.stats().entries), (1, 1));
    t.verify().unwrap();
}
