//! Loom models of the reader contract (crate docs, "What readers may assume").
//!
//! Each model runs one writer against one lockless reader and asserts exactly the table in
//! `list.rs` / `hlist.rs`: which nodes the reader must see once, which at most once, which once
//! or twice, and that nothing it is handed has been freed while it is pinned.
//!
//! Run with
//! `RUSTFLAGS="--cfg loom --cfg crossbeam_loom" cargo test --release -p udcache-rculist --test loom_rculist`.
#![cfg(loom)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use udcache_rculist::{BareLink, BareList, HLink, HListBl, Link, List, SplitList, adapter, epoch};

/// Freed flags live outside the nodes so a reader can check them by id.
type Freed = Arc<Vec<AtomicBool>>;

struct Node {
    id: usize,
    link: Link,
    hlink: HLink,
    bare: BareLink,
    freed: Freed,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.freed[self.id].store(true, Ordering::SeqCst);
    }
}

adapter!(LA = Node { link: Link });
adapter!(HA = Node { hlink: HLink });
adapter!(BA = Node { bare: BareLink });

fn node(id: usize, freed: &Freed) -> Arc<Node> {
    let (link, hlink, bare) = (Link::new(), HLink::new(), BareLink::new());
    Arc::new(Node { id, link, hlink, bare, freed: freed.clone() })
}

fn nodes(n: usize) -> (Freed, Vec<Arc<Node>>) {
    let freed: Freed = Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
    let v = (0..n).map(|id| node(id, &freed)).collect();
    (freed, v)
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(2);
    b.check(f);
}

/// Walks `list`, checking each node is not freed, and returns the ids in the order seen and
/// whether the walk was valid.
fn walk(list: &List<LA>, freed: &Freed) -> (Vec<usize>, bool) {
    let guard = epoch::pin();
    // A switch point before the walk: loom runs the spawning thread's steps first otherwise,
    // and never the schedules where a writer acts between the pin and the first load.
    loom::thread::yield_now();
    let mut it = list.iter(&guard);
    let seen: Vec<usize> = it
        .by_ref()
        .map(|n| {
            assert!(!freed[n.id].load(Ordering::SeqCst), "node {} freed under a reader", n.id);
            n.id
        })
        .collect();
    let valid = it.valid();
    // Still pinned: nothing seen may have been freed since.
    for &id in &seen {
        assert!(!freed[id].load(Ordering::SeqCst), "node {id} freed under a pinned reader");
    }
    (seen, valid)
}

fn count(seen: &[usize], id: usize) -> usize {
    seen.iter().filter(|&&x| x == id).count()
}

/// Traverse vs push_back + remove: nodes 0 and 2 (on the list throughout) are seen exactly once
/// and in order; 1 (removed) and 3 (pushed) at most once; nothing is freed under the reader.
#[test]
fn traverse_vs_push_remove() {
    model(|| {
        let (freed, mut ns) = nodes(4);
        let list = Arc::new(List::<LA>::new());
        {
            let mut w = list.lock();
            for n in &ns[..3] {
                w.push_back(n.clone()).unwrap();
            }
        }
        let n3 = ns.pop().unwrap();
        let n1 = ns.remove(1);
        let writer = {
            let list = list.clone();
            loom::thread::spawn(move || {
                let guard = epoch::pin();
                let gone = {
                    let mut w = list.lock();
                    w.push_back(n3).unwrap();
                    w.remove(&n1).unwrap()
                };
                // The list's deferred reference is now node 1's last one.
                drop(n1);
                gone.retire(&guard);
                drop(guard);
                epoch::pin().flush();
            })
        };
        let (seen, valid) = walk(&list, &freed);
        writer.join().unwrap();
        assert!(valid, "no move ran");
        assert_eq!(count(&seen, 0), 1, "{seen:?}");
        assert_eq!(count(&seen, 2), 1, "{seen:?}");
        assert!(count(&seen, 1) <= 1 && count(&seen, 3) <= 1, "{seen:?}");
        let order: Vec<usize> = seen.iter().copied().filter(|&x| x != 1 && x != 3).collect();
        assert_eq!(order, [0, 2]);
        // Nodes are seen in list order: 1 only between 0 and 2, 3 only last.
        let pos = |id| seen.iter().position(|&x| x == id);
        if let Some(p) = pos(1) {
            assert!(pos(0) < Some(p) && Some(p) < pos(2), "{seen:?}");
        }
        if let Some(p) = pos(3) {
            assert_eq!(p, seen.len() - 1, "{seen:?}");
        }
    });
}

/// Traverse vs push_front on 1, 2 of a node 0 the writer makes: 1 and 2 are seen exactly
/// once and in order, 0 at most once and only first. The node is made on the writer's thread
/// (as a cache makes its entries), so only the publishing store's Release makes its link's
/// `next` (and its making) visible to a reader that reaches it: with that store Relaxed, the
/// reader may read the `next` the node was made with (null), and end its walk before 1. A
/// push at the back (above) stores the null a new node is made with, and its node is made
/// before the reader starts, so it cannot tell.
#[test]
fn traverse_vs_push_front_of_a_new_node() {
    model(|| {
        let freed: Freed = Arc::new((0..3).map(|_| AtomicBool::new(false)).collect());
        let list = Arc::new(List::<LA>::new());
        {
            let mut w = list.lock();
            for id in 1..3 {
                w.push_back(node(id, &freed)).unwrap();
            }
        }
        let writer = {
            let (list, freed) = (list.clone(), freed.clone());
            loom::thread::spawn(move || list.lock().push_front(node(0, &freed)).unwrap())
        };
        let (seen, valid) = walk(&list, &freed);
        writer.join().unwrap();
        assert!(valid, "no move ran");
        assert!(seen == [1, 2] || seen == [0, 1, 2], "{seen:?}");
    });
}

/// Traverse vs `replace(1, 3)` on 0, 1, 2: the reader sees 0 and 2 once and exactly one of the
/// old and the new node at that position.
#[test]
fn traverse_vs_replace() {
    model(|| {
        let (freed, ns) = nodes(4);
        let list = Arc::new(List::<LA>::new());
        for n in &ns[..3] {
            list.lock().push_back(n.clone()).unwrap();
        }
        let writer = {
            let (list, old, new) = (list.clone(), ns[1].clone(), ns[3].clone());
            loom::thread::spawn(move || drop(list.lock().replace(&old, new).unwrap()))
        };
        let (seen, valid) = walk(&list, &freed);
        writer.join().unwrap();
        assert!(valid);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!((seen[0], seen[2]), (0, 2), "{seen:?}");
        assert!(seen[1] == 1 || seen[1] == 3, "{seen:?}");
    });
}

/// Traverse vs one move of node `x` in the list 0, 1, 2: the counts of the module table.
fn traverse_vs_move(x: usize, to_back: bool) {
    model(move || {
        let (freed, ns) = nodes(3);
        let list = Arc::new(List::<LA>::new());
        for n in &ns {
            list.lock().push_back(n.clone()).unwrap();
        }
        let writer = {
            let list = list.clone();
            let moved = ns[x].clone();
            loom::thread::spawn(move || {
                let mut w = list.lock();
                assert!(if to_back { w.move_to_back(&moved) } else { w.move_to_front(&moved) });
            })
        };
        let (seen, valid) = walk(&list, &freed);
        writer.join().unwrap();
        if valid {
            // No move overlapped: exactly once each, in the order before or after the move.
            let mut sorted = seen.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2], "valid walk saw {seen:?}");
        }
        for id in 0..3 {
            let c = count(&seen, id);
            let allowed = match (id == x, to_back) {
                // Moved to the back: once, twice if passed, or never if the walk passed its
                // old place between the unlink and the relink and reached the end first.
                (true, true) if valid => 1..=1,
                (true, true) => 0..=2,
                (true, false) => 0..=1, // moved to the front: missed if not yet reached
                (false, true) => 0..=1, // a reader on x skips to the end
                (false, false) => 1..=2, // a reader on x walks on from the old front
            };
            assert!(allowed.contains(&c), "node {id} seen {c} times: {seen:?}");
        }
        if !to_back {
            assert!(seen.len() <= 5, "{seen:?}");
        }
    });
}

#[test]
fn traverse_vs_move_to_back() {
    traverse_vs_move(0, true);
}

#[test]
fn traverse_vs_move_to_front() {
    traverse_vs_move(2, false);
}

/// Walk of `src` (0, 1) vs `dst.splice_back(src)` then a push of 3 onto `dst` (2): a walk
/// that `valid()` says no move overlapped saw `src` at one instant, [0, 1] or empty; any walk
/// sees each node at most once here, and 2 never (it is before the spliced nodes).
#[test]
fn walk_of_a_list_vs_splicing_it_away() {
    model(|| {
        let (freed, ns) = nodes(4);
        let (src, dst) = (Arc::new(List::<LA>::new()), Arc::new(List::<LA>::new()));
        for n in &ns[..2] {
            src.lock().push_back(n.clone()).unwrap();
        }
        dst.lock().push_back(ns[2].clone()).unwrap();
        let writer = {
            let (src, dst, n3) = (src.clone(), dst.clone(), ns[3].clone());
            loom::thread::spawn(move || {
                let (mut d, mut s) = (dst.lock(), src.lock());
                d.splice_back(&mut s);
                d.push_back(n3).unwrap();
            })
        };
        let (seen, valid) = walk(&src, &freed);
        writer.join().unwrap();
        if valid {
            assert!(seen.is_empty() || seen == [0, 1], "valid walk saw {seen:?}");
        }
        assert_eq!(count(&seen, 2), 0, "{seen:?}");
        assert!((0..4).all(|id| count(&seen, id) <= 1), "{seen:?}");
    });
}

/// Walk of all children vs `move_to_second(0)` on positives 0, 1: node 0 is seen at most twice
/// (twice if the walk had passed it, never if it passed its old place between the unlink and
/// the relink); node 1 is seen exactly once unless the reader stood on 0 when it moved (it then
/// continues into the negatives and misses 1); a valid walk sees each exactly once.
#[test]
fn child_walk_vs_move_to_second() {
    model(|| {
        let (freed, ns) = nodes(2);
        let dir = Arc::new(SplitList::<LA>::new());
        for n in &ns {
            dir.lock().first().push_back(n.clone()).unwrap();
        }
        let writer = {
            let (dir, moved) = (dir.clone(), ns[0].clone());
            loom::thread::spawn(move || assert!(dir.lock().move_to_second(&moved)))
        };
        let guard = epoch::pin();
        loom::thread::yield_now(); // as in `walk`
        let mut it = dir.iter_all(&guard);
        let seen: Vec<usize> = it
            .by_ref()
            .map(|n| {
                assert!(!freed[n.id].load(Ordering::SeqCst));
                n.id
            })
            .collect();
        let valid = it.valid();
        writer.join().unwrap();
        assert!(count(&seen, 0) <= 2, "{seen:?}");
        assert!(count(&seen, 1) <= 1, "{seen:?}");
        if valid {
            assert_eq!((count(&seen, 0), count(&seen, 1)), (1, 1), "valid walk saw {seen:?}");
        }
    });
}

/// Hash-chain lookup vs insert + remove on the same bucket: the entry on the chain throughout
/// is found exactly once; the inserted and the removed one at most once; nothing is freed under
/// the reader. The chain is 0, 1; the writer inserts 2 first or between 0 and 1 (with a
/// cursor, as neghash puts an entry in front of its chain's first negative), then removes 0.
fn chain_lookup_vs_insert_remove(in_the_middle: bool) {
    model(move || {
        let (freed, mut ns) = nodes(3);
        let bucket = Arc::new(HListBl::<HA>::new());
        {
            let mut w = bucket.lock();
            w.push_front(ns[1].clone()).unwrap();
            w.push_front(ns[0].clone()).unwrap();
        }
        let n2 = ns.pop().unwrap();
        let n0 = ns.remove(0);
        let writer = {
            let bucket = bucket.clone();
            loom::thread::spawn(move || {
                let guard = epoch::pin();
                let gone = {
                    let mut w = bucket.lock();
                    if in_the_middle {
                        let mut at = w.cursor_mut(&guard);
                        at.move_next();
                        at.insert_before(n2).unwrap();
                    } else {
                        w.push_front(n2).unwrap();
                    }
                    w.remove(&n0).unwrap()
                };
                drop(n0);
                gone.retire(&guard);
                drop(guard);
                epoch::pin().flush();
            })
        };
        let guard = epoch::pin();
        let seen: Vec<usize> = bucket
            .iter(&guard)
            .map(|n| {
                assert!(!freed[n.id].load(Ordering::SeqCst), "entry {} freed under a reader", n.id);
                n.id
            })
            .collect();
        assert_eq!(count(&seen, 1), 1, "{seen:?}");
        assert!(count(&seen, 0) <= 1 && count(&seen, 2) <= 1, "{seen:?}");
        for &id in &seen {
            assert!(!freed[id].load(Ordering::SeqCst));
        }
        drop(guard);
        writer.join().unwrap();
        assert!(!bucket.is_locked());
    });
}

#[test]
fn chain_lookup_vs_insert_at_the_front_and_remove() {
    chain_lookup_vs_insert_remove(false);
}

#[test]
fn chain_lookup_vs_insert_in_the_middle_and_remove() {
    chain_lookup_vs_insert_remove(true);
}

/// Summarised lookups vs inserts and a removal on one bucket: the writer inserts node 0 and
/// then node 1 (each bit added first), then says it is removing 0, removes it and recomputes
/// the summary. A reader that finds 1 through the summary must find 0 through it too unless
/// the removal had begun; nothing it finds is freed under it.
#[test]
fn summarised_lookup_vs_insert_remove() {
    model(|| {
        let (freed, mut ns) = nodes(2);
        let bucket = Arc::new(HListBl::<HA>::new());
        let removing = Arc::new(AtomicBool::new(false));
        let bit = |id: usize| 1u16 << id;
        let (n1, n0) = (ns.pop().unwrap(), ns.pop().unwrap());
        let writer = {
            let (bucket, removing) = (bucket.clone(), removing.clone());
            loom::thread::spawn(move || {
                let guard = epoch::pin();
                for n in [&n0, &n1] {
                    let mut w = bucket.lock();
                    w.add_tags(bit(n.id));
                    w.push_front(n.clone()).unwrap();
                }
                removing.store(true, Ordering::SeqCst);
                let gone = {
                    let mut w = bucket.lock();
                    let gone = w.remove(&n0).unwrap();
                    w.set_tags(bit(1));
                    gone
                };
                drop(n0);
                gone.retire(&guard);
                drop(guard);
                epoch::pin().flush();
            })
        };
        let find = |id: usize| {
            let guard = epoch::pin();
            let found = bucket.find_tagged(&guard, bit(id), |n| n.id == id);
            if let Some(n) = found {
                assert!(!freed[n.id].load(Ordering::SeqCst), "entry {} freed under a reader", n.id);
            }
            found.is_some()
        };
        let (one, zero) = (find(1), find(0));
        // Seeing the removal's stores (Acquire) makes the flag stored before them visible.
        assert!(!one || zero || removing.load(Ordering::SeqCst), "found 1, missed 0 on the chain");
        writer.join().unwrap();
        assert!(find(1) && !find(0));
    });
}

/// Bare lists: the writer of list `a` takes node 0 off it while the writer of list `b` tries to
/// put it on `b`, and a third node is pushed on `b` around it. The claim is a compare-exchange
/// on the link, so node 0 ends on exactly one of the lists or none, never on both; whichever
/// list holds it gives it back whole (pop order intact), and every reference is accounted for.
#[test]
fn bare_lists_race_for_one_node() {
    model(|| {
        let (_freed, ns) = nodes(2);
        let a = Arc::new(BareList::<BA>::new());
        let b = Arc::new(BareList::<BA>::new());
        a.lock().push_back(ns[0].clone()).unwrap();
        let taker = {
            let (a, n0) = (a.clone(), ns[0].clone());
            loom::thread::spawn(move || {
                // SAFETY: node 0 was put on `a` only, and only this thread takes it off.
                let taken = unsafe { a.lock().remove(&n0) };
                taken.map(|n| n.id)
            })
        };
        let pushed = {
            let mut w = b.lock();
            w.push_back(ns[1].clone()).unwrap();
            w.push_back(ns[0].clone()).is_ok()
        };
        assert_eq!(taker.join().unwrap(), Some(0), "node 0 was on `a` until taken");
        let mut w = b.lock();
        let on_b: Vec<usize> = std::iter::from_fn(|| w.pop_front().map(|n| n.id)).collect();
        assert_eq!(on_b, if pushed { vec![1, 0] } else { vec![1] });
        assert!(a.lock().pop_front().is_none());
        assert!(ns.iter().all(|n| !n.bare.is_linked() && Arc::strong_count(n) == 1));
    });
}
