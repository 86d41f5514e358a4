//! [`BareList`]: a doubly linked list that only its writers touch, for lists no reader walks
//! without the lock (an LRU), with a link of two words.
//!
//! # Rules
//!
//! - **Lock.** Every access to the list and to its members' links holds the list's spin lock,
//!   proven by a [`BareWriter`]. No reader walks it without that lock, so no store needs to
//!   publish anything and a removed node's reference (the adapter's
//!   [`Pointer`](crate::Adapter::Pointer)) is handed back at once, with no grace period: nobody
//!   can be standing on it through this list. (The node may still be reachable through *other*
//!   lists; those release their own references as their rules say. Dropping the handed-back
//!   reference at once is sound only because of them: if it is the last one, no lockless
//!   reader can reach the node any more.)
//! - **Shape.** Head/tail, null-terminated, like [`List`](crate::List).
//! - **Membership.** A [`BareLink`] has no owner word (that is [`Link`](crate::Link)'s third
//!   word): bit 0 of its `prev` word says "on a list", and the predecessor pointer sits above it
//!   (the first member's `prev` is the bit alone). An insert claims the link by a
//!   compare-exchange of `prev` from null, so a node goes on at most one list through one link even
//!   when writers of two lists race for it; a claimed node is refused. But a link does not say
//!   *which* list it is on, so [`BareWriter::remove`] is `unsafe`: its caller vouches that a
//!   linked node is on this list (say, by recording its list in the node's own state).
//! - **Orderings.** The claim is Acquire and the release of a link (`prev` back to null) is
//!   Release: a writer of another list that claims the node next sees this list's last stores
//!   to the link. Everything else is Relaxed, ordered by the list's lock.

use std::fmt;
use std::marker::PhantomData;
use std::ptr;

use crate::lock::{Held, SpinLock};
use crate::retire::Refused;
use crate::sync::{AtomicPtr, Ordering};
use crate::{Adapter, NodePtr};

/// `prev`'s bit 0: the link is on a list.
const LINKED: usize = 1;

/// A node's link on a [`BareList`]: two words.
pub struct BareLink {
    /// The following member; null for the last. Under the list's lock.
    next: AtomicPtr<BareLink>,
    /// The preceding member with [`LINKED`] in its address, [`LINKED`] alone for the first
    /// member, null when on no list.
    prev: AtomicPtr<BareLink>,
}

impl BareLink {
    /// A link on no list.
    pub fn new() -> Self {
        BareLink { next: AtomicPtr::new(ptr::null_mut()), prev: AtomicPtr::new(ptr::null_mut()) }
    }

    /// Whether the link is on a list (a racy snapshot unless the caller holds that list's lock).
    pub fn is_linked(&self) -> bool {
        // Relaxed: a snapshot; writers decide under their lock (and claim by compare-exchange).
        self.prev.load(Ordering::Relaxed).addr() & LINKED != 0
    }

    /// The predecessor (null for the first member).
    fn prev(&self) -> *mut BareLink {
        // Relaxed: under the list's lock.
        self.prev.load(Ordering::Relaxed).map_addr(|a| a & !LINKED)
    }

    fn set_prev(&self, prev: *mut BareLink) {
        // Relaxed: under the list's lock, on a link this list has claimed.
        self.prev.store(prev.map_addr(|a| a | LINKED), Ordering::Relaxed);
    }
}

impl Default for BareLink {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for BareLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BareLink").field("linked", &self.is_linked()).finish_non_exhaustive()
    }
}

/// A doubly linked list that only its lock holders touch, owning one reference of the
/// adapter's [`Pointer`](Adapter::Pointer) type (an `Arc` by default) to each node.
///
/// See [the module docs](self) for the rules.
///
/// ```
/// use std::sync::Arc;
/// use udcache_rculist::{BareLink, BareList, adapter};
///
/// struct Item { v: u32, lru: BareLink }
/// adapter!(LruAdapter = Item { lru: BareLink });
///
/// let lru = BareList::<LruAdapter>::new();
/// let items: Vec<_> = (0..3).map(|v| Arc::new(Item { v, lru: BareLink::new() })).collect();
/// let mut w = lru.lock();
/// for i in &items {
///     w.push_back(i.clone()).unwrap();
/// }
/// assert!(w.push_back(items[0].clone()).is_err(), "already on a list");
/// // SAFETY: `items[1]` is on no list but this one.
/// let middle = unsafe { w.remove(&items[1]) }.unwrap();
/// assert_eq!(middle.v, 1);
/// assert_eq!(w.pop_front().map(|i| i.v), Some(0));
/// assert_eq!(w.pop_front().map(|i| i.v), Some(2));
/// assert!(w.pop_front().is_none());
/// ```
pub struct BareList<A: Adapter<Link = BareLink>> {
    head: AtomicPtr<BareLink>,
    tail: AtomicPtr<BareLink>,
    lock: SpinLock,
    /// The list owns its members' references; like a `Mutex<Vec<A::Pointer>>` it is `Send` and
    /// `Sync` because they are `Send` (a `NodePtr` bound).
    _nodes: PhantomData<fn() -> A::Pointer>,
}

impl<A: Adapter<Link = BareLink>> BareList<A> {
    /// An empty list.
    pub fn new() -> Self {
        BareList {
            head: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicPtr::new(ptr::null_mut()),
            lock: SpinLock::new(),
            _nodes: PhantomData,
        }
    }

    /// Takes the list's lock.
    pub fn lock(&self) -> BareWriter<'_, A> {
        BareWriter { list: self, _held: self.lock.hold() }
    }
}

impl<A: Adapter<Link = BareLink>> Default for BareList<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Adapter<Link = BareLink>> fmt::Debug for BareList<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BareList").finish_non_exhaustive()
    }
}

impl<A: Adapter<Link = BareLink>> Drop for BareList<A> {
    fn drop(&mut self) {
        let mut w = BareWriter { list: &*self, _held: Held::external() };
        while w.pop_front().is_some() {}
    }
}

/// Proof that the holder has the list's lock; every operation lives here.
pub struct BareWriter<'l, A: Adapter<Link = BareLink>> {
    list: &'l BareList<A>,
    _held: Held<'l>,
}

impl<A: Adapter<Link = BareLink>> BareWriter<'_, A> {
    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        // Relaxed: under the lock.
        self.list.head.load(Ordering::Relaxed).is_null()
    }

    /// Inserts `node` last. `Err(Refused)` if it is on a list already.
    pub fn push_back(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        let value = NodePtr::into_raw(node);
        // SAFETY: `value` points to a live node (we own a reference to it, and the `NodePtr`
        // contract makes the `into_raw` pointer valid for reads while it lives).
        let link = unsafe { A::link_ptr(value) }.cast_mut();
        // SAFETY: the link lives inside the live node.
        let l = unsafe { &*link };
        // Relaxed: under the lock.
        let tail = self.list.tail.load(Ordering::Relaxed);
        // Acquire pairs with the Release in `take` of the list the node was last on: that
        // list's last stores to the link happen before ours.
        let claimed = tail.map_addr(|a| a | LINKED);
        let unlinked = ptr::null_mut();
        if l.prev.compare_exchange(unlinked, claimed, Ordering::Acquire, Ordering::Relaxed).is_err()
        {
            // SAFETY: `value` came from `NodePtr::into_raw` above and we still own the reference
            // it stands for: the round trip of the `NodePtr` contract.
            return Err(Refused(unsafe { A::Pointer::from_raw(value) }));
        }
        l.next.store(ptr::null_mut(), Ordering::Relaxed);
        match tail.is_null() {
            true => self.list.head.store(link, Ordering::Relaxed),
            // SAFETY: `tail` is a member: alive while the list holds it.
            false => unsafe { &*tail }.next.store(link, Ordering::Relaxed),
        }
        self.list.tail.store(link, Ordering::Relaxed);
        Ok(())
    }

    /// Takes the first node off the list, with the list's reference.
    pub fn pop_front(&mut self) -> Option<A::Pointer> {
        // Relaxed: under the lock.
        let first = self.list.head.load(Ordering::Relaxed);
        // SAFETY: the lock is held and `first` is a member.
        (!first.is_null()).then(|| unsafe { self.take(first) })
    }

    /// Takes `node` off the list, with the list's reference; `None` if it is on no list.
    ///
    /// # Safety
    ///
    /// If `node` is on a list, that list is this one, and no writer of another list links it
    /// during the call (see the module rules: a link does not record which list it is on).
    pub unsafe fn remove(&mut self, node: &A::Value) -> Option<A::Pointer> {
        // SAFETY: `node` is a live reference.
        let link = unsafe { A::link_ptr(node) }.cast_mut();
        // SAFETY: the link lives inside the live node.
        let linked = unsafe { &*link }.is_linked();
        // SAFETY: the lock is held; a linked `node` is a member of this list (the caller).
        linked.then(|| unsafe { self.take(link) })
    }

    /// Unlinks member `link` and hands back the list's reference.
    ///
    /// # Safety
    ///
    /// The lock is held and `link` is a member of this list.
    unsafe fn take(&mut self, link: *mut BareLink) -> A::Pointer {
        // SAFETY: members are alive while the list holds them.
        let l = unsafe { &*link };
        let (prev, next) = (l.prev(), l.next.load(Ordering::Relaxed));
        // The word that points at `link`: the head or the predecessor's `next`. What it holds is
        // the pointer `push_back` stored, with the provenance of `NodePtr::into_raw`.
        let slot = match prev.is_null() {
            true => &self.list.head,
            // SAFETY: `prev` is a member.
            false => unsafe { &(*prev).next },
        };
        let stored = slot.load(Ordering::Relaxed);
        debug_assert_eq!(stored, link, "bare list corrupt: the predecessor does not point here");
        slot.store(next, Ordering::Relaxed);
        match next.is_null() {
            true => self.list.tail.store(prev, Ordering::Relaxed),
            // SAFETY: `next` is a member.
            false => unsafe { &*next }.set_prev(prev),
        }
        l.next.store(ptr::null_mut(), Ordering::Relaxed);
        // Release: pairs with the Acquire claim of the next list the node goes on.
        l.prev.store(ptr::null_mut(), Ordering::Release);
        // SAFETY: `stored` is what `push_back` derived from the `NodePtr::into_raw` pointer of
        // the reference the list owned, so `value_ptr` gives that pointer back; the reference is
        // taken back once, here (the round trip of the `NodePtr` contract).
        unsafe { A::Pointer::from_raw(A::value_ptr(stored)) }
    }
}
