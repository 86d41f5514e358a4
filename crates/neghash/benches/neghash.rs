//! Criterion benches: lookup hit, lookup miss, insert + release of a negative entry.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use udcache_neghash::{Config, NegHash, epoch};

fn lookups(c: &mut Criterion) {
    let n = 100_000u32;
    let table: NegHash<u64> = NegHash::new(Config::for_entries(n as usize));
    let names: Vec<String> = (0..n).map(|i| format!("file-{i:08}")).collect();
    for (i, name) in names.iter().enumerate() {
        drop(table.insert(7, name.as_bytes(), false, i as u64).unwrap());
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
            drop(table.insert(9, format!("{k:016x}").as_bytes(), true, 0));
        })
    });
}

criterion_group!(benches, lookups);
criterion_main!(benches);
