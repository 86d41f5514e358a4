//! `lookup`: a cached 6-component path walk, udcache against maps walked component by component.
//!
//! A full tree of depth 6 and fanout 6 (46,656 leaves, 55,986 directories and files) is cached
//! in every variant. A walk resolves one random leaf path `level1_entry03/level2_entry00/...`
//! from the root:
//!
//! - `udcache`: [`Dcache::walk`] — one epoch guard for the walk, a lockless lookup per
//!   component, validated by the rename sequence; the leaf's number is the one its dentry
//!   keeps (`Walk::Found`'s `Named`), as each map's answer is the number it stores;
//! - `papaya`, `dashmap`, `rwlock` (`RwLock<HashMap>`), `mutex` (`Mutex<HashMap>`, the single
//!   lock of libfuse's high-level node table): the same walk done as the kernel asks a FUSE
//!   server, one lookup of `(parent ino, name)` per component; papaya pins once per walk (as
//!   udcache does), the locked maps lock once per component (one FUSE LOOKUP each).
//!
//! Every map hashes with std's `RandomState` (SipHash-1-3) and is queried with a borrowed
//! `(parent, &name)` view, so no variant copies or allocates a key. A map hashes its whole key
//! — the parent, the name's length and the name: 16 bytes more than the name alone — as a
//! derived `Hash` does; udcache's name table runs SipHash-1-3 on the name alone and mixes in
//! the parent with two keyed multiplies (its design: see `udcache_neghash::hashing`), and its
//! walk hashes the next name while the current lookup waits on memory, off the chain of
//! dependent steps, where a map of `(parent, name)` keys cannot take it (its hash needs the
//! parent, the previous step's answer). Every variant finds a path's `/`s the same way
//! (memchr's SSE2 search, as udcache's walk does), so none splits paths faster than another.
//! Each variant runs with 1 and 2 threads (and more with `--max-threads`), all interleaved round
//! by round; each thread does the same number of walks over its own random order.
//!
//! Summary fields: `ns_per_component` (udcache, 1 thread: wall time per component),
//! `ratio_vs_papaya_1t` (udcache's ns per component over papaya's, 1 thread: ≤ 1.0 means
//! udcache is at least as fast; a time ratio, where `map-lookup`'s field of the same name is
//! a throughput ratio), `scaling_2t` (udcache's throughput with 2 threads over
//! 1 thread), `scaling_2t_mutex` (the same for `Mutex<HashMap>`), plus
//! `ns_per_component_<variant>_<threads>t` for every variant; with `--max-threads`, also
//! `scaling_<n>t` and `scaling_<n>t_mutex` for each count n above 2; and the machine's own
//! scaling, measured in the same rounds (see [`crate::machine`]): `machine_scaling_<n>t` for
//! every count, each scaling field as a share of it, `scaling_<n>t[_mutex]_of_machine`, and
//! `machine_line_round_trip_ns`.
//! Each variant's row also
//! gives `bytes_per_entry`: the heap bytes its tree took per cached name (the harness's
//! counting allocator, across the build). udcache's include the inode behind each name —
//! its attributes, its name list, a directory's children and listing state — and the inode
//! table; a map's are a key and a number.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};
use std::hint::black_box;

use udcache::{Config, Dcache, FileType, InodeSpec, ROOT_INO, Walk, epoch};

use super::maps::{BASELINES, Baseline, Fields, on_threads, random_orders, with_more_threads};
use crate::alloc_count::settled_live_bytes;
use crate::measure::interleaved;
use crate::report::{Report, Row};
use crate::{Options, machine};

const DEPTH: usize = 6;
const FANOUT: u64 = 6;

/// A map key: `(parent ino, name)`. Looked up through [`KeyView`] so queries borrow the name.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct Key(pub(super) u64, pub(super) Box<[u8]>);

/// A borrowed view of a key: what a walk has in hand (the parent and a slice of the path).
pub(super) trait KeyView {
    /// The parent and the name.
    fn parts(&self) -> (u64, &[u8]);
}

impl KeyView for Key {
    fn parts(&self) -> (u64, &[u8]) {
        (self.0, &self.1)
    }
}

impl KeyView for (u64, &[u8]) {
    fn parts(&self) -> (u64, &[u8]) {
        *self
    }
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl Hash for dyn KeyView + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.parts().hash(state);
    }
}

impl PartialEq for dyn KeyView + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.parts() == other.parts()
    }
}

impl Eq for dyn KeyView + '_ {}

impl<'a> Borrow<dyn KeyView + 'a> for Key {
    fn borrow(&self) -> &(dyn KeyView + 'a) {
        self
    }
}

/// One variant's cached tree.
enum Tree {
    Udcache(Box<Dcache>),
    Baseline(Baseline<Key>),
}

fn name(level: usize, i: u64) -> String {
    format!("level{level}_entry{i:02}")
}

/// Every `(parent, name, ino, is_dir)` of the tree, parents before children.
fn tree_entries() -> Vec<(u64, String, u64, bool)> {
    let mut out = Vec::new();
    let mut level_inos = vec![ROOT_INO];
    let mut next = ROOT_INO + 1;
    for level in 1..=DEPTH {
        let mut below = Vec::new();
        for &parent in &level_inos {
            for i in 0..FANOUT {
                out.push((parent, name(level, i), next, level < DEPTH));
                below.push(next);
                next += 1;
            }
        }
        level_inos = below;
    }
    out
}

/// The path of leaf number `leaf` (its base-FANOUT digits, most significant first).
fn leaf_path(leaf: u64) -> String {
    let mut digits = [0u64; DEPTH];
    let mut rest = leaf;
    for d in digits.iter_mut().rev() {
        *d = rest % FANOUT;
        rest /= FANOUT;
    }
    let parts: Vec<String> = digits.iter().enumerate().map(|(l, &i)| name(l + 1, i)).collect();
    parts.join("/")
}

fn build(variant: &str, entries: &[(u64, String, u64, bool)]) -> Tree {
    let pairs = entries.iter().map(|(p, n, ino, _)| (Key(*p, n.as_bytes().into()), *ino));
    match variant {
        "udcache" => {
            let cache = Dcache::new(Config::for_entries(entries.len()));
            for (parent, n, ino, dir) in entries {
                let kind = if *dir { FileType::Directory } else { FileType::Regular };
                cache
                    .add(*parent, n.as_bytes(), InodeSpec { ino: *ino, kind, fs_data: 0 })
                    .unwrap();
            }
            Tree::Udcache(Box::new(cache))
        }
        _ => Tree::Baseline(Baseline::build(variant, pairs)),
    }
}

/// The offset of the first `/` in `s`, found as udcache's walk finds it: on x86-64, memchr's
/// SSE2 search called directly (no dispatch through a function pointer per call).
#[inline]
fn find_slash(s: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(sse2) = memchr::arch::x86_64::sse2::memchr::One::new(b'/') {
        return sse2.find(s);
    }
    memchr::memchr(b'/', s)
}

/// Walks `path` component by component with `step` (one map lookup); the leaf's ino.
fn walk_by_component(path: &str, mut step: impl FnMut(&dyn KeyView) -> Option<u64>) -> u64 {
    let (mut cur, mut rest) = (ROOT_INO, path.as_bytes());
    loop {
        let (c, next) = match find_slash(rest) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        cur = step(&(cur, c)).expect("every path is cached");
        match next {
            Some(n) => rest = n,
            None => return cur,
        }
    }
}

/// Resolves `paths[order[i]]` for every i; returns the sum of the leaf inos (kept, so no walk
/// can be optimised away).
fn walks(tree: &Tree, paths: &[String], order: &[u32]) -> u64 {
    let mut sum = 0u64;
    for &i in order {
        let path = paths[i as usize].as_str();
        let ino = match tree {
            Tree::Udcache(c) => {
                let guard = epoch::pin();
                match c.walk(&guard, ROOT_INO, path) {
                    Ok(Walk::Found(inode)) => inode.ino(),
                    other => panic!("{path}: {other:?}"),
                }
            }
            // One pin per walk, as udcache's walk.
            Tree::Baseline(Baseline::Papaya(m)) => {
                let g = m.pin();
                walk_by_component(path, |k| g.get(k).copied())
            }
            // One lock per component: one FUSE lookup each.
            Tree::Baseline(m) => walk_by_component(path, |k| m.get(k)),
        };
        sum = sum.wrapping_add(black_box(ino));
    }
    sum
}

/// Wall nanoseconds per component (all threads' components together) with `threads` threads.
fn ns_per_component(tree: &Tree, paths: &[String], orders: &[Vec<u32>], threads: usize) -> f64 {
    let (sums, time) = on_threads(orders, threads, |o| walks(tree, paths, o));
    black_box(sums);
    let components = (orders[0].len() * threads * DEPTH) as f64;
    time.as_nanos() as f64 / components
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let (per_thread, rounds): (usize, usize) = if opts.quick { (100_000, 5) } else { (200_000, 9) };
    let leaves = FANOUT.pow(DEPTH as u32);
    let paths: Vec<String> = (0..leaves).map(leaf_path).collect();
    let counts = &opts.threads;
    let orders = random_orders(0x2545_f491_4f6c_dd1d, leaves, per_thread, counts[counts.len() - 1]);
    let entries = tree_entries();
    let variants: Vec<&str> = ["udcache"].into_iter().chain(BASELINES).collect();
    // Each tree's heap bytes per cached name, measured as it is built: udcache's include its
    // inodes (with their attributes, names and directories' children), the maps' a key and
    // a number.
    let (trees, bytes): (Vec<Tree>, Vec<f64>) = variants
        .iter()
        .map(|v| {
            let before = settled_live_bytes();
            let tree = build(v, &entries);
            let bytes = settled_live_bytes().saturating_sub(before);
            (tree, bytes as f64 / entries.len() as f64)
        })
        .unzip();
    // Every variant resolves the same leaves to the same inos.
    let check: Vec<u64> = trees.iter().map(|t| walks(t, &paths, &orders[0][..1000])).collect();
    assert!(check.iter().all(|&s| s == check[0]), "variants disagree: {check:?}");

    let mut runs: Vec<Box<dyn FnMut() -> f64 + '_>> = Vec::new();
    for &threads in counts {
        for t in &trees {
            let (paths, orders) = (&paths, &orders);
            runs.push(Box::new(move || ns_per_component(t, paths, orders, threads)));
        }
    }
    runs.extend(machine::calibrations(counts));
    let mut refs: Vec<&mut dyn FnMut() -> f64> = runs.iter_mut().map(|r| &mut **r as _).collect();
    let ns = interleaved(&mut refs, rounds);
    let (ns, machine_figures) = ns.split_at(counts.len() * variants.len());
    // at[k][i]: variant i at counts[k] threads.
    let at: Vec<&[f64]> = ns.chunks(variants.len()).collect();
    let (one, two) = (at[0], at[1]);
    let across = |i: usize| -> Vec<f64> { at.iter().map(|a| a[i]).collect() };
    let per_component =
        |figure, scaling_suffix| Fields { figure, scaling_suffix, time_per_op: true };

    let mut report = Report::new("lookup");
    // Throughput is 1/ns, so 2-thread over 1-thread throughput is ns_1t / ns_2t.
    let mut summary = Row::new()
        .with("ns_per_component", one[0])
        .with("ratio_vs_papaya_1t", one[0] / one[1])
        .with("scaling_2t", one[0] / two[0])
        .with("scaling_2t_mutex", one[4] / two[4]);
    for (i, v) in variants.iter().enumerate() {
        let row = Row::new()
            .with("variant", *v)
            .with("ns_per_component_1t", one[i])
            .with("ns_per_component_2t", two[i])
            .with("scaling_2t", one[i] / two[i])
            .with("ratio_vs_udcache_1t", one[i] / one[0])
            .with("bytes_per_entry", bytes[i]);
        report.row(with_more_threads(
            row,
            per_component("ns_per_component", ""),
            counts,
            &across(i),
        ));
        summary = summary
            .with(&format!("ns_per_component_{v}_1t"), one[i])
            .with(&format!("ns_per_component_{v}_2t"), two[i]);
    }
    summary = with_more_threads(
        summary,
        per_component("ns_per_component_udcache", ""),
        counts,
        &across(0),
    );
    summary = with_more_threads(
        summary,
        per_component("ns_per_component_mutex", "_mutex"),
        counts,
        &across(4),
    );
    let summary = summary.with("paths", leaves).with("walks_per_thread", per_thread);
    report.summary(machine::with_machine_scaling(summary, counts, machine_figures));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaf_paths_name_the_tree() {
        assert_eq!(leaf_path(0).split('/').count(), DEPTH);
        assert!(leaf_path(1).ends_with("level6_entry01"));
        assert!(leaf_path(FANOUT).ends_with("level5_entry01/level6_entry00"));
        let entries = tree_entries();
        assert_eq!(entries.len() as u64, (1..=DEPTH as u32).map(|d| FANOUT.pow(d)).sum::<u64>());
    }

    #[test]
    fn borrowed_view_finds_owned_key() {
        let mut m: std::collections::HashMap<Key, u64> = Default::default();
        m.insert(Key(7, b"abc".as_slice().into()), 1);
        assert_eq!(m.get(&(7u64, b"abc".as_slice()) as &dyn KeyView), Some(&1));
        assert_eq!(m.get(&(8u64, b"abc".as_slice()) as &dyn KeyView), None);
    }
}
