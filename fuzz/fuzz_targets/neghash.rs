//! Fuzz `udcache-neghash`: lookup / insert positive / insert negative / hold / release / flip /
//! remove / shrink sequences against a `HashMap` model. After every step the table's own
//! invariants hold (`verify`: at most three unreferenced negatives in a row, at most `cap`
//! unused negatives per bucket, counters agree), and no positive or held entry was evicted.
#![no_main]

use std::collections::HashMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache_neghash::{Config, Held, KeyHash, NegHash, epoch};

#[derive(Arbitrary, Debug)]
enum Op {
    Lookup(u8),
    Insert { name: u8, negative: bool, keep: bool },
    Get(u8),
    Release(u8),
    Flip { handle: u8, negative: bool },
    Remove(u8),
    Shrink(u8),
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

fn key(n: u8) -> (u64, Vec<u8>) {
    (u64::from(n % 3), format!("name-{n}").into_bytes())
}

fuzz_target!(|input: Input| {
    let config = Config::with_buckets(usize::from(input.buckets % 8) + 1)
        .with_negative_cap(input.cap.map(|c| usize::from(c % 8) + 1))
        .with_rule1(input.rule1)
        .with_admission(input.admission)
        .with_key_hash(if input.folded { KeyHash::FoldedMultiply } else { KeyHash::SipHash13 });
    let table: NegHash<()> = NegHash::new(config);
    // key -> negative, for entries that may be in the table; handles with their key.
    let mut model: HashMap<(u64, Vec<u8>), bool> = HashMap::new();
    let mut handles: Vec<((u64, Vec<u8>), Held<'_, ()>)> = Vec::new();
    for op in input.ops.into_iter().take(300) {
        match op {
            Op::Lookup(n) => {
                let k = key(n);
                let guard = epoch::pin();
                if let Some(e) = table.lookup(&guard, k.0, &k.1) {
                    assert_eq!(model.get(&k), Some(&e.is_negative()), "phantom or wrong kind");
                }
            }
            Op::Insert { name, negative, keep } => {
                let k = key(name);
                match table.insert(k.0, &k.1, negative, ()) {
                    Ok(h) => {
                        model.insert(k.clone(), negative);
                        if keep && handles.len() < 8 {
                            handles.push((k, h));
                        }
                    }
                    Err(h) => assert_eq!(model.get(&k), Some(&h.is_negative())),
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
                if changed {
                    model.insert(k.clone(), negative);
                }
            }
            Op::Remove(i) if !handles.is_empty() => {
                let (k, h) = &handles[usize::from(i) % handles.len()];
                if h.remove() {
                    model.remove(k);
                }
            }
            Op::Shrink(n) => {
                table.shrink(usize::from(n % 8));
            }
            _ => {}
        }
        table.verify().unwrap();
        // Positive and held entries are never evicted by the rules; shrink may evict unused
        // positives. Forget what is gone after checking it was allowed to go.
        let guard = epoch::pin();
        let held: Vec<&(u64, Vec<u8>)> =
            handles.iter().filter(|(_, h)| h.is_hashed()).map(|(k, _)| k).collect();
        model.retain(|k, _| {
            let present = table.lookup(&guard, k.0, &k.1).is_some();
            assert!(present || !held.contains(&k), "a held entry was evicted: {k:?}");
            present
        });
        assert_eq!(table.stats().entries as usize, model.len());
    }
});
