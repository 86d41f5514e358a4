//! Multi-threaded stress with an invariant checker: lockless readers verify the reader
//! contract (crate docs, "What readers may assume") while writers churn.
//!
//! Each test runs for a bounded time (`STRESS_MS`, default 700 ms) on real threads.
//!
//! - Stable nodes are put on the list first, in id order, and never touched again: a walk that
//!   reports `valid()`, or that no move overlapped (counted by the test itself, around every
//!   move), must see each exactly once, in order; any other walk of a [`List`] must see each at
//!   most once plus once more per move that overlapped it (a reader standing on a node moved
//!   to the front walks the list again). A [`SplitList`] walk sees each at most once, in order,
//!   whatever moved (a reader standing on an entry that changes sides only misses the rest).
//! - Churn nodes are inserted, removed, replaced and moved; a removed node is reinserted only
//!   after its grace period (when the list's reference is gone), or dropped and replaced by a
//!   fresh node, so nodes really are freed while readers run: a freed node's id is reused for
//!   a later node (with a new generation), and each test checks that nodes were still being
//!   freed in the last quarter of its run.
//! - Every node a reader is handed must not have been freed (its id's state, outside the node,
//!   set by its `Drop` and bumped to a new generation when the id is reused), checked again
//!   while the reader is still pinned.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use udcache_rculist::epoch::Guard;
use udcache_rculist::{HLink, HListBl, Link, List, SplitList, adapter, epoch};

/// Ids in use at once: the stable and churn nodes, and the dropped ones whose grace period has
/// not ended (up to about 200,000 seen where readers stay pinned long on a loaded machine).
/// Ids are reused, so this bounds the nodes alive at once, not the run.
const MAX_IDS: usize = 1 << 20;
const STABLE: usize = 16;

/// The id table: which node generation holds each id, and whether that node is alive.
struct Ids {
    /// Per id: the generation of its latest node shifted left once, bit 0 set while that node
    /// is alive. A node freed under a reader reads as dead, or (id reused) as the wrong
    /// generation.
    state: Vec<AtomicU64>,
    /// Ids whose node has been dropped, for reuse.
    recycled: Mutex<Vec<usize>>,
    /// Ids never used yet start here.
    next: AtomicUsize,
    /// Nodes dropped so far.
    frees: AtomicU64,
    /// Fresh nodes refused because every id was in use.
    refused: AtomicU64,
}

const ALIVE: u64 = 1;

impl Ids {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            state: (0..MAX_IDS).map(|_| AtomicU64::new(0)).collect(),
            recycled: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            frees: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        })
    }

    /// Asserts that the node a reader holds, `(id, generation)` as read from it, is alive.
    fn check(&self, (id, generation): (usize, u64)) {
        assert!(id < MAX_IDS, "garbage id {id}: node memory reused under a reader");
        // SeqCst, as the stores in `fresh` and `Node::drop`: a free under a reader is the bug
        // this looks for, and has no happens-before edge to pair with; one total order over
        // the state words at least makes a free that comes before this load in it visible.
        let state = self.state[id].load(Ordering::SeqCst);
        assert_eq!(
            state,
            generation << 1 | ALIVE,
            "node {id} (generation {generation}) freed under a reader"
        );
    }

    fn frees(&self) -> u64 {
        // Relaxed: a count only compared with an earlier reading of itself.
        self.frees.load(Ordering::Relaxed)
    }
}

struct Node {
    id: usize,
    generation: u64,
    key: usize,
    link: Link,
    hlink: HLink,
    ids: Arc<Ids>,
}

impl Node {
    fn tag(&self) -> (usize, u64) {
        (self.id, self.generation)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // SeqCst: see `Ids::check`.
        self.ids.state[self.id].store(self.generation << 1, Ordering::SeqCst);
        // The mutex orders this drop before the id's reuse in `fresh`.
        self.ids.recycled.lock().unwrap().push(self.id);
        // Relaxed: a statistic.
        self.ids.frees.fetch_add(1, Ordering::Relaxed);
    }
}

adapter!(LA = Node { link: Link });
adapter!(HA = Node { hlink: HLink });

/// A fresh node, on the id of a freed one when there is one; `None` (counted as refused) if
/// [`MAX_IDS`] nodes are alive or awaiting their grace period: the writer then keeps its old
/// node, and if that lasted to the end of the run, the frees check fails the test.
fn fresh(ids: &Arc<Ids>, key: usize) -> Option<Arc<Node>> {
    let reused = ids.recycled.lock().unwrap().pop();
    // Relaxed: only hands out distinct ids.
    let id = reused.unwrap_or_else(|| ids.next.fetch_add(1, Ordering::Relaxed));
    if id >= MAX_IDS {
        // Relaxed: a statistic.
        ids.refused.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    // Only this thread owns `id` now (popped under the mutex, which orders the load after the
    // last node's `Drop`, or new from `next`); SeqCst for the store, see `Ids::check`.
    let generation = (ids.state[id].load(Ordering::Relaxed) >> 1) + 1;
    ids.state[id].store(generation << 1 | ALIVE, Ordering::SeqCst);
    let (link, hlink) = (Link::new(), HLink::new());
    Some(Arc::new(Node { id, generation, key, link, hlink, ids: ids.clone() }))
}

/// The test's own count of list moves, independent of the list's sequence count: a writer
/// bumps `started` before a move and `finished` after it, under the list lock.
#[derive(Default)]
struct Moves {
    started: AtomicU64,
    finished: AtomicU64,
}

impl Moves {
    fn run<T>(&self, mv: impl FnOnce() -> T) -> T {
        // SeqCst (for both counters): `started` comes before the move's pointer stores, so a
        // reader that saw one of them (an Acquire load of a Release store, crate docs
        // "Publish") then sees `started` in `overlapping`; `finished` comes after them, so a
        // reader whose `finished` load in `before_walk` saw it walks the list as moved.
        self.started.fetch_add(1, Ordering::SeqCst);
        let r = mv();
        self.finished.fetch_add(1, Ordering::SeqCst);
        r
    }

    /// Before a walk: the moves over by now.
    fn before_walk(&self) -> u64 {
        // SeqCst: pairs with the increment of `finished` in `run`.
        self.finished.load(Ordering::SeqCst)
    }

    /// After a walk: how many moves may have overlapped it (started before its end, not over
    /// before its start).
    fn overlapping(&self, before: u64) -> u64 {
        // SeqCst: pairs with the increment of `started` in `run`.
        self.started.load(Ordering::SeqCst) - before
    }
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

/// Walks `nodes` to the end, checking each node alive when it is handed out and again once
/// the walk is over (the reader still pinned), pausing now and then; their tags, in order.
fn walk_checked<'a>(nodes: impl Iterator<Item = &'a Node>, ids: &Ids) -> Vec<(usize, u64)> {
    let mut seen = Vec::new();
    for n in nodes {
        ids.check(n.tag());
        seen.push(n.tag());
        pause_sometimes(seen.len());
    }
    seen.iter().for_each(|&tag| ids.check(tag));
    seen
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
    let run = duration();
    thread::sleep(run * 3 / 4);
    let frees_at_three_quarters = ids.frees();
    thread::sleep(run - run * 3 / 4);
    let frees_at_end = ids.frees();
    stop.store(true, Ordering::Relaxed);
    let ops: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let (valid, invalid) = readers
        .into_iter()
        .map(|r| r.join().unwrap())
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
    // Relaxed: the threads that took ids have been joined.
    let ids_used = ids.next.load(Ordering::Relaxed).min(MAX_IDS);
    let refused = ids.refused.load(Ordering::Relaxed);
    eprintln!(
        "{name}: {ops} writer ops, {valid} valid walks, {invalid} invalidated walks, \
         {frees_at_end} nodes freed ({} in the last quarter), {ids_used} ids used, \
         {refused} fresh nodes refused",
        frees_at_end - frees_at_three_quarters
    );
    assert!(ops > 100 && valid > 10, "{name} did not run: {ops} ops, {valid} valid walks");
    // Freed nodes are what the reader checks guard against: they must go on being freed while
    // the readers run, to the end.
    assert!(
        frees_at_end > frees_at_three_quarters,
        "{name}: no node freed in the last quarter of the run ({frees_at_end} in all)"
    );
}

fn stable_order() -> Vec<usize> {
    (0..STABLE).collect()
}

/// The stable nodes among the nodes a walk saw, in the order seen.
fn stable_ids(seen: &[(usize, u64)]) -> Vec<usize> {
    seen.iter().map(|&(id, _)| id).filter(|&id| id < STABLE).collect()
}

/// A [`SplitList`] walk's stable nodes: at most once each and in order, whatever moved (a
/// reader standing on an entry that changes sides only misses the positives after it); all of
/// them if no move overlapped the walk or it reports `valid()`.
fn check_child_walk(what: &str, seen: &[(usize, u64)], valid: bool, overlapping: u64) {
    let stable_seen = stable_ids(seen);
    if valid || overlapping == 0 {
        assert_eq!(stable_seen, stable_order(), "walk of {what}: valid {valid}");
    } else {
        assert!(
            stable_seen.is_sorted_by(|a, b| a < b),
            "walk of {what}, {overlapping} moves overlapping: {stable_seen:?}"
        );
    }
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
        (list, stable, Moves::default()),
        &ids,
        (2, 2),
        |(list, stable, moves), ids, rng, churn, guard| {
            let i = rng.below(churn.nodes.len());
            let settled = churn.settled(i);
            let node = churn.nodes[i].clone();
            let mut wr = list.lock();
            if wr.contains(&node) {
                match rng.below(5) {
                    0 => assert!(moves.run(|| wr.move_to_front(&node))),
                    1 => assert!(moves.run(|| wr.move_to_back(&node))),
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
        |(list, _, moves), ids| {
            let guard = epoch::pin();
            let before = moves.before_walk();
            let mut it = list.iter(&guard);
            let seen = walk_checked(it.by_ref(), ids);
            let valid = it.valid();
            let overlapping = moves.overlapping(before);
            let stable_seen = stable_ids(&seen);
            if valid || overlapping == 0 {
                assert_eq!(stable_seen, stable_order(), "valid {valid}, {overlapping} moves");
                let mut all = seen.clone();
                all.sort_unstable();
                all.dedup();
                assert_eq!(all.len(), seen.len(), "a walk no move overlapped saw a node twice");
            } else {
                for id in 0..STABLE {
                    let times = stable_seen.iter().filter(|&&s| s == id).count() as u64;
                    assert!(
                        times <= 1 + overlapping,
                        "stable node {id} seen {times} times by a walk {overlapping} moves \
                         overlapped: {stable_seen:?}"
                    );
                }
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
                    ids.check(e.tag());
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
    let dir = SplitList::<LA>::new();
    for k in 0..STABLE {
        dir.lock().first().push_back(fresh(&ids, k).unwrap()).unwrap();
    }
    race(
        "child stress",
        (dir, Moves::default()),
        &ids,
        (1, 1),
        |(dir, moves), ids, rng, churn, guard| {
            let i = rng.below(churn.nodes.len());
            let settled = churn.settled(i);
            let node = churn.nodes[i].clone();
            let mut w = dir.lock();
            if w.first().contains(&node) {
                assert!(moves.run(|| w.move_to_second(&node)));
            } else if w.second().contains(&node) {
                if rng.below(2) == 0 {
                    assert!(moves.run(|| w.move_to_first(&node)));
                } else {
                    w.remove(&node).unwrap().retire(guard);
                }
            } else if settled {
                w.first().push_front(node).unwrap();
            } else {
                drop(w);
                churn.maybe_renew(i, rng, ids);
            }
        },
        |(dir, moves), ids| {
            let guard = epoch::pin();
            let before = moves.before_walk();
            let mut it = dir.iter_all(&guard);
            let seen = walk_checked(it.by_ref(), ids);
            let valid = it.valid();
            check_child_walk("all children", &seen, valid, moves.overlapping(before));
            let before = moves.before_walk();
            let mut pos = dir.iter_first(&guard);
            let seen: Vec<_> = pos.by_ref().map(|n| n.tag()).collect();
            seen.iter().for_each(|&tag| ids.check(tag));
            check_child_walk("the positives", &seen, pos.valid(), moves.overlapping(before));
            valid
        },
    );
}
