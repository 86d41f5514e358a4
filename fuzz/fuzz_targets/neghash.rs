//! Fuzz `udcache-neghash`: lookup / insert positive / insert negative / hold / release / flip /
//! remove / shrink / purge of one parent's negatives / value write sequences against a
//! `HashMap` model. After every step the table's own invariants hold (`verify`: at most three
//! unreferenced negatives in a row, at most `cap` unused negatives per bucket, counters agree),
//! no held entry was evicted but by a purge of its parent's negatives, no positive one but by
//! `shrink` (at least as many went as it reports), a purge leaves none of its parent's
//! negatives and counts every one, and a lookup sees the kind and the value (`read_value`) the
//! model has: the value's sequence count shares the entry's state word with the flags, and
//! neither may disturb the other.
#![no_main]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache_neghash::{Config, Held, Insertion, KeyHash, NegHash, Polarity, epoch};

#[derive(Arbitrary, Debug)]
enum Op {
    Lookup(u8),
    Insert { name: u8, negative: bool, keep: bool },
    Get(u8),
    Release(u8),
    Flip { handle: u8, negative: bool },
    Remove(u8),
    Shrink(u8),
    Purge(u8),
    Write { handle: u8, value: u64 },
}

#[derive(Arbitrary, Debug)]
struct Input {
    buckets: u8,
    cap: Option<u8>,
    rule1: bool,
    admission: bool,
    folded: bool,
    ops: Vec<Op>,
}

/// A table key: `(parent, name)`.
type Key = (u64, Vec<u8>);

fn key(n: u8) -> Key {
    (u64::from(n % 3), format!("name-{n}").into_bytes())
}

fuzz_target!(|input: Input| {
    let config = Config::with_buckets(usize::from(input.buckets % 8) + 1)
        .with_negative_cap(input.cap.map(|c| usize::from(c % 8) + 1))
        .with_rule1(input.rule1)
        .with_admission(input.admission)
        .with_key_hash(if input.folded { KeyHash::FoldedMultiply } else { KeyHash::SipHash13 });
    let table: NegHash<AtomicU64> = NegHash::new(config);
    // key -> (negative, value), for entries that may be in the table; handles with their key.
    let mut model: HashMap<Key, (bool, u64)> = HashMap::new();
    let mut handles: Vec<(Key, Held<'_, AtomicU64>)> = Vec::new();
    for op in input.ops.into_iter().take(300) {
        let mut shrunk = None;
        match op {
            Op::Lookup(n) => {
                let k = key(n);
                let guard = epoch::pin();
                if let Some(e) = table.lookup(&guard, k.0, &k.1) {
                    let seen = (e.is_negative(), e.read_value(|v| v.load(Relaxed)));
                    assert_eq!(model.get(&k), Some(&seen), "phantom, wrong kind or wrong value");
                }
            }
            Op::Insert { name, negative, keep } => {
                let k = key(name);
                let polarity = if negative { Polarity::Negative } else { Polarity::Positive };
                match table.insert(k.0, &k.1, polarity, AtomicU64::new(u64::from(name))) {
                    Insertion::Inserted(h) => {
                        model.insert(k.clone(), (negative, u64::from(name)));
                        if keep && handles.len() < 8 {
                            handles.push((k, h));
                        }
                    }
                    Insertion::Present(h) => {
                        assert_eq!(model.get(&k).map(|m| m.0), Some(h.is_negative()))
                    }
                }
            }
            Op::Get(n) => {
                let k = key(n);
                if let Some(h) = table.get(k.0, &k.1)
                    && handles.len() < 8
                {
                    handles.push((k, h));
                }
            }
            Op::Release(i) if !handles.is_empty() => {
                let n = handles.len();
                handles.swap_remove(usize::from(i) % n);
            }
            Op::Flip { handle, negative } if !handles.is_empty() => {
                let (k, h) = &handles[usize::from(handle) % handles.len()];
                let changed = if negative { h.make_negative() } else { h.make_positive() };
                if let Some(m) = model.get_mut(k).filter(|_| changed) {
                    m.0 = negative;
                }
            }
            Op::Remove(i) if !handles.is_empty() => {
                let (k, h) = &handles[usize::from(i) % handles.len()];
                if h.remove() {
                    model.remove(k);
                }
            }
            Op::Shrink(n) => {
                let asked = usize::from(n % 8);
                shrunk = Some((asked, table.shrink(asked)));
            }
            Op::Purge(p) => {
                // Every negative of the parent goes, held ones too (they leave the `held` list
                // checked below: no longer hashed).
                let parent = u64::from(p % 3);
                let negatives = model.iter().filter(|(k, m)| k.0 == parent && m.0).count();
                assert_eq!(table.purge_negatives(&|x| x == parent), negatives, "purge {parent}");
                model.retain(|k, m| k.0 != parent || !m.0);
                table.for_each_entry(|e| {
                    let stayed = e.parent() == parent && e.is_negative();
                    assert!(!stayed, "a negative of {parent} stayed");
                });
            }
            Op::Write { handle, value } if !handles.is_empty() => {
                let (k, h) = &handles[usize::from(handle) % handles.len()];
                h.write_value(|v| v.store(value, Relaxed));
                if h.is_hashed() {
                    model.get_mut(k).expect("a hashed held entry is modelled").1 = value;
                }
            }
            _ => {}
        }
        table.verify().unwrap();
        // Positive and held entries are never evicted by the rules; shrink may evict unused
        // positives. Forget what is gone after checking it was allowed to go. The entries are
        // listed, not looked up: a lookup would set their referenced bits and change what the
        // rules do next.
        let mut present = std::collections::HashSet::new();
        table.for_each_entry(|e| {
            present.insert((e.parent(), e.name().to_vec()));
        });
        let held: Vec<&(u64, Vec<u8>)> =
            handles.iter().filter(|(_, h)| h.is_hashed()).map(|(k, _)| k).collect();
        let before = model.len();
        model.retain(|k, &mut (negative, _)| {
            let here = present.contains(k);
            assert!(here || !held.contains(&k), "a held entry was evicted: {k:?}");
            assert!(here || negative || shrunk.is_some(), "a positive went, not by shrink: {k:?}");
            here
        });
        if let Some((asked, n)) = shrunk {
            // Exact, and never more than asked: rule 1's evictions after the shrink's own
            // changes are counted in its result.
            assert!(n <= asked, "shrink({asked}) reported {n}");
            assert_eq!(before - model.len(), n, "shrink reported {n}");
        }
        assert_eq!(table.stats().entries as usize, model.len());
        assert_eq!(present.len(), model.len(), "an entry the model does not have");
    }
});
