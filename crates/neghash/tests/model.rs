//! Model-based property test: random operations against a reference map, checking the
//! negative-entry bounds and the table's consistency after every single operation.
#![cfg(not(loom))]

use std::collections::BTreeMap;

use proptest::prelude::*;
use udcache_neghash::trim::MAX_RUN;
use udcache_neghash::{Config, Held, Insertion, NegHash, Polarity, Shape, epoch};

type Key = (u64, Vec<u8>);

#[derive(Clone, Debug)]
enum Op {
    Insert { parent: u64, name: u8, negative: bool, keep: bool },
    Lookup { parent: u64, name: u8 },
    Get { parent: u64, name: u8 },
    Release(usize),
    Flip { i: usize, negative: bool },
    Remove(usize),
    Shrink(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..3u64, 0..40u8, any::<bool>(), any::<bool>())
            .prop_map(|(parent, name, negative, keep)| Op::Insert { parent, name, negative, keep }),
        4 => (0..3u64, 0..40u8).prop_map(|(parent, name)| Op::Lookup { parent, name }),
        2 => (0..3u64, 0..40u8).prop_map(|(parent, name)| Op::Get { parent, name }),
        3 => any::<usize>().prop_map(Op::Release),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(i, negative)| Op::Flip { i, negative }),
        1 => any::<usize>().prop_map(Op::Remove),
        1 => (0..6usize).prop_map(Op::Shrink),
    ]
}

fn name(n: u8) -> Vec<u8> {
    format!("n{n:03}").into_bytes()
}

struct Handle<'t> {
    key: Key,
    held: Held<'t, ()>,
    /// The entry this handle holds was removed from the table.
    stale: bool,
}

/// The reference: key -> negative, for entries that may be in the table.
struct Model<'t> {
    entries: BTreeMap<Key, bool>,
    handles: Vec<Handle<'t>>,
}

impl Model<'_> {
    fn held(&self, key: &Key) -> bool {
        self.handles.iter().any(|h| !h.stale && &h.key == key)
    }
}

/// The bounds of the trimming rules, read off each chain: no run of more than `MAX_RUN`
/// unreferenced unused negatives (rule 1, when on), at most `cap` unused negatives (rule 2).
/// Stated here from the rules, not taken from `verify`, so the model does not lean on the
/// checks of the code it tests.
fn check_bounds(table: &NegHash<()>) -> Result<(), TestCaseError> {
    let config = table.config();
    for b in 0..table.buckets() {
        let shape = table.bucket_shape(b);
        let evictable = |s: &Shape| s.polarity == Polarity::Negative && !s.held;
        if config.rule1() {
            let longest = shape
                .split(|s| !evictable(s) || s.referenced)
                .map(<[Shape]>::len)
                .max()
                .unwrap_or(0);
            prop_assert!(longest <= MAX_RUN, "bucket {}: a run of {}: {:?}", b, longest, shape);
        }
        if let Some(cap) = config.cap() {
            let unused = shape.iter().filter(|s| evictable(s)).count();
            prop_assert!(unused <= cap, "bucket {}: {} over cap {}: {:?}", b, unused, cap, shape);
        }
    }
    Ok(())
}

fn check(table: &NegHash<()>, model: &mut Model<'_>) -> Result<(), TestCaseError> {
    check_bounds(table)?;
    let guard = epoch::pin();
    // Entries the model expects: positives and held ones must be there; unused negatives may
    // have been evicted (and unused positives by shrink, which syncs the model itself). Looked
    // for with `peek`: a lookup sets the referenced bit, which ends runs, so looking up every
    // entry after every operation would leave rule 1 no run to trim.
    let keys: Vec<Key> = model.entries.keys().cloned().collect();
    for key in keys {
        let negative = model.entries[&key];
        match table.peek(&guard, key.0, &key.1) {
            Some(e) => prop_assert_eq!(e.is_negative(), negative, "kind of {:?}", key),
            None => {
                prop_assert!(negative, "positive entry {:?} vanished", key);
                prop_assert!(!model.held(&key), "held entry {:?} was evicted", key);
                model.entries.remove(&key);
            }
        }
    }
    let stats = table.stats();
    prop_assert_eq!(stats.entries as usize, model.entries.len(), "no phantom entries");
    prop_assert_eq!(stats.negative as usize, model.entries.values().filter(|n| **n).count());
    if let Err(e) = table.verify() {
        return Err(TestCaseError::fail(e));
    }
    Ok(())
}

fn run(config: Config, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let table: NegHash<()> = NegHash::new(config.clone());
    let mut model = Model { entries: BTreeMap::new(), handles: Vec::new() };
    for op in ops {
        match op {
            Op::Insert { parent, name: n, negative, keep } => {
                let key = (parent, name(n));
                let (held, inserted) = match table.insert(
                    parent,
                    &key.1,
                    if negative { Polarity::Negative } else { Polarity::Positive },
                    (),
                ) {
                    Insertion::Inserted(h) => (h, true),
                    Insertion::Present(h) => (h, false),
                };
                if inserted {
                    prop_assert!(!model.entries.contains_key(&key) || !model.held(&key));
                    model.entries.insert(key.clone(), negative);
                } else {
                    prop_assert_eq!(model.entries.get(&key), Some(&held.is_negative()));
                }
                if keep && model.handles.len() < 8 {
                    model.handles.push(Handle { key, held, stale: false });
                }
            }
            Op::Lookup { parent, name: n } => {
                let key = (parent, name(n));
                let guard = epoch::pin();
                match table.lookup(&guard, parent, &key.1) {
                    Some(e) => prop_assert_eq!(model.entries.get(&key), Some(&e.is_negative())),
                    None => prop_assert!(
                        model.entries.get(&key).is_none_or(|neg| *neg && !model.held(&key))
                    ),
                }
            }
            Op::Get { parent, name: n } => {
                let key = (parent, name(n));
                if let Some(held) = table.get(parent, &key.1) {
                    prop_assert_eq!(model.entries.get(&key), Some(&held.is_negative()));
                    if model.handles.len() < 8 {
                        model.handles.push(Handle { key, held, stale: false });
                    }
                }
            }
            Op::Release(i) if !model.handles.is_empty() => {
                let n = model.handles.len();
                drop(model.handles.swap_remove(i % n));
            }
            Op::Flip { i, negative } if !model.handles.is_empty() => {
                let n = model.handles.len();
                let h = &model.handles[i % n];
                let changed =
                    if negative { h.held.make_negative() } else { h.held.make_positive() };
                if !h.stale {
                    let was = model.entries.insert(h.key.clone(), negative);
                    prop_assert_eq!(changed, was != Some(negative));
                } else {
                    prop_assert!(!changed, "a removed entry changed kind");
                }
            }
            Op::Remove(i) if !model.handles.is_empty() => {
                let n = model.handles.len();
                let removed = model.handles[i % n].held.remove();
                let key = model.handles[i % n].key.clone();
                prop_assert_eq!(removed, !model.handles[i % n].stale);
                if removed {
                    model.entries.remove(&key);
                    for h in model.handles.iter_mut().filter(|h| h.key == key) {
                        h.stale = true;
                    }
                }
            }
            Op::Shrink(n) => {
                // Settle what the rules did before: only the shrink's evictions are counted.
                check(&table, &mut model)?;
                let shrunk = table.shrink(n);
                prop_assert!(shrunk <= n, "shrink({}) evicted {}", n, shrunk);
                let guard = epoch::pin();
                let gone: Vec<Key> = model
                    .entries
                    .keys()
                    .filter(|k| table.peek(&guard, k.0, &k.1).is_none())
                    .cloned()
                    .collect();
                prop_assert_eq!(gone.len(), shrunk, "shrink's count against what went");
                let positive_went = gone.iter().any(|k| !model.entries[k]);
                for k in gone {
                    prop_assert!(!model.held(&k), "shrink evicted held {:?}", k);
                    model.entries.remove(&k);
                }
                // Positives go only once no unused negative is left.
                let held_negatives: std::collections::BTreeSet<&Key> = model
                    .handles
                    .iter()
                    .filter(|h| !h.stale && model.entries[&h.key])
                    .map(|h| &h.key)
                    .collect();
                let unused_negative = table.stats().negative as usize > held_negatives.len();
                prop_assert!(
                    !(positive_went && unused_negative),
                    "a positive went while an unused negative stayed"
                );
            }
            _ => {}
        }
        check(&table, &mut model)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn both_rules(ops in prop::collection::vec(op(), 1..200), cap in 1..7usize, admission: bool) {
        run(Config::with_buckets(4).with_negative_cap(Some(cap)).with_admission(admission), ops)?;
    }

    #[test]
    fn rule1_only(ops in prop::collection::vec(op(), 1..200)) {
        run(Config::with_buckets(2).with_negative_cap(None), ops)?;
    }

    #[test]
    fn cap_only(ops in prop::collection::vec(op(), 1..200), cap in 1..5usize) {
        run(Config::with_buckets(2).with_rule1(false).with_negative_cap(Some(cap)), ops)?;
    }
}
