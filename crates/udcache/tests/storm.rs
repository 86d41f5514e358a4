//! The rename storm: writer threads move files and directories between directories, replace
//! and unlink and re-create files, while walker threads resolve paths without locks.
//!
//! The oracle: writers apply each operation between two bumps of a version counter (odd while
//! it runs) and log, per path, the intervals of versions during which it named each inode. A
//! walker reads the version before and after each walk; every inode a walk found must have
//! been named by that path in an interval that overlaps the walk. Every found inode is also
//! checked intact (its data is derived from its number), which a freed and reused one would
//! fail. Paths through `..` check that a moved directory's parent link is never seen out of
//! step with its name. Runs 1.5 s; `UDCACHE_STORM_SECS=60` for a longer run.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO, RenameMode, Walk, epoch};

const DIRS: [u64; 4] = [10, 11, 12, 13]; // d0..d3 under the root, fixed
const SUBS: [u64; 2] = [20, 21]; // s0, s1: directories that move between the d's
const SUB_FILE: [u64; 2] = [30, 31]; // g0 inside each sub, fixed
const FILES: usize = 8; // names f0..f7: move anywhere, get replaced, re-created with new inodes
const MAGIC: u64 = 0x5eed_f00d;

fn spec(ino: u64, kind: FileType) -> InodeSpec {
    InodeSpec { ino, kind, fs_data: ino ^ MAGIC }
}

fn fname(k: usize) -> Vec<u8> {
    format!("f{k}").into_bytes()
}

/// SplitMix64: deterministic randomness without a dependency.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let z = (self.0 ^ (self.0 >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// The truth: positive names, and per path the intervals `(ino, from, to)` it named `ino`.
struct Model {
    names: HashMap<(u64, Vec<u8>), u64>,
    paths: HashMap<String, u64>,
    history: HashMap<String, Vec<(u64, u64, u64)>>,
    next_ino: u64,
}

impl Model {
    /// Every path from the root, by walking the name map.
    fn all_paths(&self) -> HashMap<String, u64> {
        let mut out = HashMap::new();
        let mut stack = vec![(ROOT_INO, String::new())];
        while let Some((dir, prefix)) = stack.pop() {
            for ((parent, name), &ino) in &self.names {
                if *parent != dir {
                    continue;
                }
                let path = format!("{prefix}{}", String::from_utf8_lossy(name));
                if DIRS.contains(&ino) || SUBS.contains(&ino) {
                    stack.push((ino, format!("{path}/")));
                    out.insert(format!("{path}/.."), dir);
                }
                out.insert(path, ino);
            }
        }
        out
    }

    /// After an operation that ran between versions `start` (odd) and `start + 1`.
    fn record(&mut self, start: u64) {
        let now = self.all_paths();
        for (path, &ino) in &self.paths {
            if now.get(path) != Some(&ino) {
                let h = self.history.get_mut(path).unwrap();
                let open = h.iter_mut().rev().find(|e| e.0 == ino && e.2 == u64::MAX).unwrap();
                open.2 = start + 1;
            }
        }
        for (path, &ino) in &now {
            if self.paths.get(path) != Some(&ino) {
                self.history.entry(path.clone()).or_default().push((ino, start, u64::MAX));
            }
        }
        self.paths = now;
    }

    fn file_at(&self, k: usize) -> Option<(u64, u64)> {
        self.names.iter().find(|((_, n), _)| *n == fname(k)).map(|((p, _), &i)| (*p, i))
    }

    fn any_dir(&self, rng: &mut Rng) -> u64 {
        let all: Vec<u64> = DIRS.iter().chain(&SUBS).copied().collect();
        all[rng.below(all.len())]
    }
}

/// One random operation, applied to the cache and the model between two version bumps.
fn step(cache: &Dcache, model: &Mutex<Model>, version: &AtomicU64, rng: &mut Rng) {
    let mut m = model.lock().unwrap();
    // SeqCst: a walker that reads an even version after this operation's second bump sees
    // its effects; one that reads before the first bump saw none of them.
    let start = version.fetch_add(1, Ordering::SeqCst) + 1;
    let k = rng.below(FILES);
    match (rng.below(5), m.file_at(k)) {
        // Move a file to another directory.
        (0 | 1, Some((p, ino))) => {
            let t = m.any_dir(rng);
            if t != p {
                cache.rename(p, &fname(k), t, &fname(k), RenameMode::NoReplace).unwrap();
                m.names.remove(&(p, fname(k)));
                m.names.insert((t, fname(k)), ino);
            }
        }
        // Replace another file with this one (rename over it); the loser is forgotten.
        (2, Some((p, ino))) => {
            let j = (k + 1 + rng.below(FILES - 1)) % FILES;
            if let Some((q, loser)) = m.file_at(j) {
                cache.rename(p, &fname(k), q, &fname(j), RenameMode::Replace).unwrap();
                cache.forget(loser, 1).unwrap();
                m.names.remove(&(p, fname(k)));
                m.names.insert((q, fname(j)), ino);
            }
        }
        // Unlink a file (negative left behind) and forget it.
        (3, Some((p, ino))) => {
            cache.unlink(p, &fname(k)).unwrap();
            cache.forget(ino, 1).unwrap();
            m.names.remove(&(p, fname(k)));
        }
        // Create a missing file with a new inode.
        (_, None) => {
            let t = m.any_dir(rng);
            let ino = m.next_ino;
            m.next_ino += 1;
            cache.add(t, &fname(k), spec(ino, FileType::Regular)).unwrap();
            m.names.insert((t, fname(k)), ino);
        }
        // Move a sub-directory (with its contents) to another d.
        (_, Some(_)) => {
            let s = rng.below(SUBS.len());
            let name = format!("s{s}").into_bytes();
            let (&(p, _), _) = m.names.iter().find(|((_, n), _)| *n == name).unwrap();
            let t = DIRS[rng.below(DIRS.len())];
            if t != p {
                cache.rename(p, &name, t, &name, RenameMode::NoReplace).unwrap();
                m.names.remove(&(p, name.clone()));
                m.names.insert((t, name), SUBS[s]);
            }
        }
    }
    version.fetch_add(1, Ordering::SeqCst);
    m.record(start);
}

fn setup(cache: &Dcache) -> Model {
    let mut m = Model {
        names: HashMap::new(),
        paths: HashMap::new(),
        history: HashMap::new(),
        next_ino: 1000,
    };
    let add = |m: &mut Model, parent: u64, name: Vec<u8>, ino: u64, kind| {
        cache.add(parent, &name, spec(ino, kind)).unwrap();
        m.names.insert((parent, name), ino);
    };
    for (i, &d) in DIRS.iter().enumerate() {
        add(&mut m, ROOT_INO, format!("d{i}").into_bytes(), d, FileType::Directory);
    }
    for (i, &s) in SUBS.iter().enumerate() {
        add(&mut m, DIRS[i], format!("s{i}").into_bytes(), s, FileType::Directory);
        add(&mut m, s, b"g0".to_vec(), SUB_FILE[i], FileType::Regular);
    }
    for k in 0..FILES {
        let ino = m.next_ino;
        m.next_ino += 1;
        let parent = if k % 3 == 2 { SUBS[k % 2] } else { DIRS[k % 4] };
        add(&mut m, parent, fname(k), ino, FileType::Regular);
    }
    m.record(0);
    m
}

/// Every path a walker tries: each file name in each directory, subs in each d.
fn candidate_paths() -> Vec<String> {
    let mut paths = Vec::new();
    for d in 0..DIRS.len() {
        for k in 0..FILES {
            paths.push(format!("d{d}/f{k}"));
        }
        for s in 0..SUBS.len() {
            paths.push(format!("d{d}/s{s}"));
            paths.push(format!("d{d}/s{s}/.."));
            paths.push(format!("d{d}/s{s}/g0"));
            for k in 0..FILES {
                paths.push(format!("d{d}/s{s}/f{k}"));
            }
        }
    }
    paths
}

#[test]
fn walks_during_a_rename_storm_return_what_the_path_named() {
    let secs = std::env::var("UDCACHE_STORM_SECS").ok().and_then(|s| s.parse().ok());
    let run = Duration::from_secs_f64(secs.unwrap_or(1.5));
    let cache = Dcache::new(Config::for_entries(1024));
    let model = Mutex::new(setup(&cache));
    let version = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let paths = candidate_paths();
    let (found, walks, ops) = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (cache, model, version, stop) = (&cache, &model, &version, &stop);
                s.spawn(move || {
                    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (w + 1));
                    let mut ops = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        step(cache, model, version, &mut rng);
                        ops += 1;
                    }
                    ops
                })
            })
            .collect();
        let walkers: Vec<_> = (0..2u64)
            .map(|w| {
                let (cache, version, stop, paths) = (&cache, &version, &stop, &paths);
                s.spawn(move || {
                    let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (w + 7));
                    let (mut found, mut walks) = (Vec::new(), 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        let p = rng.below(paths.len());
                        let guard = epoch::pin();
                        let before = version.load(Ordering::SeqCst);
                        let walked = cache.walk(&guard, ROOT_INO, &paths[p]).unwrap();
                        let after = version.load(Ordering::SeqCst);
                        walks += 1;
                        if let Walk::Found(inode) = walked {
                            assert_eq!(inode.fs_data(), inode.ino() ^ MAGIC, "a torn inode");
                            if found.len() < 1_000_000 {
                                found.push((p, inode.ino(), before, after));
                            }
                        }
                    }
                    (found, walks)
                })
            })
            .collect();
        let t0 = Instant::now();
        while t0.elapsed() < run {
            std::thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Ordering::Relaxed);
        let ops: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
        let (mut found, mut walks) = (Vec::new(), 0);
        for h in walkers {
            let (f, w) = h.join().unwrap();
            found.extend(f);
            walks += w;
        }
        (found, walks, ops)
    });

    let m = model.into_inner().unwrap();
    let mut bad = Vec::new();
    for &(p, ino, before, after) in &found {
        let named = m.history.get(&paths[p]).is_some_and(|h| {
            h.iter().any(|&(i, from, to)| i == ino && from <= after && before <= to)
        });
        if !named {
            bad.push((paths[p].clone(), ino, before, after, m.history.get(&paths[p])));
        }
    }
    let s = cache.stats();
    println!(
        "storm: {ops} writer ops, {walks} walks, {} found, {} walk fallbacks, {} sections",
        found.len(),
        s.walk_fallbacks,
        s.rename_sections
    );
    assert!(
        bad.is_empty(),
        "{} walks returned an inode the path never named: {:?}",
        bad.len(),
        &bad[..bad.len().min(3)]
    );
    assert!(
        ops > 100 && found.len() > 1000,
        "the storm did too little: {ops} ops, {} found",
        found.len()
    );
    // The cache agrees with the model at the end.
    for (path, &ino) in &m.paths {
        let g = epoch::pin();
        assert!(
            matches!(cache.walk(&g, ROOT_INO, path), Ok(Walk::Found(i)) if i.ino() == ino),
            "{path}"
        );
    }
    let live = m.names.values().collect::<std::collections::HashSet<_>>().len() as u64;
    assert_eq!(s.nr_inodes, live + 1, "inodes: the live ones and the root");
    cache.verify().unwrap();
}
