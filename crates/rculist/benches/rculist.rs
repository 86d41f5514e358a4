//! Criterion benches for udcache-rculist.
//!
//! - `traverse/*/{100,1000}`: single-thread walk of a list, summing a field; elements/s gives
//!   ns/node. Baselines: `std::collections::LinkedList` and intrusive-collections' `LinkedList`
//!   (the target: rculist within 1.2x of intrusive-collections). `rculist_pin` pins a
//!   guard per walk; `rculist` walks under a guard pinned once.
//! - `traverse_128b/*/1000`: the same with dentry-sized nodes (128-byte payload), allocated
//!   interleaved so both lists have the same heap layout.
//! - `chain_lookup/*`: a hit in a table of `HListBl` buckets (~3 entries per bucket, the load
//!   the negative-entry bound keeps), one pin per lookup.
//! - `reader_with_writer/*`: the same 1000-node walk while another thread churns the list
//!   (insert, remove, move) under its lock, against the same walk with the writer idle.

use std::collections::LinkedList as StdList;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use intrusive_collections::{LinkedList as IcList, LinkedListLink, intrusive_adapter};
use udcache_rculist::{HLink, HListBl, Link, List, adapter, epoch};

const N: usize = 1000;

struct Node {
    v: u64,
    link: Link,
}
adapter!(NodeAdapter = Node { link: Link });

struct IcNode {
    v: u64,
    link: LinkedListLink,
}
intrusive_adapter!(IcAdapter = Box<IcNode>: IcNode { link => LinkedListLink });

/// Dentry-sized nodes (a 128-byte payload) for both intrusive lists: neither fits in L1.
struct BigNode {
    v: u64,
    _pad: [u64; 15],
    link: Link,
}
adapter!(BigAdapter = BigNode { link: Link });

struct IcBigNode {
    v: u64,
    _pad: [u64; 15],
    link: LinkedListLink,
}
intrusive_adapter!(IcBigAdapter = Box<IcBigNode>: IcBigNode { link => LinkedListLink });

fn traverse_dentry_sized(c: &mut Criterion) {
    let list = List::<BigAdapter>::new();
    let mut ic = IcList::new(IcBigAdapter::new());
    for v in 0..N as u64 {
        list.lock().push_back(Arc::new(BigNode { v, _pad: [v; 15], link: Link::new() })).unwrap();
        ic.push_back(Box::new(IcBigNode { v, _pad: [v; 15], link: LinkedListLink::new() }));
    }
    let mut g = c.benchmark_group("traverse_128b");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function(BenchmarkId::new("intrusive_collections", N), |b| {
        b.iter(|| black_box(&ic).iter().map(|n| n.v).sum::<u64>())
    });
    g.bench_function(BenchmarkId::new("rculist", N), |b| {
        let guard = epoch::pin();
        b.iter(|| black_box(&list).iter(&guard).map(|n| n.v).sum::<u64>())
    });
    g.finish();
}

fn rculist(n: usize) -> List<NodeAdapter> {
    let list = List::new();
    {
        let mut w = list.lock();
        for v in 0..n as u64 {
            w.push_back(Arc::new(Node { v, link: Link::new() })).unwrap();
        }
    }
    list
}

fn traverse(c: &mut Criterion) {
    let mut g = c.benchmark_group("traverse");
    // 100 nodes stay in L1 for every list; 1000 rculist nodes (48-byte allocations: Arc header,
    // value, 3-word link) outgrow a 48 KiB L1 where the 32-byte baseline nodes still fit.
    for n in [100, N] {
        let list = rculist(n);
        let std_list: StdList<u64> = (0..n as u64).collect();
        let mut ic = IcList::new(IcAdapter::new());
        for v in 0..n as u64 {
            ic.push_back(Box::new(IcNode { v, link: LinkedListLink::new() }));
        }
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(BenchmarkId::new("intrusive_collections", n), |b| {
            b.iter(|| black_box(&ic).iter().map(|n| n.v).sum::<u64>())
        });
        g.bench_function(BenchmarkId::new("rculist", n), |b| {
            let guard = epoch::pin();
            b.iter(|| black_box(&list).iter(&guard).map(|n| n.v).sum::<u64>())
        });
        g.bench_function(BenchmarkId::new("rculist_pin", n), |b| {
            b.iter(|| {
                let guard = epoch::pin();
                black_box(&list).iter(&guard).map(|n| n.v).sum::<u64>()
            })
        });
        g.bench_function(BenchmarkId::new("std_linked_list", n), |b| {
            b.iter(|| black_box(&std_list).iter().sum::<u64>())
        });
    }
    g.finish();
}

struct Entry {
    key: u64,
    hash: HLink,
}
adapter!(EntryAdapter = Entry { hash: HLink });

fn chain_lookup(c: &mut Criterion) {
    const BUCKETS: usize = 1 << 12;
    const ENTRIES: u64 = 3 * BUCKETS as u64;
    let table: Vec<HListBl<EntryAdapter>> = (0..BUCKETS).map(|_| HListBl::new()).collect();
    let bucket = |k: u64| (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % BUCKETS;
    for key in 0..ENTRIES {
        table[bucket(key)].lock().push_front(Arc::new(Entry { key, hash: HLink::new() })).unwrap();
    }
    let mut g = c.benchmark_group("chain_lookup");
    g.throughput(Throughput::Elements(1));
    let mut key = 0u64;
    g.bench_function("hit", |b| {
        b.iter(|| {
            key = (key + 7919) % ENTRIES;
            let guard = epoch::pin();
            let k = black_box(key);
            table[bucket(k)].find(&guard, |e| e.key == k).map(|e| e.key)
        })
    });
    g.bench_function("miss", |b| {
        b.iter(|| {
            key = (key + 7919) % ENTRIES;
            let guard = epoch::pin();
            let k = black_box(key + ENTRIES);
            table[bucket(k)].find(&guard, |e| e.key == k).map(|e| e.key)
        })
    });
    g.finish();
}

fn reader_with_writer(c: &mut Criterion) {
    let list = Arc::new(rculist(N));
    let mut g = c.benchmark_group("reader_with_writer");
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("writer_idle", |b| {
        b.iter(|| {
            let guard = epoch::pin();
            black_box(&*list).iter(&guard).map(|n| n.v).sum::<u64>()
        })
    });
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (list, stop) = (list.clone(), stop.clone());
        thread::spawn(move || {
            let churn: Vec<Arc<Node>> =
                (0..64).map(|i| Arc::new(Node { v: N as u64 + i, link: Link::new() })).collect();
            let mut ops = 0u64;
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                i = (i + 1) % churn.len();
                let guard = epoch::pin();
                let mut w = list.lock();
                if w.contains(&churn[i]) {
                    if i % 3 == 0 {
                        w.move_to_back(&churn[i]);
                    } else {
                        w.remove(&churn[i]).unwrap().retire(&guard);
                    }
                } else if Arc::strong_count(&churn[i]) == 1 {
                    w.push_front(churn[i].clone()).unwrap();
                }
                ops += 1;
            }
            ops
        })
    };
    g.bench_function("writer_churning", |b| {
        b.iter(|| {
            let guard = epoch::pin();
            black_box(&*list).iter(&guard).map(|n| n.v).sum::<u64>()
        })
    });
    stop.store(true, Ordering::Relaxed);
    let ops = writer.join().unwrap();
    eprintln!("reader_with_writer: the writer made {ops} operations");
    g.finish();
}

criterion_group!(benches, traverse, traverse_dentry_sized, chain_lookup, reader_with_writer);
criterion_main!(benches);
