//! Multi-threaded stress with an invariant checker: lockless readers verify the reader
//! contract (crate docs, "What readers may assume") while writers churn.
//!
//! Each test runs for a bounded time (`STRESS_MS`, default 700 ms) on real threads.
//!
//! - Stable nodes are put on the list first, in id order, and never touched again: a walk that
//!   reports `valid()` must see each exactly once, in order; any walk must see each at most
//!   twice per move that overlapped it.
//! - Churn nodes are inserted, removed, replaced and moved; a removed node is reinserted only
//!   after its grace period (when the list's reference is gone), or dropped and replaced by a
//!   fresh node, so nodes really are freed while readers run.
//! - Every node a reader is handed must not have been freed (a flag outside the node, set by its
//!   `Drop`), checked again while the reader is still pinned.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use udcache_rculist::epoch::Guard;
use udcache_rculist::{ChildList, HLink, HListBl, Link, List, adapter, epoch};

const MAX_IDS: usize = 1 << 18;
const STABLE: usize = 16;

struct Ids {
    freed: Vec<AtomicBool>,
    next: AtomicUsize,
}

impl Ids {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            freed: (0..MAX_IDS).map(|_| AtomicBool::new(false)).collect(),
            next: AtomicUsize::new(0),
        })
    }

    fn check(&self, id: usize) {
        assert!(id < MAX_IDS, "garbage id {id}: node memory reused under a reader");
        assert!(!self.freed[id].load(Ordering::SeqCst), "node {id} freed under a reader");
    }
}

struct Node {
    id: usize,
    key: usize,
    link: Link,
    hlink: HLink,
    ids: Arc<Ids>,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.ids.freed[self.id].store(true, Ordering::SeqCst);
    }
}

adapter!(LA = Node { link: Link });
adapter!(HA = Node { hlink: HLink });

/// A fresh node, or `None` once the id space is used up.
fn fresh(ids: &Arc<Ids>, key: usize) -> Option<Arc<Node>> {
    let id = ids.next.fetch_add(1, Ordering::Relaxed);
    (id < MAX_IDS).then(|| {
        Arc::new(Node { id, key, link: Link::new(), hlink: HLink::new(), ids: ids.clone() })
    })
}

fn duration() -> Duration {
    let ms = std::env::var("STRESS_MS").ok().and_then(|s| s.parse().ok()).unwrap_or(700);
    Duration::from_millis(ms)
}

/// Every 8th step of every 4th walk, lets the writers run while the reader stands mid-walk:
/// on a loaded machine with few cores, walks would otherwise rarely overlap a writer.
fn pause_sometimes(step: usize) {
    thread_local!(static WALK: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
    if step == 1 {
        WALK.set(WALK.get().wrapping_add(1));
    }
    if step.is_multiple_of(8) && WALK.get().is_multiple_of(4) {
        thread::yield_now();
    }
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// A writer's private churn nodes: `Some` while the writer may insert it (on no list and its
/// grace period over), tracked by whether the lists still hold a reference.
struct Churn {
    nodes: Vec<Arc<Node>>,
}

impl Churn {
    fn new(ids: &Arc<Ids>, n: usize) -> Self {
        Self { nodes: (0..n).map(|i| fresh(ids, i).expect("ids")).collect() }
    }

    /// Whether `nodes[i]` is on no list and no reader can stand on it any more: only this
    /// writer holds it. Ask before cloning it.
    fn settled(&self, i: usize) -> bool {
        Arc::strong_count(&self.nodes[i]) == 1
    }

    /// Drops `nodes[i]` (freed once its grace period ends) for a fresh node, sometimes.
    fn maybe_renew(&mut self, i: usize, rng: &mut Rng, ids: &Arc<Ids>) {
        if rng.below(2) == 0
            && let Some(n) = fresh(ids, i)
        {
            self.nodes[i] = n;
        }
    }
}

/// Runs `writers` threads calling `write` and `readers` threads calling `read` (which returns
/// whether its walk was valid) on `shared` for [`duration`], then reports and checks that both
/// sides really ran.
fn race<S: Send + Sync + 'static>(
    name: &str,
    shared: S,
    ids: &Arc<Ids>,
    (writers, readers): (u64, usize),
    write: fn(&S, &Arc<Ids>, &mut Rng, &mut Churn, &Guard),
    read: fn(&S, &Ids) -> bool,
) {
    let shared = Arc::new(shared);
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..writers)
        .map(|w| {
            let (shared, ids, stop) = (shared.clone(), ids.clone(), stop.clone());
            thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (w + 1));
                let mut churn = Churn::new(&ids, 16);
                let mut ops = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    write(&shared, &ids, &mut rng, &mut churn, &epoch::pin());
                    ops += 1;
                }
                ops
            })
        })
        .collect();
    let readers: Vec<_> = (0..readers)
        .map(|_| {
            let (shared, ids, stop) = (shared.clone(), ids.clone(), stop.clone());
            thread::spawn(move || {
                let (mut valid, mut invalid) = (0u64, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    if read(&shared, &ids) {
                        valid += 1;
                    } else {
                        invalid += 1;
                    }
                }
                (valid, invalid)
            })
        })
        .collect();
    thread::sleep(duration());
    stop.store(true, Ordering::Relaxed);
    let ops: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let (valid, invalid) = readers
        .into_iter()
        .map(|r| r.join().unwrap())
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
    eprintln!("{name}: {ops} writer ops, {valid} valid walks, {invalid} invalidated walks");
    assert!(ops > 100 && valid > 10, "{name} did not run: {ops} ops, {valid} valid walks");
}

fn stable_order() -> Vec<usize> {
    (0..STABLE).collect()
}

#[test]
fn list_readers_vs_churning_writers() {
    let ids = Ids::new();
    let list = List::<LA>::new();
    let stable: Vec<Arc<Node>> = (0..STABLE).map(|k| fresh(&ids, k).unwrap()).collect();
    for n in &stable {
        list.lock().push_back(n.clone()).unwrap();
    }
    race(
        "list stress",
        (list, stable),
        &ids,
        (2, 2),
        |(list, stable), ids, rng, churn, guard| {
            let i = rng.below(churn.nodes.len());
            let settled = churn.settled(i);
            let node = churn.nodes[i].clone();
            let mut wr = list.lock();
            if wr.contains(&node) {
                match rng.below(5) {
                    0 => assert!(wr.move_to_front(&node)),
                    1 => assert!(wr.move_to_back(&node)),
                    2 => {
                        let j = rng.below(churn.nodes.len());
                        if j != i && churn.settled(j) {
                            wr.replace(&node, churn.nodes[j].clone()).unwrap().retire(guard);
                        }
                    }
                    _ => wr.remove(&node).unwrap().retire(guard),
                }
            } else if settled {
                let anchor = &stable[rng.below(STABLE)];
                let res = match rng.below(4) {
                    0 => wr.push_front(node),
                    1 => wr.push_back(node),
                    2 => wr.insert_after(anchor, node),
                    _ => wr.insert_before(anchor, node),
                };
                assert!(res.is_ok());
            } else {
                drop(wr);
                churn.maybe_renew(i, rng, ids);
            }
        },
        |(list, _), ids| {
            let guard = epoch::pin();
            let mut it = list.iter(&guard);
            let mut seen = Vec::new();
            for n in it.by_ref() {
                ids.check(n.id);
                seen.push(n.id);
                pause_sometimes(seen.len());
            }
            seen.iter().for_each(|&id| ids.check(id));
            let valid = it.valid();
            if valid {
                let stable_seen: Vec<usize> =
                    seen.iter().copied().filter(|&id| id < STABLE).collect();
                assert_eq!(stable_seen, stable_order(), "valid walk");
                let mut all = seen.clone();
                all.sort_unstable();
                all.dedup();
                assert_eq!(all.len(), seen.len(), "valid walk saw a node twice");
            }
            valid
        },
    );
}

#[test]
fn chain_lookups_vs_churning_writers() {
    const BUCKETS: usize = 4;
    let ids = Ids::new();
    let buckets: Vec<HListBl<HA>> = (0..BUCKETS).map(|_| HListBl::new()).collect();
    // Stable entries: keys 0..STABLE, never removed.
    for k in 0..STABLE {
        buckets[k % BUCKETS].lock().push_front(fresh(&ids, k).unwrap()).unwrap();
    }
    race(
        "chain stress",
        buckets,
        &ids,
        (2, 2),
        |buckets, ids, rng, churn, guard| {
            let i = rng.below(churn.nodes.len());
            let settled = churn.settled(i);
            let node = churn.nodes[i].clone();
            let b = &buckets[(STABLE + i) % BUCKETS];
            let mut wr = b.lock();
            if wr.contains(&node) {
                wr.remove(&node).unwrap().retire(guard);
            } else if settled {
                let res = match wr.front(guard) {
                    // After some entry: exercises insert_after on a live chain.
                    Some(first) if rng.below(2) == 0 => wr.insert_after(first, node),
                    _ => wr.push_front(node),
                };
                assert!(res.is_ok());
            } else {
                drop(wr);
                churn.maybe_renew(i, rng, ids);
            }
        },
        |buckets, ids| {
            // One lookup of every stable key; each must be found exactly once.
            for k in 0..STABLE {
                let guard = epoch::pin();
                let mut found = 0;
                for (i, e) in buckets[k % BUCKETS].iter(&guard).enumerate() {
                    ids.check(e.id);
                    pause_sometimes(i + 1);
                    found += usize::from(e.id < STABLE && e.key == k);
                }
                assert_eq!(found, 1, "stable key {k} seen {found} times");
            }
            true
        },
    );
}

#[test]
fn child_list_walks_vs_sign_changes() {
    let ids = Ids::new();
    let dir = ChildList::<LA>::new();
    for k in 0..STABLE {
        dir.lock().positive().push_back(fresh(&ids, k).unwrap()).unwrap();
    }
    race(
        "child stress",
        dir,
        &ids,
        (1, 1),
        |dir, ids, rng, churn, guard| {
            let i = rng.below(churn.nodes.len());
            let settled = churn.settled(i);
            let node = churn.nodes[i].clone();
            let mut w = dir.lock();
            if w.positive().contains(&node) {
                assert!(w.make_negative(&node));
            } else if w.negative().contains(&node) {
                if rng.below(2) == 0 {
                    assert!(w.make_positive(&node));
                } else {
                    w.remove(&node).unwrap().retire(guard);
                }
            } else if settled {
                w.positive().push_front(node).unwrap();
            } else {
                drop(w);
                churn.maybe_renew(i, rng, ids);
            }
        },
        |dir, ids| {
            let guard = epoch::pin();
            let mut it = dir.iter_all(&guard);
            let mut stable_seen = Vec::new();
            for (i, n) in it.by_ref().enumerate() {
                ids.check(n.id);
                pause_sometimes(i + 1);
                if n.id < STABLE {
                    stable_seen.push(n.id);
                }
            }
            let valid = it.valid();
            if valid {
                assert_eq!(stable_seen, stable_order(), "valid walk of all children");
            }
            let mut pos = dir.iter_positive(&guard);
            let stable_pos: Vec<usize> =
                pos.by_ref().map(|n| n.id).filter(|&id| id < STABLE).collect();
            if pos.valid() {
                assert_eq!(stable_pos, stable_order(), "valid walk of the positives");
            }
            valid
        },
    );
}
