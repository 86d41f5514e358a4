//! Single-threaded behaviour of `SplitList`.

mod common;

use common::{AAdapter, node};
use udcache_rculist::{SplitList, epoch};

#[test]
fn sides_and_moves_between_them() {
    let dir = SplitList::<AAdapter>::new();
    let nodes: Vec<_> = (0..4).map(node).collect();
    {
        let mut w = dir.lock();
        for n in &nodes {
            w.first().push_back(n.clone()).unwrap();
        }
        assert!(w.move_to_second(&nodes[1]));
        assert!(w.move_to_second(&nodes[3]));
        assert!(!w.move_to_second(&nodes[3]), "already negative");
        assert!(!w.move_to_first(&nodes[0]), "already positive");
    }
    let guard = epoch::pin();
    let pos: Vec<u32> = dir.iter_first(&guard).map(|n| n.v).collect();
    let neg: Vec<u32> = dir.iter_second(&guard).map(|n| n.v).collect();
    assert_eq!((pos.as_slice(), neg.as_slice()), ([0, 2].as_slice(), [1, 3].as_slice()));
    let all = dir.iter_all(&guard);
    assert!(all.valid());
    assert_eq!(all.map(|n| n.v).collect::<Vec<_>>(), [0, 2, 1, 3]);
    {
        let mut w = dir.lock();
        assert!(w.move_to_first(&nodes[1]));
        assert_eq!(w.remove(&nodes[3]).map(|n| n.v), Some(3));
        assert_eq!(w.remove(&nodes[0]).map(|n| n.v), Some(0));
        assert!(w.remove(&nodes[3]).is_none());
    }
    let pos: Vec<u32> = dir.iter_first(&guard).map(|n| n.v).collect();
    assert_eq!(pos, [2, 1]);
    assert!(dir.iter_second(&guard).next().is_none());
}

#[test]
fn a_walk_reports_a_move_between_sides() {
    let dir = SplitList::<AAdapter>::new();
    let nodes: Vec<_> = (0..3).map(node).collect();
    for n in &nodes {
        dir.lock().first().push_back(n.clone()).unwrap();
    }
    let guard = epoch::pin();
    let mut all = dir.iter_all(&guard);
    let mut pos = dir.iter_first(&guard);
    let mut neg = dir.iter_second(&guard);
    assert_eq!(all.next().map(|n| n.v), Some(0));
    assert_eq!(pos.next().map(|n| n.v), Some(0));
    assert!(neg.next().is_none());
    dir.lock().move_to_second(&nodes[0]);
    assert!(!all.valid() && !pos.valid() && !neg.valid());
    // The all-children walk that had passed node 0 sees it again among the negatives.
    assert_eq!(all.map(|n| n.v).collect::<Vec<_>>(), [1, 2, 0]);
}

#[test]
fn exclusive_and_external_writers() {
    let mut dir = SplitList::<AAdapter>::new();
    dir.get_mut().second().push_back(node(1)).unwrap();
    // SAFETY: this test is the only writer.
    let mut w = unsafe { dir.writer_unchecked() };
    w.first().push_front(node(2)).unwrap();
    drop(w);
    let guard = epoch::pin();
    assert_eq!(dir.iter_all(&guard).map(|n| n.v).collect::<Vec<_>>(), [2, 1]);
}
