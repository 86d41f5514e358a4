//! Criterion benchmarks: resuming at a cookie, and listing a cached directory sequentially.
//!
//! - `resume_at_cookie/index`: `DirCache::read(cookie, 128)` at a random cookie of a cached
//!   100,000-entry directory with hashed cookies: one index lookup.
//! - `resume_at_cookie/linear_search`: the same answer found by scanning the cached entries from
//!   cookie 0, as a cache without an index must: O(n) per call.
//! - `sequential_listing/index`: a whole pass, 128 entries per call, from the cache.
//! - `sequential_listing/backend`: the same pass straight from the in-memory reference backend
//!   (no cache; a floor, since a real backend has latency this one lacks).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use udcache_readdir::reference::{CookieStyle, MemDir};
use udcache_readdir::{Backend, Config, DirCache, Entry, ReaddirCache};

const N: u64 = 100_000;
const GETDENTS: usize = 128;

fn cached_dir() -> (DirCache<MemDir>, Vec<Entry>) {
    let cache =
        ReaddirCache::with_config(Config::default().with_budget_pages(4096).with_page_entries(512));
    let dir = cache.dir(MemDir::with_entries(CookieStyle::Hashed, N, 0..N));
    let mut all = Vec::new();
    let mut c = dir.cursor();
    loop {
        let b = c.read(GETDENTS).unwrap();
        if b.is_empty() {
            break;
        }
        all.extend(b);
    }
    assert!(dir.is_complete());
    (dir, all)
}

fn resume(c: &mut Criterion) {
    let (dir, all) = cached_dir();
    let mut g = c.benchmark_group("resume_at_cookie");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    let mut x = 1u64;
    let len = all.len();
    let mut next = move || {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) as usize % len
    };
    let cookies: Vec<u64> = (0..1024).map(|_| all[next()].cookie).collect();
    let mut i = 0;
    g.bench_function("index", |b| {
        b.iter(|| {
            i = (i + 1) % cookies.len();
            black_box(dir.read(cookies[i], GETDENTS).unwrap())
        })
    });
    g.bench_function("linear_search", |b| {
        b.iter(|| {
            i = (i + 1) % cookies.len();
            let at = all.iter().position(|e| e.cookie == cookies[i]).unwrap() + 1;
            black_box(all[at..(at + GETDENTS).min(all.len())].to_vec())
        })
    });
    g.finish();
}

fn sequential(c: &mut Criterion) {
    let (dir, _) = cached_dir();
    let mut g = c.benchmark_group("sequential_listing");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    g.bench_function("index", |b| {
        b.iter(|| {
            let mut cur = dir.cursor();
            let mut n = 0;
            loop {
                let got = cur.read(GETDENTS).unwrap().len();
                if got == 0 {
                    break n;
                }
                n += got;
            }
        })
    });
    let backend = MemDir::with_entries(CookieStyle::Hashed, N, 0..N);
    g.bench_function("backend", |b| {
        b.iter(|| {
            let (mut cookie, mut n) = (0, 0);
            loop {
                let f = backend.fill(cookie, GETDENTS).unwrap();
                n += f.entries.len();
                match f.entries.last() {
                    Some(e) if !f.eof => cookie = e.cookie,
                    _ => break n,
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, resume, sequential);
criterion_main!(benches);
