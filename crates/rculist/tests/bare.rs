//! `BareList`: order, refusal of a node already on a list, references handed back, and writers
//! of two lists racing for the same nodes on real threads (with an invariant checker).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use udcache_rculist::{BareLink, BareList, adapter};

struct Node {
    id: usize,
    lru: BareLink,
}

adapter!(LA = Node { lru: BareLink });

fn nodes(n: usize) -> Vec<Arc<Node>> {
    (0..n).map(|id| Arc::new(Node { id, lru: BareLink::new() })).collect()
}

fn drain(list: &BareList<LA>) -> Vec<usize> {
    let mut w = list.lock();
    std::iter::from_fn(|| w.pop_front().map(|n| n.id)).collect()
}

#[test]
fn a_link_is_two_words() {
    assert_eq!(size_of::<BareLink>(), 2 * size_of::<usize>());
}

#[test]
fn removal_keeps_order_and_hands_the_reference_back() {
    let ns = nodes(5);
    let list = BareList::<LA>::new();
    {
        let mut w = list.lock();
        for n in &ns {
            w.push_back(n.clone()).unwrap();
        }
        assert!(ns.iter().all(|n| n.lru.is_linked() && Arc::strong_count(n) == 2));
        for i in [0, 2, 4] {
            // SAFETY: every node is on this list or on none.
            let taken = unsafe { w.remove(&ns[i]) }.expect("a member");
            assert_eq!(taken.id, i);
        }
        // SAFETY: as above.
        let again = unsafe { w.remove(&ns[2]) };
        assert!(again.is_none(), "not on a list any more");
        assert!(!ns[2].lru.is_linked());
        w.push_back(ns[2].clone()).unwrap();
    }
    assert_eq!(drain(&list), [1, 3, 2]);
    assert!(ns.iter().all(|n| !n.lru.is_linked() && Arc::strong_count(n) == 1));
}

#[test]
fn a_node_goes_on_one_list_at_a_time() {
    let ns = nodes(2);
    let (a, b) = (BareList::<LA>::new(), BareList::<LA>::new());
    a.lock().push_back(ns[0].clone()).unwrap();
    let refused = b.lock().push_back(ns[0].clone()).unwrap_err();
    assert_eq!(refused.0.id, 0, "the refused reference comes back");
    drop(refused);
    assert_eq!(Arc::strong_count(&ns[0]), 2);
    assert!(a.lock().push_back(ns[0].clone()).is_err(), "not twice on one list either");
    let moved = a.lock().pop_front().unwrap();
    b.lock().push_back(moved).unwrap();
    assert_eq!((drain(&a), drain(&b)), (vec![], vec![0]));
}

#[test]
fn dropping_a_list_releases_its_members() {
    let ns = nodes(3);
    let list = BareList::<LA>::new();
    for n in &ns {
        list.lock().push_back(n.clone()).unwrap();
    }
    drop(list);
    assert!(ns.iter().all(|n| !n.lru.is_linked() && Arc::strong_count(n) == 1));
}

/// Two threads, each the writer of its own list, push every node they can and pop from their
/// own list, for a bounded time: the claims of the two lists race for the same links. Each
/// thread keeps the set of nodes it pushed and has not popped since; checked all along: a push
/// is never accepted for a node already in the set, a pop returns a node of the set; at the end
/// the two lists hold exactly the two sets, which share no node, and every reference is
/// accounted for.
#[test]
fn writers_of_two_lists_racing_for_nodes() {
    const N: usize = 64;
    let ns = nodes(N);
    let lists = [BareList::<LA>::new(), BareList::<LA>::new()];
    let deadline = Instant::now() + Duration::from_millis(300);
    let sets: Vec<BTreeSet<usize>> = thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|me| {
                let (ns, list) = (&ns, &lists[me]);
                s.spawn(move || {
                    let mut mine = BTreeSet::new();
                    let mut round = 0usize;
                    while Instant::now() < deadline {
                        round += 1;
                        let mut w = list.lock();
                        for n in ns.iter().skip(round % 3).step_by(2) {
                            if w.push_back(n.clone()).is_ok() {
                                assert!(mine.insert(n.id), "{} accepted twice", n.id);
                            }
                        }
                        for _ in 0..N / 3 {
                            let Some(n) = w.pop_front() else { break };
                            assert!(mine.remove(&n.id), "{} popped but not pushed here", n.id);
                        }
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(sets[0].is_disjoint(&sets[1]), "a node on both lists");
    for (list, set) in lists.iter().zip(&sets) {
        let held: BTreeSet<usize> = drain(list).into_iter().collect();
        assert_eq!(&held, set);
    }
    assert!(ns.iter().all(|n| !n.lru.is_linked() && Arc::strong_count(n) == 1));
}
