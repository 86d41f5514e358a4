//! [`List`]: a doubly linked, null-terminated list that readers walk without locks.
//!
//! # Rules
//!
//! - **Shape.** Head/tail, not circular: the head word points at the first link, each link's
//!   `next` at the following one, the last `next` is null; `prev` pointers and the `tail` word
//!   serve writers only. A circular list ends where the walk meets the head again; a reader that
//!   a move carries onto another list would never meet its own head and could walk forever. A
//!   null end bounds every walk whatever the writers do, and the head can move in memory (no
//!   node points back at it).
//! - **Lock.** One writer at a time, proven by holding a [`ListWriter`]: from [`List::lock`] (the
//!   list's own spin lock), [`List::get_mut`] (exclusive access), or the unsafe
//!   [`List::writer_unchecked`] for a caller that serialises writers with its own lock. The
//!   writer lock protects `head`, `tail`, every member's `prev`/`next`, and the `owner` word of
//!   every member link. Readers take no lock and store nothing.
//! - **Ownership.** A member link's `owner` word holds its list's id (0 when on no list); a
//!   writer claims a node with a compare-exchange on it, so a node cannot be put on two lists
//!   through the same link even by writers holding different locks, and an operation naming a
//!   node that is not on this list is refused with no change.
//! - **Publish.** Every store of a `next` or `head` pointer is Release and every reader load is
//!   Acquire: a reader that reaches a node sees it fully initialised. A new node's `next` is set
//!   before the node is published.
//! - **Retire.** A removal unlinks the node from its neighbours but leaves its own `next` as it
//!   was, so a reader standing on it walks on into the list. The list's reference to the node is
//!   released only after a grace period ([`Unlinked`]).
//! - **Moves.** `move_to_front`, `move_to_back`, `move_to` and `splice_back` run inside a write
//!   section of the move sequence count of every list they touch; [`Iter::valid`] tells a
//!   reader whether a move overlapped its walk.
//!
//! # What a concurrent reader observes
//!
//! For one [`Iter`] walk overlapping writer operations:
//!
//! | writer operation | the node it names | every other node |
//! |---|---|---|
//! | `push_front`, `push_back`, `insert_after`, `insert_before` | seen at most once | unaffected |
//! | `remove`, `pop_*`, cursor `remove_current` | seen at most once; never freed under the reader | unaffected |
//! | `replace(old, new)` | exactly one of `old`, `new` (one pointer store swaps them) | unaffected |
//! | `move_to_front(x)` | 0 or 1 times (missed if the reader had not reached it) | 1 or 2 times: a reader standing on `x` walks on from the old front |
//! | `move_to_back(x)` | 0, 1 or 2 times (twice if the reader had passed it; never if it passed `x`'s old place between the unlink and the relink and reached the end first) | 0 or 1 times: a reader standing on `x` skips to the end |
//! | `move_to(x, other)` | 0 or 1 times | 0 or 1 times: a reader standing on `x` continues into `other` (and may see its nodes) |
//! | `splice_back(other)`, for readers of this list | the appended nodes: each at most once | unaffected |
//! | `splice_back(other)`, for readers of `other` | — | `other`'s nodes at most once; a reader inside them is carried onto this list (and may see what is appended to it later) |
//!
//! "Unaffected" means: a node on the list for the whole walk is seen exactly once, and nodes
//! are seen in list order. Every node a reader is handed stays allocated until its guard is
//! dropped. If [`Iter::valid`] returns true after the walk, no move overlapped it and the
//! first row of guarantees holds for every node. A caller that removes a node and inserts it
//! elsewhere itself (instead of `move_to`) makes a move the sequence count does not see; wait for
//! a grace period between the two, or validate with a sequence count of its own.

use std::fmt;
use std::marker::PhantomData;
use std::ptr;

use crate::epoch::Guard;
use crate::lock::{Held, SpinLock};
use crate::retire::{Refused, Unlinked, check_guard, release_raw};
use crate::seq::MoveSeq;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::walk::step;
use crate::{Adapter, NodePtr, next_list_id};

/// The link a node embeds once per [`List`] it can sit on (three words).
pub struct Link {
    /// The following link; Release-stored by writers, Acquire-loaded by readers.
    pub(crate) next: AtomicPtr<Link>,
    /// The preceding link (null for the first); writers only.
    prev: AtomicPtr<Link>,
    /// The id of the list this link is on, 0 when on none.
    owner: AtomicUsize,
}

impl Link {
    /// A link on no list.
    pub fn new() -> Self {
        Self {
            next: AtomicPtr::new(ptr::null_mut()),
            prev: AtomicPtr::new(ptr::null_mut()),
            owner: AtomicUsize::new(0),
        }
    }

    /// Whether the link is on a list now (a racy snapshot unless the caller holds that list's
    /// writer lock).
    pub fn is_linked(&self) -> bool {
        self.owner.load(Ordering::Relaxed) != 0
    }
}

impl Default for Link {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link").field("linked", &self.is_linked()).finish()
    }
}

/// Where [`ListWriter::move_to`] puts a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Before the first node.
    Front,
    /// After the last node.
    Back,
}

/// The list proper, without a lock: shared by [`List`] and [`SplitList`](crate::SplitList).
pub(crate) struct RawList<A: Adapter<Link = Link>> {
    head: AtomicPtr<Link>,
    tail: AtomicPtr<Link>,
    seq: MoveSeq,
    id: usize,
    _adapter: PhantomData<fn() -> A>,
}

impl<A: Adapter<Link = Link>> RawList<A> {
    pub(crate) fn new() -> Self {
        Self {
            head: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicPtr::new(ptr::null_mut()),
            seq: MoveSeq::new(),
            id: next_list_id(),
            _adapter: PhantomData,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }

    pub(crate) fn iter<'g>(&'g self, guard: &'g Guard) -> Iter<'g, A> {
        check_guard(guard);
        let seq = self.seq.read_begin();
        Iter::starting_at(self, seq)
    }

    pub(crate) fn move_seq_begin(&self) -> usize {
        self.seq.read_begin()
    }

    pub(crate) fn seq_valid(&self, start: usize) -> bool {
        self.seq.read_valid(start)
    }

    /// The link of `node`, if `node` is on this list.
    ///
    /// The caller holds the writer lock, so an `owner` equal to our id was stored under it and
    /// cannot change under us; any other value means "not ours" and is refused.
    ///
    /// The pointer returned is the one the list stored (in the head word or the predecessor's
    /// `next`), not one derived from `node`: callers store it in other links and hand it to
    /// `take`, which turns it back into the list's reference, so it must keep the provenance of
    /// `NodePtr::into_raw`. A pointer made from the shared reference `node` only allows reads of
    /// the node (outside its atomics), and dropping the last reference made from it would free
    /// the node through it (undefined behaviour under Stacked and Tree Borrows).
    fn member(&self, node: &A::Value) -> Option<*const Link> {
        // SAFETY: `node` is a live reference.
        let link = unsafe { A::link_ptr(node) };
        // SAFETY: the link lives inside the live node.
        let l = unsafe { &*link };
        if l.owner.load(Ordering::Relaxed) != self.id {
            return None;
        }
        // Relaxed (both loads): only writers store `prev` and `next`, and the writer lock
        // orders this after the last of them.
        // SAFETY: writer lock held and `link` is a member, so its `prev` is its predecessor on
        // this list (or null for the first).
        let slot = unsafe { self.slot(l.prev.load(Ordering::Relaxed)) };
        let stored = slot.load(Ordering::Relaxed);
        debug_assert_eq!(
            stored.cast_const(),
            link,
            "list corrupt: predecessor does not point here"
        );
        Some(stored)
    }

    /// Takes over the reference `node` for this list: claims its link (owner 0 -> our id).
    /// Gives `node` back if the link is on a list already.
    fn claim(&self, node: A::Pointer) -> Result<*const Link, Refused<A::Pointer>> {
        let value = NodePtr::into_raw(node);
        // SAFETY: `value` points to a live node (we own a reference to it, and the `NodePtr`
        // contract makes the `into_raw` pointer valid for reads while it lives).
        let link = unsafe { A::link_ptr(value) };
        // SAFETY: the link lives inside the live node.
        let owner = &unsafe { &*link }.owner;
        // Acquire pairs with the Release clear in `disown` (which `take`, `replace` and `Drop`
        // of the node's previous list call): that list's last stores to this link happen
        // before ours.
        match owner.compare_exchange(0, self.id, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Ok(link),
            // SAFETY: `value` came from `NodePtr::into_raw` above and we still own the reference
            // it stands for: the round trip of the `NodePtr` contract.
            Err(_) => Err(Refused(unsafe { A::Pointer::from_raw(value) })),
        }
    }

    /// The slot that points at `link`: the head word or the `next` of its predecessor.
    ///
    /// # Safety
    ///
    /// Writer lock held; `prev` is `link`'s predecessor on this list (or null).
    unsafe fn slot(&self, prev: *const Link) -> &AtomicPtr<Link> {
        if prev.is_null() {
            &self.head
        } else {
            // SAFETY: `prev` is a member, alive while the list holds it.
            unsafe { &(*prev).next }
        }
    }

    /// Links the claimed, not yet reachable `link` between `prev` and `next` (adjacent members,
    /// either null at an end) and publishes it.
    ///
    /// # Safety
    ///
    /// Writer lock held; `link` is claimed by this list and on no list's chain; `prev`/`next`
    /// are adjacent on this list.
    unsafe fn link_between(&self, link: *const Link, prev: *const Link, next: *const Link) {
        // SAFETY: `link` is alive (the list owns a reference to its node).
        let l = unsafe { &*link };
        debug_assert_eq!(l.owner.load(Ordering::Relaxed), self.id, "linking an unclaimed link");
        l.prev.store(prev.cast_mut(), Ordering::Relaxed);
        // Release: a reader still standing on this node from an earlier life (see the move rows
        // of the module table) that loads `next` sees `next`'s node initialised.
        l.next.store(next.cast_mut(), Ordering::Release);
        // SAFETY: `prev` is a member or null.
        let slot = unsafe { self.slot(prev) };
        // Release publishes the node: pairs with the Acquire loads of readers (`Iter`).
        slot.store(link.cast_mut(), Ordering::Release);
        if next.is_null() {
            self.tail.store(link.cast_mut(), Ordering::Relaxed);
        } else {
            // SAFETY: `next` is a member.
            unsafe { &*next }.prev.store(link.cast_mut(), Ordering::Relaxed);
        }
    }

    /// Unlinks member `link` from its neighbours, leaving its `next` for readers standing on
    /// it. Returns the pointer to it that the list stored (provenance of `NodePtr::into_raw`).
    ///
    /// # Safety
    ///
    /// Writer lock held; `link` is a member.
    unsafe fn unlink(&self, link: *const Link) -> *const Link {
        // SAFETY: members are alive.
        let l = unsafe { &*link };
        debug_assert_eq!(l.owner.load(Ordering::Relaxed), self.id, "unlinking a non-member");
        let prev = l.prev.load(Ordering::Relaxed);
        let next = l.next.load(Ordering::Relaxed);
        // SAFETY: `prev` is `link`'s predecessor.
        let slot = unsafe { self.slot(prev) };
        let stored = slot.load(Ordering::Relaxed);
        debug_assert_eq!(
            stored.cast_const(),
            link,
            "list corrupt: predecessor does not point here"
        );
        // Release: a reader loading this slot reaches `next` and must see it initialised (it
        // may not have read the store that published `next`).
        slot.store(next, Ordering::Release);
        if next.is_null() {
            self.tail.store(prev, Ordering::Relaxed);
        } else {
            // SAFETY: `next` is a member.
            unsafe { &*next }.prev.store(prev, Ordering::Relaxed);
        }
        l.prev.store(ptr::null_mut(), Ordering::Relaxed);
        stored
    }

    /// Gives up ownership of an unlinked link: owner back to 0.
    fn disown(link: *const Link) {
        // SAFETY: the caller still holds a reference to the node.
        let owner = &unsafe { &*link }.owner;
        debug_assert_ne!(owner.load(Ordering::Relaxed), 0, "disown of an unowned link");
        // Release pairs with the Acquire in the next list's `claim`.
        owner.store(0, Ordering::Release);
    }

    /// Unlinks and disowns member `link`, handing back the list's reference.
    ///
    /// # Safety
    ///
    /// Writer lock held; `link` is a member.
    unsafe fn take(&self, link: *const Link) -> Unlinked<A::Pointer> {
        // SAFETY: forwarded.
        let stored = unsafe { self.unlink(link) };
        Self::disown(stored);
        // SAFETY: `stored` was derived by `link_ptr` from the `NodePtr::into_raw` pointer of the
        // reference the list owns, so `value_ptr` gives that pointer back; the reference passes
        // to the `Unlinked`.
        unsafe { Unlinked::from_raw(A::value_ptr(stored)) }
    }

    fn first(&self) -> *const Link {
        self.head.load(Ordering::Relaxed)
    }

    fn last(&self) -> *const Link {
        self.tail.load(Ordering::Relaxed)
    }

    /// # Safety
    ///
    /// Writer lock held; `link` is a member.
    unsafe fn neighbours(link: *const Link) -> (*const Link, *const Link) {
        // SAFETY: members are alive.
        let l = unsafe { &*link };
        (l.prev.load(Ordering::Relaxed), l.next.load(Ordering::Relaxed))
    }
}

impl<A: Adapter<Link = Link>> Drop for RawList<A> {
    fn drop(&mut self) {
        let mut cur = self.first();
        while !cur.is_null() {
            // SAFETY: `&mut self`: no writer or reader of this list remains; `cur` is a member.
            let next = unsafe { &*cur }.next.load(Ordering::Relaxed);
            // Leave `next` alone: a reader carried here by a move may still stand on `cur`.
            Self::disown(cur);
            // SAFETY: `value_ptr(cur)` is the `NodePtr::into_raw` pointer of the reference this
            // list owned, given up here once; the release is deferred past every reader pinned now.
            unsafe { release_raw::<A::Pointer>(A::value_ptr(cur)) };
            cur = next;
        }
    }
}

/// A doubly linked list that readers walk without locks.
///
/// The list owns one reference of the adapter's [`Pointer`](Adapter::Pointer) type (an `Arc`
/// by default) to each of its nodes. See [the module docs](self) for the rules and what readers
/// observe.
///
/// ```
/// use std::sync::Arc;
/// use udcache_rculist::{Link, List, adapter, epoch};
///
/// struct Item { v: u32, link: Link }
/// adapter!(ItemAdapter = Item { link: Link });
///
/// let list = List::<ItemAdapter>::new();
/// {
///     let mut w = list.lock();
///     for v in 0..3 {
///         w.push_back(Arc::new(Item { v, link: Link::new() })).unwrap();
///     }
/// }
/// let guard = epoch::pin();
/// let seen: Vec<u32> = list.iter(&guard).map(|i| i.v).collect();
/// assert_eq!(seen, [0, 1, 2]);
/// ```
pub struct List<A: Adapter<Link = Link>> {
    raw: RawList<A>,
    lock: SpinLock,
}

impl<A: Adapter<Link = Link>> List<A> {
    /// An empty list.
    pub fn new() -> Self {
        Self { raw: RawList::new(), lock: SpinLock::new() }
    }

    /// Whether the list is empty (a racy snapshot for readers).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Walks the list under `guard`, without locks.
    ///
    /// # Panics
    ///
    /// If `guard` does not pin crossbeam-epoch's default collector.
    pub fn iter<'g>(&'g self, guard: &'g Guard) -> Iter<'g, A> {
        self.raw.iter(guard)
    }

    /// Takes the list's writer lock.
    pub fn lock(&self) -> ListWriter<'_, A> {
        ListWriter { raw: &self.raw, _held: self.lock.hold() }
    }

    /// Writer access through exclusive access: no lock needed.
    pub fn get_mut(&mut self) -> ListWriter<'_, A> {
        ListWriter { raw: &self.raw, _held: Held::external() }
    }

    /// Writer access for a caller that serialises this list's writers with its own lock.
    ///
    /// # Safety
    ///
    /// While the returned writer lives, no other [`ListWriter`] of this list exists (the
    /// caller's lock excludes every other holder, and none is taken through [`List::lock`]).
    pub unsafe fn writer_unchecked(&self) -> ListWriter<'_, A> {
        ListWriter { raw: &self.raw, _held: Held::external() }
    }
}

impl<A: Adapter<Link = Link>> Default for List<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for List<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List").field("id", &self.raw.id).finish_non_exhaustive()
    }
}

/// Proof that the holder is the list's only writer; all writer operations live here.
///
/// Operations naming a node that is not on this list, or inserting one that is already on a
/// list, change nothing and say so (`false`, `None` or `Err(Refused)`).
pub struct ListWriter<'l, A: Adapter<Link = Link>> {
    raw: &'l RawList<A>,
    _held: Held<'l>,
}

impl<'l, A: Adapter<Link = Link>> ListWriter<'l, A> {
    /// A writer over a lock the caller holds (used by [`SplitList`](crate::SplitList)).
    pub(crate) fn over(raw: &'l RawList<A>) -> Self {
        Self { raw, _held: Held::external() }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Whether `node` is on this list.
    pub fn contains(&self, node: &A::Value) -> bool {
        self.raw.member(node).is_some()
    }

    /// The first node.
    pub fn front<'g>(&self, guard: &'g Guard) -> Option<&'g A::Value> {
        check_guard(guard);
        // SAFETY: a member; alive until `guard` unpins (any release is deferred past it).
        nonnull_value::<A>(self.raw.first()).map(|v| unsafe { &*v })
    }

    /// The last node.
    pub fn back<'g>(&self, guard: &'g Guard) -> Option<&'g A::Value> {
        check_guard(guard);
        // SAFETY: as in `front`.
        nonnull_value::<A>(self.raw.last()).map(|v| unsafe { &*v })
    }

    /// Inserts `node` first. `Err(Refused)` if it is on a list already.
    pub fn push_front(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        self.push(node, End::Front)
    }

    /// Inserts `node` last. `Err(Refused)` if it is on a list already.
    pub fn push_back(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        self.push(node, End::Back)
    }

    fn push(&mut self, node: A::Pointer, at: End) -> Result<(), Refused<A::Pointer>> {
        let link = self.raw.claim(node)?;
        // SAFETY: we are the writer; `link` is claimed and on no chain.
        unsafe { self.raw.relink(link, at) };
        Ok(())
    }

    insert_beside_api!("list");

    fn insert_beside(
        &mut self,
        anchor: &A::Value,
        node: A::Pointer,
        after: bool,
    ) -> Result<(), Refused<A::Pointer>> {
        let Some(at) = self.raw.member(anchor) else { return Err(Refused(node)) };
        let link = self.raw.claim(node)?;
        // SAFETY: we are the writer; `at` is a member.
        let (prev, next) = unsafe { RawList::<A>::neighbours(at) };
        let (prev, next) = if after { (at, next) } else { (prev, at) };
        // SAFETY: `link` is claimed; (prev, next) are adjacent.
        unsafe { self.raw.link_between(link, prev, next) };
        Ok(())
    }

    /// Takes `node` off the list. `None` if it is not on this list.
    ///
    /// Its `next` is left as it was, so a reader standing on it walks on; the list's reference
    /// is released after a grace period (see [`Unlinked`]).
    pub fn remove(&mut self, node: &A::Value) -> Option<Unlinked<A::Pointer>> {
        let link = self.raw.member(node)?;
        // SAFETY: we are the writer; `link` is a member.
        Some(unsafe { self.raw.take(link) })
    }

    /// Takes the first node off the list.
    pub fn pop_front(&mut self) -> Option<Unlinked<A::Pointer>> {
        let link = self.raw.first();
        // SAFETY: we are the writer; `link` is the first member.
        (!link.is_null()).then(|| unsafe { self.raw.take(link) })
    }

    /// Takes the last node off the list.
    pub fn pop_back(&mut self) -> Option<Unlinked<A::Pointer>> {
        let link = self.raw.last();
        // SAFETY: we are the writer; `link` is the last member.
        (!link.is_null()).then(|| unsafe { self.raw.take(link) })
    }

    /// Puts `new` in `old`'s place and takes `old` off. `Err(Refused)` if `old` is not on this list
    /// or `new` is on a list already.
    ///
    /// One pointer store swaps them: `new` (pointing at `old`'s successor) replaces `old` in its
    /// predecessor, so a reader reaching that position sees exactly one of them.
    pub fn replace(
        &mut self,
        old: &A::Value,
        new: A::Pointer,
    ) -> Result<Unlinked<A::Pointer>, Refused<A::Pointer>> {
        let Some(at) = self.raw.member(old) else { return Err(Refused(new)) };
        let link = self.raw.claim(new)?;
        // SAFETY: we are the writer; `at` is a member and `link` is claimed and unlinked.
        let stored = unsafe { self.raw.swap_in(at, link) };
        RawList::<A>::disown(stored);
        // SAFETY: `value_ptr(stored)` is the `NodePtr::into_raw` pointer of the list's reference
        // to `old`, which passes to the `Unlinked`.
        Ok(unsafe { Unlinked::from_raw(A::value_ptr(stored)) })
    }

    /// Moves `node` to the front. `false` if it is not on this list.
    pub fn move_to_front(&mut self, node: &A::Value) -> bool {
        self.move_within(node, End::Front)
    }

    /// Moves `node` to the back. `false` if it is not on this list.
    pub fn move_to_back(&mut self, node: &A::Value) -> bool {
        self.move_within(node, End::Back)
    }

    fn move_within(&mut self, node: &A::Value, at: End) -> bool {
        let Some(link) = self.raw.member(node) else { return false };
        self.raw.seq.write_begin();
        // SAFETY: we are the writer; `link` is a member; after the unlink it stays claimed by
        // this list and is linked back between adjacent ends.
        unsafe {
            let stored = self.raw.unlink(link);
            self.raw.relink(stored, at);
        }
        self.raw.seq.write_end();
        true
    }

    /// Moves `node` from this list to `at` of `dest` (whose writer the caller also holds).
    /// `false` if `node` is not on this list.
    pub fn move_to(&mut self, node: &A::Value, dest: &mut ListWriter<'_, A>, at: End) -> bool {
        let Some(link) = self.raw.member(node) else { return false };
        self.raw.seq.write_begin();
        dest.raw.seq.write_begin();
        // SAFETY: we are the writer of both lists; `link` is our member. While both locks are
        // held the owner word passes straight from our id to `dest`'s.
        unsafe {
            let stored = self.raw.unlink(link);
            (*stored).owner.store(dest.raw.id, Ordering::Relaxed);
            dest.raw.relink(stored, at);
        }
        dest.raw.seq.write_end();
        self.raw.seq.write_end();
        true
    }

    /// Appends every node of `other` after this list's last node, leaving `other` empty.
    ///
    /// A move, inside a write section of both lists' move counts: a reader of `other` inside
    /// its nodes is carried onto this list (it may see nodes appended here later), and
    /// [`Iter::valid`] tells it so; readers of this list see the appended nodes or not, as for
    /// insertions. O(nodes of `other`): each link's owner word is rewritten.
    pub fn splice_back(&mut self, other: &mut ListWriter<'_, A>) {
        let first = other.raw.first();
        if first.is_null() {
            return;
        }
        other.raw.seq.write_begin();
        self.raw.seq.write_begin();
        let last = other.raw.last();
        let mut cur = first;
        while !cur.is_null() {
            // SAFETY: we are the writer of both lists; `cur` is a member of `other`.
            let l = unsafe { &*cur };
            l.owner.store(self.raw.id, Ordering::Relaxed);
            cur = l.next.load(Ordering::Relaxed);
        }
        let tail = self.raw.last();
        // SAFETY: `first` is now ours; `tail` is our last member or null.
        unsafe { &*first }.prev.store(tail.cast_mut(), Ordering::Relaxed);
        // SAFETY: `tail` is our member or null.
        let slot = unsafe { self.raw.slot(tail) };
        // Release publishes the chain to this list's readers (pairs with their Acquire loads).
        slot.store(first.cast_mut(), Ordering::Release);
        self.raw.tail.store(last.cast_mut(), Ordering::Relaxed);
        // Release for symmetry with every head store; the chain stays reachable through
        // readers already inside it.
        other.raw.head.store(ptr::null_mut(), Ordering::Release);
        other.raw.tail.store(ptr::null_mut(), Ordering::Relaxed);
        self.raw.seq.write_end();
        other.raw.seq.write_end();
    }

    /// A cursor at the first node, for walking and editing under the writer lock.
    pub fn cursor_mut<'c, 'g>(&'c mut self, guard: &'g Guard) -> CursorMut<'c, 'g, A> {
        check_guard(guard);
        CursorMut {
            raw: self.raw,
            cur: self.raw.first(),
            _writer: PhantomData,
            _guard: PhantomData,
        }
    }
}

impl<A: Adapter<Link = Link>> RawList<A> {
    /// Links a link unlinked from some list (and claimed by this one) at one end.
    ///
    /// # Safety
    ///
    /// Writer lock held; `link` is claimed by this list and unlinked.
    unsafe fn relink(&self, link: *const Link, at: End) {
        // SAFETY: forwarded; the ends are adjacent to the outside.
        unsafe {
            match at {
                End::Front => self.link_between(link, ptr::null(), self.first()),
                End::Back => self.link_between(link, self.last(), ptr::null()),
            }
        }
    }
}

impl<A: Adapter<Link = Link>> RawList<A> {
    /// Puts `link` in member `at`'s place with one pointer store, leaving `at`'s `next` for
    /// readers standing on it. Returns the stored pointer to `at`.
    ///
    /// # Safety
    ///
    /// Writer lock held; `at` is a member; `link` is claimed by this list and unlinked.
    unsafe fn swap_in(&self, at: *const Link, link: *const Link) -> *const Link {
        // SAFETY: forwarded.
        let (prev, next) = unsafe { Self::neighbours(at) };
        // SAFETY: `link` is alive (the list owns a reference to its node).
        let l = unsafe { &*link };
        l.prev.store(prev.cast_mut(), Ordering::Relaxed);
        // Release: see `link_between`.
        l.next.store(next.cast_mut(), Ordering::Release);
        // SAFETY: `prev` is `at`'s predecessor.
        let slot = unsafe { self.slot(prev) };
        let stored = slot.load(Ordering::Relaxed);
        debug_assert_eq!(stored.cast_const(), at, "list corrupt: predecessor does not point here");
        // Release publishes `link`: a reader at `prev` now reads `link` instead of `at`.
        slot.store(link.cast_mut(), Ordering::Release);
        if next.is_null() {
            self.tail.store(link.cast_mut(), Ordering::Relaxed);
        } else {
            // SAFETY: `next` is a member.
            unsafe { &*next }.prev.store(link.cast_mut(), Ordering::Relaxed);
        }
        // SAFETY: `at` is still alive (the caller holds the list's reference).
        unsafe { &*at }.prev.store(ptr::null_mut(), Ordering::Relaxed);
        stored
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for ListWriter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListWriter").field("id", &self.raw.id).finish_non_exhaustive()
    }
}

fn nonnull_value<A: Adapter<Link = Link>>(link: *const Link) -> Option<*const A::Value> {
    // SAFETY: a non-null link pointer read from a list was made by `A::link_ptr`.
    (!link.is_null()).then(|| unsafe { A::value_ptr(link) })
}

/// A writer's cursor: a position on the list (or past its end) that can remove the current
/// node or insert around it.
pub struct CursorMut<'c, 'g, A: Adapter<Link = Link>> {
    raw: &'c RawList<A>,
    /// The current member, or null: past the end.
    cur: *const Link,
    _writer: PhantomData<&'c mut ()>,
    _guard: PhantomData<&'g Guard>,
}

impl<'g, A: Adapter<Link = Link>> CursorMut<'_, 'g, A> {
    /// The current node, `None` past the end.
    pub fn get(&self) -> Option<&'g A::Value> {
        // SAFETY: a member; alive until the guard unpins.
        nonnull_value::<A>(self.cur).map(|v| unsafe { &*v })
    }

    /// Steps to the next node (from past the end: to the first).
    pub fn move_next(&mut self) {
        self.cur = if self.cur.is_null() {
            self.raw.first()
        } else {
            // SAFETY: writer lock held (the cursor borrows the writer); `cur` is a member.
            unsafe { RawList::<A>::neighbours(self.cur) }.1
        };
    }

    /// Steps to the previous node (from past the end: to the last).
    pub fn move_prev(&mut self) {
        self.cur = if self.cur.is_null() {
            self.raw.last()
        } else {
            // SAFETY: as in `move_next`.
            unsafe { RawList::<A>::neighbours(self.cur) }.0
        };
    }

    /// Takes the current node off the list and steps to the next one.
    pub fn remove_current(&mut self) -> Option<Unlinked<A::Pointer>> {
        if self.cur.is_null() {
            return None;
        }
        // SAFETY: writer lock held; `cur` is a member.
        let next = unsafe { RawList::<A>::neighbours(self.cur) }.1;
        // SAFETY: as above.
        let out = unsafe { self.raw.take(self.cur) };
        self.cur = next;
        Some(out)
    }

    /// Inserts `node` before the current node (past the end: at the back); the cursor stays.
    pub fn insert_before(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        let link = self.raw.claim(node)?;
        let prev = if self.cur.is_null() {
            self.raw.last()
        } else {
            // SAFETY: writer lock held; `cur` is a member.
            unsafe { RawList::<A>::neighbours(self.cur) }.0
        };
        // SAFETY: `link` claimed; (prev, cur) adjacent.
        unsafe { self.raw.link_between(link, prev, self.cur) };
        Ok(())
    }

    /// Inserts `node` after the current node (past the end: at the front); the cursor stays.
    pub fn insert_after(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        let link = self.raw.claim(node)?;
        let next = if self.cur.is_null() {
            self.raw.first()
        } else {
            // SAFETY: writer lock held; `cur` is a member.
            unsafe { RawList::<A>::neighbours(self.cur) }.1
        };
        // SAFETY: `link` claimed; (cur, next) adjacent.
        unsafe { self.raw.link_between(link, self.cur, next) };
        Ok(())
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for CursorMut<'_, '_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CursorMut").field("at_end", &self.cur.is_null()).finish()
    }
}

/// A lock-free walk of a [`List`], bound to a guard: yields every node it reaches.
///
/// See the module docs for what it observes while writers run; [`valid`](Iter::valid) says
/// whether a move overlapped the walk so far.
pub struct Iter<'g, A: Adapter<Link = Link>> {
    next: *const Link,
    list: &'g RawList<A>,
    seq: usize,
}

impl<'g, A: Adapter<Link = Link>> Iter<'g, A> {
    /// A walk from `list`'s head, validated against the move count read at `seq`. The caller
    /// has checked the guard of lifetime `'g`.
    pub(crate) fn starting_at(list: &'g RawList<A>, seq: usize) -> Self {
        // Acquire pairs with the Release stores that publish the first node.
        Self { next: list.head.load(Ordering::Acquire), list, seq }
    }

    /// Whether no move (`move_to_front`, `move_to_back`, `move_to`) touched the list since
    /// the walk began. If so, everything returned so far obeys the "unaffected" guarantees:
    /// each node on the list throughout was seen exactly once, in order.
    pub fn valid(&self) -> bool {
        self.list.seq_valid(self.seq)
    }
}

impl<'g, A: Adapter<Link = Link>> Iterator for Iter<'g, A> {
    type Item = &'g A::Value;

    #[inline]
    fn next(&mut self) -> Option<&'g A::Value> {
        // SAFETY: `self.next` was loaded from the list (or from a node reached through it)
        // under the guard checked when the walk began, which lives for `'g`.
        unsafe { step::<A>(&mut self.next) }
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for Iter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("done", &self.next.is_null()).finish()
    }
}
