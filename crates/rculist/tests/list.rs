//! Single-threaded behaviour of `List`, `ListWriter` and `CursorMut`.

mod common;

use common::{AAdapter, BAdapter, node, wait_released};
use udcache_rculist::{End, List, epoch};

fn values(list: &List<AAdapter>) -> Vec<u32> {
    let guard = epoch::pin();
    list.iter(&guard).map(|n| n.v).collect()
}

#[test]
fn push_insert_and_iterate_in_order() {
    let list = List::<AAdapter>::new();
    assert!(list.is_empty());
    let (n1, n2, n3, n4) = (node(1), node(2), node(3), node(4));
    let mut w = list.lock();
    w.push_back(n2.clone()).unwrap();
    w.push_front(n1.clone()).unwrap();
    w.push_back(n4.clone()).unwrap();
    w.insert_before(&n4, n3.clone()).unwrap();
    w.insert_after(&n4, node(5)).unwrap();
    let guard = epoch::pin();
    assert_eq!(w.front(&guard).map(|n| n.v), Some(1));
    assert_eq!(w.back(&guard).map(|n| n.v), Some(5));
    drop(w);
    assert_eq!(values(&list), [1, 2, 3, 4, 5]);
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let list = List::<AAdapter>::new();
    let other = List::<AAdapter>::new();
    let (n1, n2, stranger) = (node(1), node(2), node(9));
    list.lock().push_back(n1.clone()).unwrap();
    other.lock().push_back(n2.clone()).unwrap();
    let mut w = list.lock();
    // Already on this list, or on another list through the same link.
    assert!(w.push_back(n1.clone()).is_err());
    assert!(w.push_front(n2.clone()).is_err());
    // Anchors and targets that are not members.
    assert!(w.insert_after(&stranger, node(3)).is_err());
    assert!(w.insert_before(&n2, node(3)).is_err());
    assert!(w.remove(&n2).is_none());
    assert!(w.replace(&stranger, node(3)).is_err());
    assert!(!w.move_to_front(&n2));
    assert!(!w.move_to_back(&stranger));
    assert!(w.contains(&n1) && !w.contains(&n2));
    drop(w);
    assert_eq!(values(&list), [1]);
    assert_eq!(values(&other), [2]);
}

#[test]
fn one_node_on_two_lists() {
    let a = List::<AAdapter>::new();
    let b = List::<BAdapter>::new();
    let n = node(7);
    a.lock().push_back(n.clone()).unwrap();
    b.lock().push_back(n.clone()).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&n), 3);
    a.lock().remove(&n).unwrap();
    let guard = epoch::pin();
    assert_eq!(b.iter(&guard).map(|x| x.v).collect::<Vec<_>>(), [7]);
    drop(guard);
    b.lock().remove(&n).unwrap();
    assert!(wait_released(&n), "the lists' references were never released");
}

#[test]
fn removed_node_keeps_its_forward_pointer() {
    let list = List::<AAdapter>::new();
    let nodes: Vec<_> = (0..4).map(node).collect();
    for n in &nodes {
        list.lock().push_back(n.clone()).unwrap();
    }
    let guard = epoch::pin();
    let mut it = list.iter(&guard);
    assert_eq!(it.next().map(|n| n.v), Some(0));
    assert_eq!(it.next().map(|n| n.v), Some(1));
    // The reader's next step is node 2; remove 1 (behind it) and 2 (under it).
    list.lock().remove(&nodes[1]).unwrap().retire(&guard);
    list.lock().remove(&nodes[2]).unwrap().retire(&guard);
    assert_eq!(it.map(|n| n.v).collect::<Vec<_>>(), [2, 3]);
    assert_eq!(values(&list), [0, 3]);
}

#[test]
fn replace_swaps_in_place() {
    let list = List::<AAdapter>::new();
    let (n1, n2, n3) = (node(1), node(2), node(3));
    let mut w = list.lock();
    w.push_back(n1.clone()).unwrap();
    w.push_back(n2.clone()).unwrap();
    w.push_back(n3.clone()).unwrap();
    let old = w.replace(&n2, node(20)).unwrap();
    assert_eq!(old.v, 2);
    let old = w.replace(&n3, node(30)).unwrap();
    assert_eq!(old.v, 3);
    w.push_back(node(4)).unwrap();
    drop(w);
    assert_eq!(values(&list), [1, 20, 30, 4]);
    assert!(!n2.a.is_linked());
}

#[test]
fn moves_and_pops() {
    let list = List::<AAdapter>::new();
    let nodes: Vec<_> = (0..4).map(node).collect();
    let mut w = list.lock();
    for n in &nodes {
        w.push_back(n.clone()).unwrap();
    }
    assert!(w.move_to_front(&nodes[2]));
    assert!(w.move_to_back(&nodes[0]));
    drop(w);
    assert_eq!(values(&list), [2, 1, 3, 0]);
    let mut w = list.lock();
    assert_eq!(w.pop_front().map(|n| n.v), Some(2));
    assert_eq!(w.pop_back().map(|n| n.v), Some(0));
    assert!(w.move_to_back(&nodes[1]));
    drop(w);
    assert_eq!(values(&list), [3, 1]);
}

#[test]
fn move_between_lists_and_splice() {
    let a = List::<AAdapter>::new();
    let b = List::<AAdapter>::new();
    let nodes: Vec<_> = (0..5).map(node).collect();
    {
        let mut wa = a.lock();
        for n in &nodes[..3] {
            wa.push_back(n.clone()).unwrap();
        }
        let mut wb = b.lock();
        for n in &nodes[3..] {
            wb.push_back(n.clone()).unwrap();
        }
        assert!(wa.move_to(&nodes[1], &mut wb, End::Front));
        assert!(!wa.move_to(&nodes[1], &mut wb, End::Back));
        assert!(wb.contains(&nodes[1]));
    }
    assert_eq!(values(&a), [0, 2]);
    assert_eq!(values(&b), [1, 3, 4]);
    {
        let mut wa = a.lock();
        let mut wb = b.lock();
        wa.splice_back(&mut wb);
        assert!(wb.is_empty());
        assert!(wa.contains(&nodes[3]));
        // The spliced nodes belong to `a` now: `b` refuses them, `a` edits them.
        assert!(wb.remove(&nodes[3]).is_none());
        assert!(wa.move_to_front(&nodes[4]));
    }
    assert_eq!(values(&a), [4, 0, 2, 1, 3]);
    assert!(values(&b).is_empty());
}

#[test]
fn cursor_walks_removes_and_inserts() {
    let list = List::<AAdapter>::new();
    let mut w = list.lock();
    for v in 0..6 {
        w.push_back(node(v)).unwrap();
    }
    let guard = epoch::pin();
    let mut c = w.cursor_mut(&guard);
    while let Some(n) = c.get() {
        if n.v % 2 == 1 {
            assert_eq!(c.remove_current().map(|x| x.v), Some(n.v));
        } else {
            c.insert_after(node(n.v + 10)).unwrap();
            c.move_next();
            c.move_next();
        }
    }
    // Past the end: insert_before appends, move_prev reaches the last node.
    c.insert_before(node(99)).unwrap();
    c.move_prev();
    assert_eq!(c.get().map(|n| n.v), Some(99));
    assert!(c.remove_current().is_some());
    assert!(c.get().is_none());
    drop(w);
    assert_eq!(values(&list), [0, 10, 2, 12, 4, 14]);
}

#[test]
fn iter_valid_reports_moves_only() {
    let list = List::<AAdapter>::new();
    let nodes: Vec<_> = (0..3).map(node).collect();
    for n in &nodes {
        list.lock().push_back(n.clone()).unwrap();
    }
    let guard = epoch::pin();
    let it = list.iter(&guard);
    list.lock().push_back(node(3)).unwrap();
    list.lock().remove(&nodes[0]).unwrap().retire(&guard);
    assert!(it.valid(), "insertions and removals are not moves");
    list.lock().move_to_back(&nodes[1]);
    assert!(!it.valid());
    assert!(list.iter(&guard).valid());
}

#[test]
fn dropping_a_list_releases_its_references_later() {
    let n = node(1);
    let list = List::<AAdapter>::new();
    list.lock().push_back(n.clone()).unwrap();
    drop(list);
    assert!(!n.a.is_linked());
    assert!(wait_released(&n));
    // The node can join another list afterwards.
    let again = List::<AAdapter>::new();
    again.lock().push_back(n.clone()).unwrap();
}

#[test]
fn unlinked_to_ptr_keeps_the_node() {
    let list = List::<AAdapter>::new();
    list.lock().push_back(node(5)).unwrap();
    let gone = list.lock().pop_front().unwrap();
    let kept = gone.to_ptr();
    drop(gone);
    assert_eq!(kept.v, 5);
    assert!(wait_released(&kept));
}

#[test]
#[should_panic(expected = "default collector")]
fn a_guard_of_another_collector_is_refused() {
    let list = List::<AAdapter>::new();
    let collector = epoch::Collector::new();
    let handle = collector.register();
    let guard = handle.pin();
    let _ = list.iter(&guard).count();
}

#[test]
fn get_mut_needs_no_lock() {
    let mut list = List::<AAdapter>::new();
    list.get_mut().push_back(node(1)).unwrap();
    assert_eq!(values(&list), [1]);
}

/// A reader of the list spliced away is carried onto the other list: it may see a node twice
/// (moved there again) or nodes that were never on its list (appended after the splice), and
/// `valid()` must say so. Before the splice opened write sections, it said nothing.
#[test]
fn a_reader_carried_off_by_a_splice_is_told_by_valid() {
    let (dst, src) = (List::<AAdapter>::new(), List::<AAdapter>::new());
    let (s1, o1, o2) = (node(10), node(1), node(2));
    dst.lock().push_back(s1.clone()).unwrap();
    src.lock().push_back(o1.clone()).unwrap();
    src.lock().push_back(o2.clone()).unwrap();
    let guard = epoch::pin();
    let mut it = src.iter(&guard);
    let mut seen = vec![it.next().unwrap().v];
    {
        let (mut d, mut s) = (dst.lock(), src.lock());
        d.splice_back(&mut s); // dst: s1, o1, o2
        d.move_to_front(&o2); // dst: o2, s1, o1
    }
    seen.extend(it.by_ref().map(|n| n.v));
    assert_eq!(seen, [1, 2, 10, 1], "carried onto dst: o1 twice, and dst's s1");
    assert!(!it.valid(), "a walk that saw o1 twice reported itself valid");

    // Carried past the old end into what is appended later.
    let (dst, src) = (List::<AAdapter>::new(), List::<AAdapter>::new());
    src.lock().push_back(node(1)).unwrap();
    let mut it = src.iter(&guard);
    {
        let (mut d, mut s) = (dst.lock(), src.lock());
        d.splice_back(&mut s);
        d.push_back(node(99)).unwrap();
    }
    let seen: Vec<u32> = it.by_ref().map(|n| n.v).collect();
    assert_eq!(seen, [1, 99]);
    assert!(!it.valid());
}

/// A node the caller named by `&Node` (an anchor of `insert_before`/`insert_after`) must come
/// back from the list with the provenance of the list's own reference: the last `Arc` made
/// from it frees the node. Miri (Tree and Stacked Borrows) reported that deallocation as UB
/// while the list stored a link pointer derived from the caller's shared reference.
#[test]
fn a_node_named_by_reference_comes_back_with_the_lists_pointer() {
    let list = List::<AAdapter>::new();
    let anchor = node(1);
    let mut w = list.lock();
    w.push_back(anchor.clone()).unwrap();
    w.insert_before(&anchor, node(0)).unwrap();
    w.insert_after(&anchor, node(2)).unwrap();
    drop(w.pop_front().unwrap());
    // The anchor is now reached through the head word, which held `0`'s `next`.
    let taken = w.pop_front().unwrap();
    assert_eq!(taken.v, 1);
    assert_eq!(w.pop_back().map(|n| n.v), Some(2));
    drop(w);
    drop(anchor);
    let mine = taken.to_ptr();
    drop(taken);
    assert!(wait_released(&mine));
    // The last reference: frees the node through the pointer the list handed back.
    drop(mine);
}
