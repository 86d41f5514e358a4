//! Single-threaded behaviour of `HList`, `HListBl`, `HListWriter` and `HCursorMut`.

mod common;

use common::{AAdapter, HAdapter, node, wait_released};
use udcache_rculist::head::{SHORT, TAG_BITS};
use udcache_rculist::{HLink, HList, HListBl, List, epoch};

fn values(chain: &HListBl<HAdapter>) -> Vec<u32> {
    let guard = epoch::pin();
    chain.iter(&guard).map(|n| n.v).collect()
}

#[test]
fn heads_are_one_word() {
    assert_eq!(size_of::<HList<HAdapter>>(), size_of::<usize>());
    assert_eq!(size_of::<HListBl<HAdapter>>(), size_of::<usize>());
    // The on-a-chain flag lives in bit 0 of `next`.
    assert_eq!(size_of::<HLink>(), size_of::<usize>());
}

#[test]
fn a_node_taken_off_joins_another_chain_once() {
    let (a, b) = (HListBl::<HAdapter>::new(), HListBl::<HAdapter>::new());
    let nodes: Vec<_> = (0..3).map(node).collect();
    assert!(!nodes[1].h.is_linked());
    for n in nodes.iter().rev() {
        a.lock().push_front(n.clone()).unwrap();
    }
    assert!(nodes.iter().all(|n| n.h.is_linked()));
    let guard = epoch::pin();
    let mut reader = a.iter(&guard);
    assert_eq!(reader.next().map(|n| n.v), Some(0));
    drop(a.lock().remove(&nodes[1]).unwrap());
    assert!(!nodes[1].h.is_linked());
    // Claimed again: on `b` now, refused by `a` and `b` while there.
    b.lock().push_front(nodes[1].clone()).unwrap();
    assert!(nodes[1].h.is_linked());
    assert!(a.lock().push_front(nodes[1].clone()).is_err());
    assert!(b.lock().push_front(nodes[1].clone()).is_err());
    // The reader that stood before it goes on along `b` (the documented cost of a move).
    assert_eq!(reader.map(|n| n.v).collect::<Vec<_>>(), [1]);
    assert_eq!(values(&a), [0, 2]);
    assert_eq!(values(&b), [1]);
}

#[test]
fn writer_ops_and_lookup() {
    let chain = HListBl::<HAdapter>::new();
    let (n1, n2, n3) = (node(1), node(2), node(3));
    {
        let mut w = chain.lock();
        assert!(chain.is_locked());
        w.push_front(n2.clone()).unwrap();
        w.push_front(n1.clone()).unwrap();
        w.insert_after(&n2, n3.clone()).unwrap();
        w.insert_before(&n3, node(25)).unwrap();
        w.insert_before(&n1, node(0)).unwrap();
        let guard = epoch::pin();
        assert_eq!(w.front(&guard).map(|n| n.v), Some(0));
        // Readers ignore the lock bit.
        assert_eq!(chain.iter(&guard).count(), 5);
    }
    assert!(!chain.is_locked());
    assert_eq!(values(&chain), [0, 1, 2, 25, 3]);
    let guard = epoch::pin();
    assert_eq!(chain.find(&guard, |n| n.v == 25).map(|n| n.v), Some(25));
    let owned = chain.find_owned(&guard, |n| n.v == 3).unwrap();
    assert!(std::sync::Arc::ptr_eq(&owned, &n3));
    drop(owned);
    assert!(chain.find(&guard, |n| n.v == 9).is_none());
    drop(guard);
    let mut w = chain.lock();
    assert_eq!(w.remove(&n2).map(|n| n.v), Some(2));
    assert_eq!(w.replace(&n3, node(30)).map(|n| n.v).ok(), Some(3));
    assert_eq!(w.pop_front().map(|n| n.v), Some(0));
    drop(w);
    assert_eq!(values(&chain), [1, 25, 30]);
    assert!(wait_released(&n2) && wait_released(&n3));
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let chain = HListBl::<HAdapter>::new();
    let other = HListBl::<HAdapter>::new();
    let (n1, n2, stranger) = (node(1), node(2), node(9));
    chain.lock().push_front(n1.clone()).unwrap();
    other.lock().push_front(n2.clone()).unwrap();
    let mut w = chain.lock();
    assert!(w.push_front(n1.clone()).is_err());
    assert!(w.push_front(n2.clone()).is_err());
    assert!(w.insert_after(&stranger, node(3)).is_err());
    assert!(w.insert_before(&n2, node(3)).is_err());
    assert!(w.remove(&n2).is_none());
    assert!(w.replace(&stranger, node(3)).is_err());
    assert!(w.replace(&n1, n2.clone()).is_err());
    assert!(w.contains(&n1) && !w.contains(&stranger));
    drop(w);
    assert_eq!(values(&chain), [1]);
    assert_eq!(values(&other), [2]);
}

#[test]
fn removed_entry_keeps_its_forward_pointer() {
    let chain = HListBl::<HAdapter>::new();
    let nodes: Vec<_> = (0..3).map(node).collect();
    for n in nodes.iter().rev() {
        chain.lock().push_front(n.clone()).unwrap();
    }
    let guard = epoch::pin();
    let mut it = chain.iter(&guard);
    assert_eq!(it.next().map(|n| n.v), Some(0));
    chain.lock().remove(&nodes[1]).unwrap().retire(&guard);
    assert_eq!(it.map(|n| n.v).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn cursor_trims_a_chain() {
    let chain = HListBl::<HAdapter>::new();
    for v in (0..7).rev() {
        chain.lock().push_front(node(v)).unwrap();
    }
    {
        let guard = epoch::pin();
        let mut w = chain.lock();
        let mut c = w.cursor_mut(&guard);
        // Keep two, drop the third, as the negative-entry trimming does.
        let mut run = 0;
        while let Some(n) = c.get() {
            run += 1;
            if run % 3 == 0 {
                assert_eq!(c.remove_current().map(|x| x.v), Some(n.v));
            } else {
                c.move_next();
            }
        }
        c.insert_before(node(100)).unwrap();
        assert_eq!(c.get().map(|n| n.v), Some(100));
        c.move_next();
        c.move_next();
        assert!(c.get().is_none() && c.remove_current().is_none());
    }
    assert_eq!(values(&chain), [0, 1, 3, 4, 6, 100]);
}

#[test]
fn plain_hlist_and_a_second_list_on_the_same_node() {
    let mut chain = HList::<HAdapter>::new();
    let lru = List::<AAdapter>::new();
    let n = node(4);
    chain.get_mut().push_front(n.clone()).unwrap();
    lru.lock().push_back(n.clone()).unwrap();
    let guard = epoch::pin();
    assert!(chain.find(&guard, |x| x.v == 4).is_some());
    assert_eq!(lru.iter(&guard).count(), 1);
    drop(guard);
    assert!(chain.get_mut().remove(&n).is_some());
    assert!(chain.is_empty());
    drop(lru);
    assert!(wait_released(&n));
}

#[test]
fn dropping_a_chain_releases_its_references_later() {
    let n = node(1);
    let chain = HListBl::<HAdapter>::new();
    chain.lock().push_front(n.clone()).unwrap();
    drop(chain);
    assert!(!n.h.is_linked());
    assert!(wait_released(&n));
}

/// The summary bit of a test node: one of 16 by its value.
fn bit(v: u32) -> u16 {
    1 << (v % 16)
}

#[test]
fn summarised_finds_skip_chains_without_the_bit_and_survive_every_head_store() {
    let chain = HListBl::<HAdapter>::new();
    let guard = epoch::pin();
    let find = |v: u32| chain.find_tagged(&guard, bit(v), |n| n.v == v).map(|n| n.v);
    let (n1, n2, n17) = (node(1), node(2), node(17));
    {
        let mut w = chain.lock();
        assert_eq!(w.tags(), 0);
        for n in [&n1, &n2, &n17] {
            w.add_tags(bit(n.v));
            w.push_front(n.clone()).unwrap();
        }
        // Bits stay through pushes, the lock bit, and stores of the head by removals.
        assert_eq!((w.tags(), w.short_len()), (bit(1) | bit(2), Some(3)));
        drop(w.remove(&n2).unwrap());
        assert_eq!(w.short_len(), Some(2));
        // Only the low TAG_BITS are kept.
        w.add_tags(1 << 15);
        assert_eq!(w.tags(), bit(1) | bit(2));
    }
    assert!(!chain.is_locked());
    assert_eq!(chain.lock().tags(), bit(1) | bit(2), "a removal leaves the bits to the user");
    assert_eq!((find(1), find(17), find(2)), (Some(1), Some(17), None));
    // A plain find ignores the summary; a summarised one trusts it, even when it is wrong.
    chain.lock().set_tags(bit(2));
    assert_eq!(chain.find(&guard, |n| n.v == 1).map(|n| n.v), Some(1));
    assert_eq!(find(1), None);
    assert!(chain.find_owned_tagged(&guard, bit(1), |n| n.v == 1).is_none());
    chain.lock().set_tags(bit(1));
    assert_eq!(chain.find_owned_tagged(&guard, bit(17), |n| n.v == 17).map(|n| n.v), Some(17));
    // An emptied chain keeps whatever summary it was given; it reads as empty all the same.
    {
        let mut w = chain.lock();
        drop(w.remove(&n1).unwrap());
        drop(w.remove(&n17).unwrap());
        w.set_tags(0);
    }
    assert!(chain.is_empty() && values(&chain).is_empty());
}

#[test]
fn short_len_counts_members_until_the_chain_is_long() {
    let chain = HListBl::<HAdapter>::new();
    let nodes: Vec<_> = (0..20).map(node).collect();
    let mut w = chain.lock();
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(w.short_len(), (i < SHORT).then_some(i));
        w.push_front(n.clone()).unwrap();
    }
    // Removing from a long chain counts again: exact once it is short.
    for (i, n) in nodes.iter().enumerate() {
        drop(w.remove(n).unwrap());
        let left = nodes.len() - i - 1;
        assert_eq!(w.short_len(), (left < SHORT).then_some(left), "{left} left");
    }
    // Every writer operation keeps it: inserts beside a node, replace, cursor removal, pop.
    w.push_front(nodes[0].clone()).unwrap();
    w.insert_after(&nodes[0], nodes[1].clone()).unwrap();
    w.insert_before(&nodes[0], nodes[2].clone()).unwrap();
    drop(w.replace(&nodes[1], nodes[3].clone()).unwrap());
    assert_eq!(w.short_len(), Some(3));
    let guard = epoch::pin();
    drop(w.cursor_mut(&guard).remove_current().unwrap());
    drop(w.pop_front().unwrap());
    assert_eq!(w.short_len(), Some(1));
}

/// A filter bit above the summary's (which `add_tags` does not keep) cannot rule a chain
/// out: the summarised find used to answer `None` for a node on the chain.
#[test]
fn a_filter_bit_the_summary_does_not_keep_never_hides_a_node() {
    let chain = HListBl::<HAdapter>::new();
    let bit: u16 = 1 << TAG_BITS;
    {
        let mut w = chain.lock();
        w.add_tags(bit);
        w.push_front(node(13)).unwrap();
    }
    let guard = epoch::pin();
    assert!(chain.find_tagged(&guard, bit, |x| x.v == 13).is_some());
}
