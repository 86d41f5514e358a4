//! Criterion benches: the cookie calls and the pool's alloc/free fast paths.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use udcache_gp::{GpPool, PoolConfig, get_state, poll, start_poll};

type Inode = [u64; 32]; // 256 bytes, like an inode

fn cookies(c: &mut Criterion) {
    let done = get_state();
    udcache_gp::cond_synchronize(done);
    c.bench_function("poll/completed", |b| b.iter(|| poll(black_box(&done))));
    c.bench_function("get_state", |b| b.iter(get_state));
    c.bench_function("start_poll", |b| b.iter(start_poll));
}

fn pool_paths(c: &mut Criterion) {
    let pool: GpPool<Inode> = GpPool::new(|| [0; 32], |i| i[0] += 1);
    c.bench_function("pool/alloc+free", |b| b.iter(|| black_box(pool.alloc()).free()));
    // SAFETY: no reader ever sees these objects.
    let config = unsafe { PoolConfig::default().reuse_immediately() };
    let immediate: GpPool<Inode> = GpPool::with_config(config, || [0; 32], |i| i[0] += 1);
    c.bench_function("immediate/alloc+free", |b| b.iter(|| black_box(immediate.alloc()).free()));
    c.bench_function("box/alloc+free", |b| b.iter(|| drop(black_box(Box::new([0u64; 32])))));
}

criterion_group!(benches, cookies, pool_paths);
criterion_main!(benches);
