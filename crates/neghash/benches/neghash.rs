//! Criterion benches: lookup hit, lookup miss, insert + release of a negative entry, and the
//! bucket-lock choice: the bit lock in an `HListBl` head against a `Mutex` per bucket.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use udcache_neghash::{Config, NegHash, Polarity, epoch};

fn lookups(c: &mut Criterion) {
    let n = 100_000u32;
    let table: NegHash<u64> = NegHash::new(Config::for_entries(n as usize));
    let names: Vec<String> = (0..n).map(|i| format!("file-{i:08}")).collect();
    for (i, name) in names.iter().enumerate() {
        drop(table.insert(7, name.as_bytes(), Polarity::Positive, i as u64).inserted().unwrap());
    }
    let mut i = 0;
    c.bench_function("lookup/hit", |b| {
        b.iter(|| {
            i = (i + 1) % names.len();
            let guard = epoch::pin();
            black_box(table.lookup(&guard, 7, names[i].as_bytes()).is_some())
        })
    });
    c.bench_function("lookup/miss", |b| {
        b.iter(|| {
            i = (i + 1) % names.len();
            let guard = epoch::pin();
            black_box(table.lookup(&guard, 8, names[i].as_bytes()).is_none())
        })
    });
    let mut k = 0u64;
    c.bench_function("insert_negative+release", |b| {
        b.iter(|| {
            k += 1;
            drop(table.insert(9, format!("{k:016x}").as_bytes(), Polarity::Negative, 0));
        })
    });
}

/// Bucket locks, uncontended: the bit lock in the head word (8 bytes per bucket, lock included)
/// against a std `Mutex` beside a plain head (16 bytes per bucket).
fn bucket_locks(c: &mut Criterion) {
    use udcache_rculist::{HLink, HListBl, adapter};
    struct Node {
        link: HLink,
    }
    adapter!(NodeAdapter = Node { link: HLink });
    let bit = HListBl::<NodeAdapter>::new();
    let mutex = std::sync::Mutex::new(0u64);
    c.bench_function("bucket_lock/bit", |b| b.iter(|| drop(black_box(bit.lock()))));
    c.bench_function("bucket_lock/mutex", |b| b.iter(|| drop(black_box(mutex.lock().unwrap()))));
    assert_eq!(std::mem::size_of::<HListBl<NodeAdapter>>(), 8);
}

criterion_group!(benches, lookups, bucket_locks);
criterion_main!(benches);
