//! Lists whose nodes are held through a pointer of the user's own, not an `Arc`: a counted box
//! (the node carries its count and is freed when it reaches zero), declared with the
//! `adapter!(..., pointer = ...)` form. Checks that the lists hand the same references in and
//! out, that `find_owned` and `to_ptr` count, and that a removed node is freed only after the
//! grace period of every guard pinned before the removal.

use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering, fence};

use udcache_rculist::{
    BareLink, BareList, HLink, HListBl, Link, List, NodePtr, Unlinked, adapter, epoch,
};

/// A node that can sit on a list, a hash chain and a bare list at once. `frees` is the test's
/// own counter (tests run in parallel, so no global one).
#[derive(Debug)]
struct Node {
    refs: AtomicUsize,
    frees: Arc<AtomicUsize>,
    v: u32,
    link: Link,
    hlink: HLink,
    bare: BareLink,
}

/// One counted reference to a boxed [`Node`].
struct NodeRef(NonNull<Node>);

// SAFETY: `Node` is `Send + Sync` and its count is atomic, so a reference may be moved to,
// shared with and dropped on any thread.
unsafe impl Send for NodeRef {}
// SAFETY: as above.
unsafe impl Sync for NodeRef {}

impl Node {
    /// How many references exist now.
    fn refs(&self) -> usize {
        self.refs.load(Ordering::SeqCst)
    }
}

impl NodeRef {
    fn new(v: u32, frees: &Arc<AtomicUsize>) -> Self {
        let node = Box::new(Node {
            refs: AtomicUsize::new(1),
            frees: frees.clone(),
            v,
            link: Link::new(),
            hlink: HLink::new(),
            bare: BareLink::new(),
        });
        NodeRef(NonNull::new(Box::into_raw(node)).expect("a box is not null"))
    }

    fn same(&self, other: &NodeRef) -> bool {
        self.0 == other.0
    }
}

impl Clone for NodeRef {
    fn clone(&self) -> Self {
        self.refs.fetch_add(1, Ordering::Relaxed);
        NodeRef(self.0)
    }
}

impl Deref for NodeRef {
    type Target = Node;

    fn deref(&self) -> &Node {
        // SAFETY: this reference keeps the box alive.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for NodeRef {
    fn drop(&mut self) {
        // Release/Acquire as `Arc` does: every use through another reference happens before the
        // free.
        if self.refs.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            self.frees.fetch_add(1, Ordering::SeqCst);
            // SAFETY: that was the last reference; the box came from `Box::into_raw`.
            drop(unsafe { Box::from_raw(self.0.as_ptr()) });
        }
    }
}

// SAFETY: `into_raw` forgets the value and returns the box's address, which `from_raw` wraps
// again: one reference passes through unchanged. The box does not move until the last
// reference frees it, `Deref` reads at that address, `clone_raw` adds to a count that another
// live reference keeps above zero, and the count is atomic.
unsafe impl NodePtr for NodeRef {
    fn into_raw(this: Self) -> *const Node {
        std::mem::ManuallyDrop::new(this).0.as_ptr()
    }

    unsafe fn from_raw(ptr: *const Node) -> Self {
        NodeRef(NonNull::new(ptr.cast_mut()).expect("from into_raw: not null"))
    }

    unsafe fn clone_raw(ptr: *const Node) -> Self {
        // SAFETY: the caller's reference keeps the node alive during the call.
        unsafe { &*ptr }.refs.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the count just added is the reference we wrap.
        unsafe { Self::from_raw(ptr) }
    }
}

adapter!(LA = Node { link: Link }, pointer = NodeRef);
adapter!(HA = Node { hlink: HLink }, pointer = NodeRef,);
adapter!(BA = Node { bare: BareLink }, pointer = NodeRef);

fn frees() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

/// Pins and flushes until `frees` reaches `n` (the deferred releases have run), or gives up
/// after many rounds.
fn wait_frees(frees: &AtomicUsize, n: usize) -> bool {
    for _ in 0..10_000 {
        if frees.load(Ordering::SeqCst) == n {
            return true;
        }
        epoch::pin().flush();
        std::thread::yield_now();
    }
    false
}

#[test]
fn the_adapters_name_the_pointer() {
    fn pointer_of<A: udcache_rculist::Adapter<Pointer = NodeRef>>() {}
    pointer_of::<LA>();
    pointer_of::<HA>();
    pointer_of::<BA>();
}

#[test]
fn list_push_find_remove() {
    let f = frees();
    let nodes: Vec<NodeRef> = (0..3).map(|v| NodeRef::new(v, &f)).collect();
    let list = List::<LA>::new();
    {
        let mut w = list.lock();
        for n in &nodes {
            w.push_back(n.clone()).unwrap();
        }
    }
    assert!(nodes.iter().all(|n| n.refs() == 2), "ours and the list's");
    {
        let guard = epoch::pin();
        assert_eq!(list.iter(&guard).map(|n| n.v).collect::<Vec<_>>(), [0, 1, 2]);
        // Walking counts nothing.
        assert!(nodes.iter().all(|n| n.refs() == 2));
    }
    let gone: Unlinked<NodeRef> = list.lock().remove(&nodes[1]).unwrap();
    assert_eq!(gone.v, 1);
    let kept = gone.to_ptr();
    assert!(kept.same(&nodes[1]));
    assert_eq!(nodes[1].refs(), 3, "ours, `kept`, and the list's, still held by `gone`");
    drop(kept);
    drop(gone);
    assert!(!nodes[1].link.is_linked());
    // A node taken off can go on again, even before its old reference is released.
    list.lock().push_front(nodes[1].clone()).unwrap();
    let guard = epoch::pin();
    assert_eq!(list.iter(&guard).map(|n| n.v).collect::<Vec<_>>(), [1, 0, 2]);
    drop(guard);
    drop(list);
    // Every list reference is released after the grace period; ours remain.
    for n in &nodes {
        assert!((0..10_000).any(|_| {
            epoch::pin().flush();
            n.refs() == 1
        }));
    }
    drop(nodes);
    assert_eq!(f.load(Ordering::SeqCst), 3, "each node freed once, by our last reference");
}

#[test]
fn hlist_find_owned_adds_a_count() {
    let f = frees();
    let n = NodeRef::new(7, &f);
    let bucket = HListBl::<HA>::new();
    {
        let mut w = bucket.lock();
        // The summary bit first, as summarised finds need.
        w.add_tags(1);
        w.push_front(n.clone()).unwrap();
        w.push_front(NodeRef::new(8, &f)).unwrap();
    }
    assert_eq!(n.refs(), 2);
    let guard = epoch::pin();
    assert_eq!(bucket.find(&guard, |x| x.v == 7).map(|x| x.v), Some(7));
    assert_eq!(n.refs(), 2, "a plain find counts nothing");
    let owned: NodeRef = bucket.find_owned(&guard, |x| x.v == 7).unwrap();
    assert!(owned.same(&n));
    assert_eq!(n.refs(), 3);
    let summarised = bucket.find_owned_tagged(&guard, 1, |x| x.v == 7);
    assert!(summarised.is_some_and(|s| s.same(&n)));
    assert_eq!(n.refs(), 3, "the summarised reference was dropped");
    assert!(bucket.find_owned(&guard, |x| x.v == 9).is_none());
    drop(guard);
    // The owned reference outlives the guard and the chain's own reference.
    bucket.lock().remove(&n).unwrap();
    drop(n);
    assert!((0..10_000).any(|_| {
        epoch::pin().flush();
        owned.refs() == 1
    }));
    assert_eq!((owned.v, f.load(Ordering::SeqCst)), (7, 0));
    drop(owned);
    assert_eq!(f.load(Ordering::SeqCst), 1);
    drop(bucket);
    assert!(wait_frees(&f, 2), "the chain's last node freed after the grace period");
}

#[test]
fn a_removed_node_is_freed_only_after_the_guards_pinned_before_the_removal() {
    let f = frees();
    let bucket = HListBl::<HA>::new();
    let list = List::<LA>::new();
    // The lists hold the only references.
    bucket.lock().push_front(NodeRef::new(1, &f)).unwrap();
    list.lock().push_back(NodeRef::new(2, &f)).unwrap();

    let guard = epoch::pin();
    let in_bucket = bucket.find(&guard, |x| x.v == 1).unwrap();
    let in_list = list.iter(&guard).next().unwrap();
    // Dropping the `Unlinked` and retiring it both defer the release.
    drop(bucket.lock().remove(in_bucket).unwrap());
    list.lock().remove(in_list).unwrap().retire(&guard);
    assert!(bucket.is_empty() && list.is_empty());
    for _ in 0..100 {
        guard.flush();
        epoch::pin().flush();
    }
    // Our guard was pinned before the removals: nothing may be freed while it lives.
    assert_eq!(f.load(Ordering::SeqCst), 0);
    assert_eq!((in_bucket.v, in_list.v), (1, 2));
    assert_eq!((in_bucket.refs(), in_list.refs()), (1, 1), "the lists' references, deferred");
    drop(guard);
    assert!(wait_frees(&f, 2), "the deferred releases never ran");
}

#[test]
fn dropping_a_list_frees_its_nodes_after_a_grace_period() {
    let f = frees();
    let list = List::<LA>::new();
    let bucket = HListBl::<HA>::new();
    let bare = BareList::<BA>::new();
    list.lock().push_back(NodeRef::new(1, &f)).unwrap();
    bucket.lock().push_front(NodeRef::new(2, &f)).unwrap();
    bare.lock().push_back(NodeRef::new(3, &f)).unwrap();
    let guard = epoch::pin();
    let seen: *const Node = list.iter(&guard).next().unwrap();
    drop(list);
    drop(bucket);
    // A bare list has no lockless readers: its references go at once.
    drop(bare);
    assert_eq!(f.load(Ordering::SeqCst), 1);
    guard.flush();
    // SAFETY: `seen` was reached under `guard`, which is still pinned: the list's reference is
    // released after it, so the node is still allocated.
    assert_eq!(unsafe { &*seen }.v, 1);
    drop(guard);
    assert!(wait_frees(&f, 3));
}

#[test]
fn refused_hands_the_same_pointer_back() {
    let f = frees();
    let n = NodeRef::new(5, &f);
    let stranger = NodeRef::new(6, &f);
    let (list, bucket, bare) = (List::<LA>::new(), HListBl::<HA>::new(), BareList::<BA>::new());
    list.lock().push_back(n.clone()).unwrap();
    bucket.lock().push_front(n.clone()).unwrap();
    bare.lock().push_back(n.clone()).unwrap();
    assert_eq!(n.refs(), 4);

    let refused = list.lock().push_front(n.clone()).unwrap_err();
    assert!(refused.0.same(&n));
    let back = refused.into_inner();
    assert!(back.same(&n));
    assert_eq!(n.refs(), 5, "the refused reference is the one passed in, not dropped");
    drop(back);
    let refused = list.lock().insert_after(&stranger, stranger.clone()).unwrap_err();
    assert!(refused.0.same(&stranger), "an anchor not on the list");
    drop(refused);
    let refused = bucket.lock().push_front(n.clone()).unwrap_err();
    assert!(refused.into_inner().same(&n));
    let refused = bucket.lock().replace(&stranger, n.clone()).unwrap_err();
    assert!(refused.into_inner().same(&n));
    let refused = bare.lock().push_back(n.clone()).unwrap_err();
    assert!(refused.into_inner().same(&n));
    // Nothing was changed, and every refused reference went back to its owner.
    assert_eq!((n.refs(), stranger.refs()), (4, 1));
    assert_eq!(f.load(Ordering::SeqCst), 0);
}

#[test]
fn bare_list_hands_references_back_at_once() {
    let f = frees();
    let nodes: Vec<NodeRef> = (0..3).map(|v| NodeRef::new(v, &f)).collect();
    let bare = BareList::<BA>::new();
    let mut w = bare.lock();
    for n in &nodes {
        w.push_back(n.clone()).unwrap();
    }
    assert!(nodes.iter().all(|n| n.refs() == 2));
    // SAFETY: every node is on this list or on none.
    let middle: NodeRef = unsafe { w.remove(&nodes[1]) }.unwrap();
    assert!(middle.same(&nodes[1]));
    drop(middle);
    assert_eq!(nodes[1].refs(), 1, "no grace period on a bare list");
    let first = w.pop_front().unwrap();
    assert!(first.same(&nodes[0]));
    let last = w.pop_front().unwrap();
    assert!(last.same(&nodes[2]));
    assert!(w.pop_front().is_none());
    drop((first, last, w));
    drop(nodes);
    assert_eq!(f.load(Ordering::SeqCst), 3);
}

#[test]
fn one_node_on_three_lists_is_freed_once() {
    let f = frees();
    let n = NodeRef::new(9, &f);
    let (list, bucket, bare) = (List::<LA>::new(), HListBl::<HA>::new(), BareList::<BA>::new());
    list.lock().push_back(n.clone()).unwrap();
    bucket.lock().push_front(n.clone()).unwrap();
    bare.lock().push_back(n.clone()).unwrap();
    let guard = epoch::pin();
    let found = bucket.find(&guard, |x| x.v == 9).unwrap();
    drop(n);
    // Off every list; the last references are the two deferred ones.
    // SAFETY: the node is on `bare` only, through its bare link.
    drop(unsafe { bare.lock().remove(found) }.unwrap());
    list.lock().remove(found).unwrap().retire(&guard);
    bucket.lock().remove(found).unwrap().retire(&guard);
    guard.flush();
    assert_eq!((found.v, found.refs(), f.load(Ordering::SeqCst)), (9, 2, 0));
    drop(guard);
    assert!(wait_frees(&f, 1));
}
