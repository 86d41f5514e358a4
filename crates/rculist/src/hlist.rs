//! [`HList`] and [`HListBl`]: singly linked hash chains with a one-word head.
//!
//! # Rules
//!
//! - **Shape.** The head word holds the address of the first link (null when empty), with a
//!   short chain's length and the user's tag bits in the high bits (see [`crate::head`]);
//!   each link's `next` points at the following one, the last is null. There are no back
//!   pointers: a table of heads costs one word per bucket, and a writer finds a node's predecessor by walking the
//!   chain from the head. Hash chains are short (a few entries per bucket), so that walk is the
//!   price of the one-word head, and it doubles as the proof that the node is on this chain.
//! - **Lock.** [`HList`] is serialised by a lock the caller holds ([`HList::writer_unchecked`])
//!   or by exclusive access ([`HList::get_mut`]). [`HListBl`] keeps its lock in bit 0 of the head
//!   word ([`HListBl::lock`]): a locked bucket still costs one word. Either way writers hold an
//!   [`HListWriter`]; it protects the head's pointer bits and every member's `next`.
//!   Readers take no lock, store nothing, and mask the lock bit off.
//! - **Publish / retire.** As for [`List`](crate::List): Release stores of `next` and of the
//!   head's pointer bits, Acquire loads by readers; a removed node keeps its `next`; the chain's
//!   reference to a node is released after a grace period ([`Unlinked`]).
//! - **Ownership.** Bit 0 of a link's `next` is `UNLINKED`: set while the link is on no
//!   chain (a new link, or one taken off: its pointer bits still lead readers on), clear while
//!   it is a member. Inserting claims the link by clearing the bit with a compare-exchange, so
//!   a node cannot sit on two chains through the same link; taking it off sets the bit with a
//!   Release store. Readers mask the bit off, as they mask the head's lock bit: the flag costs
//!   no word of its own, so a link is one word.
//!
//! # What a concurrent reader observes
//!
//! A lookup walking the chain while writers run:
//! - a node on the chain for the whole walk is found (seen exactly once);
//! - a node inserted (`push_front`, `insert_after`, `insert_before`) during the walk is seen at
//!   most once;
//! - a node removed (`remove`, `pop_front`, cursor `remove_current`) during the walk is seen at
//!   most once and is never freed under the reader;
//! - `replace(old, new)` swaps them with one store: a reader reaching that position sees exactly
//!   one of them.
//!
//! Hash chains have no moves. Moving an entry to another bucket (a rename) is remove + insert:
//! a reader standing on it then continues into the other bucket's chain and may miss the rest of
//! its own. Callers validate such lookups with their own sequence count (as a dentry cache
//! does with its rename sequence), or wait a grace period between the two steps.

use std::fmt;
use std::marker::PhantomData;
use std::ptr;

use crate::epoch::Guard;
use crate::head::{self, Parts, SHORT, compose, first_of, parts_of};
use crate::lock::{BIT_LOCK, bit_lock, bit_unlock};
use crate::retire::{Refused, Unlinked, check_guard, owned_of, release_raw};
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::walk::step;
use crate::{Adapter, NodePtr};

/// Bit 0 of an [`HLink`]'s `next`: the link is on no chain (see the module rules).
const UNLINKED: usize = 1;

/// `next` with the [`UNLINKED`] bit set: what a link holds while it is on no chain.
fn unlinked(next: *mut HLink) -> *mut HLink {
    next.map_addr(|a| a | UNLINKED)
}

/// The pointer bits of a `next` word.
fn pointer_of(next: *mut HLink) -> *mut HLink {
    next.map_addr(|a| a & !UNLINKED)
}

/// The link a node embeds once per hash chain it can sit on (one word).
pub struct HLink {
    /// The following link, and in bit 0 [`UNLINKED`]; Release-stored by writers,
    /// Acquire-loaded by readers.
    pub(crate) next: AtomicPtr<HLink>,
}

impl HLink {
    /// A link on no chain.
    pub fn new() -> Self {
        Self { next: AtomicPtr::new(unlinked(ptr::null_mut())) }
    }

    /// Whether the link is on a chain now (a racy snapshot unless the caller holds that
    /// chain's writer lock).
    pub fn is_linked(&self) -> bool {
        self.next.load(Ordering::Relaxed).addr() & UNLINKED == 0
    }

    /// The following link, loaded with Acquire, its [`UNLINKED`] bit masked off.
    #[inline(always)]
    pub(crate) fn next_pointer(&self) -> *const HLink {
        // Acquire: pairs with the writers' Release stores of `next` (`HListWriter::store`,
        // `mark_unlinked`), so the node it leads to is seen initialised.
        pointer_of(self.next.load(Ordering::Acquire))
    }

    /// Marks the link as on no chain, keeping its pointer bits for readers standing on it.
    /// Release pairs with the Acquire of the claim that next puts it on a chain (`claim`).
    fn mark_unlinked(&self, next: *const HLink) {
        self.next.store(unlinked(next.cast_mut()), Ordering::Release);
    }
}

impl Default for HLink {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HLink").field("linked", &self.is_linked()).finish()
    }
}

/// The head word: the first link, the [`HListBl`] lock and the tags (see [`crate::head`]).
struct RawHead<A: Adapter<Link = HLink>> {
    word: AtomicUsize,
    _adapter: PhantomData<fn() -> A>,
}

impl<A: Adapter<Link = HLink>> RawHead<A> {
    fn new() -> Self {
        Self { word: AtomicUsize::new(0), _adapter: PhantomData }
    }

    fn is_empty(&self) -> bool {
        first_of(self.word.load(Ordering::Relaxed)).is_null()
    }

    fn iter<'g>(&'g self, guard: &'g Guard) -> HIter<'g, A> {
        check_guard(guard);
        // Acquire pairs with the Release stores of the head word (`HListWriter::store`).
        let first = first_of(self.word.load(Ordering::Acquire));
        HIter { next: first, _list: PhantomData }
    }

    /// [`iter`](Self::iter), or an empty walk if `bits` are clear in the tags read with the
    /// first link (one load: see [`crate::head`]).
    fn iter_tagged<'g>(&'g self, guard: &'g Guard, bits: u16) -> HIter<'g, A> {
        check_guard(guard);
        // Acquire: as in `iter`.
        let head = parts_of(self.word.load(Ordering::Acquire));
        // Bits above `TAG_BITS` are never kept (`add_tags` drops them): a filter that asks
        // for one of them cannot rule the chain out.
        let ruled_out = head.tags & bits == 0 && bits & !head::ALL == 0;
        let first = if ruled_out { ptr::null() } else { head.first };
        HIter { next: first, _list: PhantomData }
    }
}

impl<A: Adapter<Link = HLink>> Drop for RawHead<A> {
    fn drop(&mut self) {
        let mut cur = first_of(self.word.load(Ordering::Relaxed));
        while !cur.is_null() {
            // SAFETY: `&mut self`: no writer or reader of this chain remains; `cur` is a member.
            let l = unsafe { &*cur };
            let next = l.next.load(Ordering::Relaxed);
            l.mark_unlinked(next);
            // SAFETY: `value_ptr(cur)` is the `NodePtr::into_raw` pointer of the reference the
            // chain owned, given up here once; the release is deferred.
            unsafe { release_raw::<A::Pointer>(A::value_ptr(cur)) };
            cur = next;
        }
    }
}

macro_rules! reader_api {
    () => {
        /// Whether the chain is empty (a racy snapshot for readers).
        pub fn is_empty(&self) -> bool {
            self.raw.is_empty()
        }

        /// Walks the chain under `guard`, without locks.
        ///
        /// # Panics
        ///
        /// If `guard` does not pin crossbeam-epoch's default collector.
        pub fn iter<'g>(&'g self, guard: &'g Guard) -> HIter<'g, A> {
            self.raw.iter(guard)
        }

        /// The first node satisfying `pred`, walking without locks.
        pub fn find<'g>(
            &'g self,
            guard: &'g Guard,
            mut pred: impl FnMut(&A::Value) -> bool,
        ) -> Option<&'g A::Value> {
            self.raw.iter(guard).find(|v| pred(v))
        }

        /// Like [`find`](Self::find), returning a new owning reference to the node (made with
        /// [`NodePtr::clone_raw`]), which outlives `guard`.
        pub fn find_owned(
            &self,
            guard: &Guard,
            pred: impl FnMut(&A::Value) -> bool,
        ) -> Option<A::Pointer> {
            find_owned_in(self.raw.iter(guard), guard, pred)
        }

        /// [`find`](Self::find) among nodes tagged with some of `bits`: if the chain's tags
        /// have none of them, `None` without reading a member. Sound only if writers add each
        /// node's tags before inserting it (see [`crate::head`], Tag bits).
        ///
        /// Always inlined, so the predicate is compiled into the walk of the chain rather than
        /// reached through a closure kept on the stack: a hash-table lookup is this call and
        /// little else.
        #[inline(always)]
        pub fn find_tagged<'g>(
            &'g self,
            guard: &'g Guard,
            bits: u16,
            mut pred: impl FnMut(&A::Value) -> bool,
        ) -> Option<&'g A::Value> {
            self.raw.iter_tagged(guard, bits).find(|v| pred(v))
        }

        /// [`find_owned`](Self::find_owned) behind the tags, as
        /// [`find_tagged`](Self::find_tagged).
        pub fn find_owned_tagged(
            &self,
            guard: &Guard,
            bits: u16,
            pred: impl FnMut(&A::Value) -> bool,
        ) -> Option<A::Pointer> {
            find_owned_in(self.raw.iter_tagged(guard, bits), guard, pred)
        }
    };
}

/// The first node of walk `it` satisfying `pred`, as a new owning reference.
fn find_owned_in<A: Adapter<Link = HLink>>(
    mut it: HIter<'_, A>,
    guard: &Guard,
    mut pred: impl FnMut(&A::Value) -> bool,
) -> Option<A::Pointer> {
    loop {
        let link = it.next;
        let v = it.next()?;
        if pred(v) {
            // SAFETY: `link` came from the chain under `guard` (checked when `it` began); its
            // node's release is deferred past the guard. `value_ptr` of the stored pointer is
            // the `NodePtr::into_raw` pointer of the chain's reference, as `owned_of` needs.
            return Some(unsafe { owned_of::<A::Pointer>(A::value_ptr(link), guard) });
        }
    }
}

/// A hash chain with a one-word head, serialised by the caller's lock.
///
/// ```
/// use std::sync::Arc;
/// use udcache_rculist::{HLink, HList, adapter, epoch};
///
/// struct Entry { key: u64, link: HLink }
/// adapter!(EntryAdapter = Entry { link: HLink });
///
/// let mut chain = HList::<EntryAdapter>::new();
/// chain.get_mut().push_front(Arc::new(Entry { key: 7, link: HLink::new() })).unwrap();
/// let guard = epoch::pin();
/// assert!(chain.find(&guard, |e| e.key == 7).is_some());
/// ```
pub struct HList<A: Adapter<Link = HLink>> {
    raw: RawHead<A>,
}

impl<A: Adapter<Link = HLink>> HList<A> {
    /// An empty chain.
    pub fn new() -> Self {
        Self { raw: RawHead::new() }
    }

    reader_api!();

    /// Writer access through exclusive access.
    pub fn get_mut(&mut self) -> HListWriter<'_, A> {
        HListWriter { raw: &self.raw, lock_bit: 0 }
    }

    /// Writer access for a caller that serialises this chain's writers with its own lock.
    ///
    /// # Safety
    ///
    /// While the returned writer lives, no other [`HListWriter`] of this chain exists.
    pub unsafe fn writer_unchecked(&self) -> HListWriter<'_, A> {
        HListWriter { raw: &self.raw, lock_bit: 0 }
    }
}

/// A hash chain whose one-word head also carries its writer lock in bit 0 (hlist_bl).
///
/// ```
/// use std::sync::Arc;
/// use udcache_rculist::{HLink, HListBl, adapter, epoch};
///
/// struct Entry { key: u64, link: HLink }
/// adapter!(EntryAdapter = Entry { link: HLink });
///
/// let bucket = HListBl::<EntryAdapter>::new();
/// assert_eq!(size_of_val(&bucket), size_of::<usize>());
/// let e = Arc::new(Entry { key: 7, link: HLink::new() });
/// bucket.lock().push_front(e.clone()).unwrap();
/// let guard = epoch::pin();
/// assert_eq!(bucket.find(&guard, |x| x.key == 7).map(|x| x.key), Some(7));
/// let gone = bucket.lock().remove(&e).unwrap();
/// gone.retire(&guard); // released once every reader pinned now has unpinned
/// assert!(bucket.find(&guard, |x| x.key == 7).is_none());
/// ```
pub struct HListBl<A: Adapter<Link = HLink>> {
    raw: RawHead<A>,
}

impl<A: Adapter<Link = HLink>> HListBl<A> {
    /// An empty, unlocked chain.
    pub fn new() -> Self {
        Self { raw: RawHead::new() }
    }

    reader_api!();

    /// Takes the bit lock; the writer releases it when dropped.
    pub fn lock(&self) -> HListWriter<'_, A> {
        bit_lock(&self.raw.word);
        HListWriter { raw: &self.raw, lock_bit: BIT_LOCK }
    }

    /// Whether the bit lock is held (a racy snapshot).
    pub fn is_locked(&self) -> bool {
        self.raw.word.load(Ordering::Relaxed) & BIT_LOCK != 0
    }
}

macro_rules! common_impls {
    ($ty:ident) => {
        impl<A: Adapter<Link = HLink>> Default for $ty<A> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<A: Adapter<Link = HLink>> fmt::Debug for $ty<A> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty)).field("empty", &self.is_empty()).finish()
            }
        }
    };
}
common_impls!(HList);
common_impls!(HListBl);

/// Where a link pointer lives: the head word or a member's `next`.
#[derive(Clone, Copy)]
enum Slot {
    Head,
    Next(*const HLink),
}

/// Proof that the holder is the chain's only writer; all writer operations live here.
///
/// Operations naming a node that is not on this chain, or inserting one already on a chain,
/// change nothing and say so (`None` or `Err(Refused)`).
pub struct HListWriter<'l, A: Adapter<Link = HLink>> {
    raw: &'l RawHead<A>,
    /// `BIT_LOCK` while this writer holds an [`HListBl`]'s bit lock (kept in every head store
    /// and released on drop), 0 for an [`HList`].
    lock_bit: usize,
}

impl<'l, A: Adapter<Link = HLink>> HListWriter<'l, A> {
    fn load(&self, slot: Slot) -> *const HLink {
        match slot {
            Slot::Head => first_of(self.raw.word.load(Ordering::Relaxed)),
            // SAFETY: writer lock held; `p` is a member.
            Slot::Next(p) => unsafe { &*p }.next.load(Ordering::Relaxed),
        }
    }

    /// Stores `link` into `slot`, publishing it to readers.
    fn store(&self, slot: Slot, link: *const HLink) {
        // Release pairs with the readers' Acquire loads: a reader that reads `link` sees its node
        // initialised (also when `link` was published earlier by another store it did not read).
        match slot {
            Slot::Head => self.store_head(Parts { first: link, ..self.head() }),
            // SAFETY: writer lock held; `p` is a member.
            Slot::Next(p) => unsafe { &*p }.next.store(link.cast_mut(), Ordering::Release),
        }
    }

    /// The head word taken apart (see [`crate::head`]). Relaxed: only writers change the
    /// word, and they are serialised.
    fn head(&self) -> Parts {
        parts_of(self.raw.word.load(Ordering::Relaxed))
    }

    /// Stores the head word, with the lock bit if this writer holds it. Release: see `store`.
    fn store_head(&self, head: Parts) {
        self.raw.word.store(compose(head, self.lock_bit), Ordering::Release);
    }

    /// Counts a member linked (`true`) or unlinked into the head word's length. Unlinking
    /// from a chain of [`SHORT`] or more counts the members left.
    fn count(&self, linked: bool) {
        let head = self.head();
        let Some(len) = head.len else { return };
        let len = match (linked, len) {
            (true, _) => len + 1,
            (false, SHORT) => self.members_up_to(SHORT),
            (false, _) => len - 1,
        };
        self.store_head(Parts { len: Some(len), ..head });
    }

    /// The number of members, counting no further than `limit`.
    fn members_up_to(&self, limit: usize) -> usize {
        let mut n = 0;
        let mut cur = self.load(Slot::Head);
        while !cur.is_null() && n < limit {
            n += 1;
            cur = pointer_of(self.load(Slot::Next(cur)).cast_mut());
        }
        n
    }

    /// The number of members if fewer than [`SHORT`]; `None` for a longer
    /// chain, or one whose head word is wide (see [`crate::head`]). No walk.
    pub fn short_len(&self) -> Option<usize> {
        self.head().len.filter(|&n| n < SHORT)
    }

    /// The chain's tag bits (the low [`head::TAG_BITS`] bits), all ones if the head word is
    /// wide (see [`crate::head`]).
    pub fn tags(&self) -> u16 {
        self.head().tags
    }

    /// Adds `bits` (their low [`head::TAG_BITS`]) to the chain's tags. Call it before inserting
    /// a node they describe, so that no reader of [`find_tagged`](HListBl::find_tagged) can
    /// see the node without them.
    pub fn add_tags(&mut self, bits: u16) {
        let head = self.head();
        let bits = bits & head::ALL;
        if head.tags & bits != bits {
            self.store_head(Parts { tags: head.tags | bits, ..head });
        }
    }

    /// Replaces the chain's tags (with the low [`head::TAG_BITS`] bits of `tags`), typically
    /// with the union of the tags of the nodes left after a removal. Clearing a bit of a node
    /// still on the chain hides it from tagged finds.
    pub fn set_tags(&mut self, tags: u16) {
        self.store_head(Parts { tags, ..self.head() });
    }

    /// The slot pointing at `node`'s link, found by walking: `None` if not on this chain.
    fn find_slot(&self, node: &A::Value) -> Option<Slot> {
        // SAFETY: `node` is a live reference.
        let target = unsafe { A::link_ptr(node) };
        let mut slot = Slot::Head;
        loop {
            let cur = self.load(slot);
            if cur.is_null() {
                return None;
            }
            if cur == target {
                return Some(slot);
            }
            slot = Slot::Next(cur);
        }
    }

    fn claim(node: A::Pointer) -> Result<*const HLink, Refused<A::Pointer>> {
        let value = NodePtr::into_raw(node);
        // SAFETY: `value` is live (we own a reference to it, and the `NodePtr` contract makes the
        // `into_raw` pointer valid for reads while it lives).
        let link = unsafe { A::link_ptr(value) };
        // SAFETY: the link lives inside the live node.
        let next = &unsafe { &*link }.next;
        let mut seen = next.load(Ordering::Relaxed);
        loop {
            if seen.addr() & UNLINKED == 0 {
                // SAFETY: from `NodePtr::into_raw` above; we still own the reference it stands
                // for: the round trip of the `NodePtr` contract.
                return Err(Refused(unsafe { A::Pointer::from_raw(value) }));
            }
            // Acquire pairs with the Release of `mark_unlinked` when the node left its
            // previous chain. The pointer bits stay until `link_at` stores the new successor.
            match next.compare_exchange_weak(
                seen,
                pointer_of(seen),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(link),
                Err(now) => seen = now,
            }
        }
    }

    /// Links claimed `link` into `slot`, in front of what the slot points at.
    fn link_at(&self, slot: Slot, link: *const HLink) {
        let next = self.load(slot);
        // SAFETY: `link` is alive (the chain owns a reference to its node).
        // Release: a reader still standing on this node from an earlier life sees `next`'s node.
        unsafe { &*link }.next.store(next.cast_mut(), Ordering::Release);
        self.store(slot, link);
        self.count(true);
    }

    /// Unlinks the member `slot` points at; its `next` stays for readers on it.
    fn take_at(&self, slot: Slot) -> Unlinked<A::Pointer> {
        let stored = self.load(slot);
        debug_assert!(!stored.is_null());
        // SAFETY: `stored` is a member (writer lock held).
        let l = unsafe { &*stored };
        let next = l.next.load(Ordering::Relaxed);
        debug_assert!(l.is_linked(), "member marked unlinked");
        self.store(slot, next);
        l.mark_unlinked(next);
        self.count(false);
        // SAFETY: `stored` was derived by `link_ptr` from the `NodePtr::into_raw` pointer of the
        // chain's reference (its provenance), so `value_ptr` gives that pointer back; the
        // reference passes to the `Unlinked`.
        unsafe { Unlinked::from_raw(A::value_ptr(stored)) }
    }

    /// Whether the chain is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// Whether `node` is on this chain (walks it).
    pub fn contains(&self, node: &A::Value) -> bool {
        self.find_slot(node).is_some()
    }

    /// The first node.
    pub fn front<'g>(&self, guard: &'g Guard) -> Option<&'g A::Value> {
        check_guard(guard);
        let first = self.load(Slot::Head);
        // SAFETY: a member; alive until the guard unpins.
        (!first.is_null()).then(|| unsafe { &*A::value_ptr(first) })
    }

    /// Inserts `node` first. `Err(Refused)` if it is on a chain already.
    pub fn push_front(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        let link = Self::claim(node)?;
        self.link_at(Slot::Head, link);
        Ok(())
    }

    insert_beside_api!("chain");

    fn insert_beside(
        &mut self,
        anchor: &A::Value,
        node: A::Pointer,
        after: bool,
    ) -> Result<(), Refused<A::Pointer>> {
        let Some(slot) = self.find_slot(anchor) else { return Err(Refused(node)) };
        let link = Self::claim(node)?;
        // After the anchor: the anchor's own `next`; before it: the slot pointing at it.
        let slot = if after { Slot::Next(self.load(slot)) } else { slot };
        self.link_at(slot, link);
        Ok(())
    }

    /// Takes `node` off the chain; `None` if it is not on it.
    pub fn remove(&mut self, node: &A::Value) -> Option<Unlinked<A::Pointer>> {
        let slot = self.find_slot(node)?;
        Some(self.take_at(slot))
    }

    /// Takes the first node off the chain.
    pub fn pop_front(&mut self) -> Option<Unlinked<A::Pointer>> {
        (!self.load(Slot::Head).is_null()).then(|| self.take_at(Slot::Head))
    }

    /// Puts `new` in `old`'s place with one pointer store; `Err(Refused)` if `old` is not on this
    /// chain or `new` is on a chain already.
    pub fn replace(
        &mut self,
        old: &A::Value,
        new: A::Pointer,
    ) -> Result<Unlinked<A::Pointer>, Refused<A::Pointer>> {
        let Some(slot) = self.find_slot(old) else { return Err(Refused(new)) };
        let link = Self::claim(new)?;
        let stored = self.load(slot);
        // SAFETY: `stored` is a member; `link` is alive.
        let (o, n) = unsafe { (&*stored, &*link) };
        // Release: as in `link_at`.
        let next = o.next.load(Ordering::Relaxed);
        n.next.store(next, Ordering::Release);
        self.store(slot, link);
        o.mark_unlinked(next);
        // SAFETY: `value_ptr(stored)` is the `NodePtr::into_raw` pointer of the chain's
        // reference to `old`, which passes to the `Unlinked`.
        Ok(unsafe { Unlinked::from_raw(A::value_ptr(stored)) })
    }

    /// A cursor at the first node, for walking and editing under the writer lock.
    pub fn cursor_mut<'c, 'g>(&'c mut self, guard: &'g Guard) -> HCursorMut<'c, 'l, 'g, A> {
        check_guard(guard);
        HCursorMut { writer: self, slot: Slot::Head, _guard: PhantomData }
    }
}

impl<A: Adapter<Link = HLink>> Drop for HListWriter<'_, A> {
    fn drop(&mut self) {
        if self.lock_bit == BIT_LOCK {
            bit_unlock(&self.raw.word);
        }
    }
}

impl<A: Adapter<Link = HLink>> fmt::Debug for HListWriter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HListWriter").field("bit_locked", &(self.lock_bit == BIT_LOCK)).finish()
    }
}

/// A writer's cursor on a chain: the current node is the one its slot points at (none: past
/// the end).
pub struct HCursorMut<'c, 'l, 'g, A: Adapter<Link = HLink>> {
    writer: &'c mut HListWriter<'l, A>,
    slot: Slot,
    _guard: PhantomData<&'g Guard>,
}

impl<'g, A: Adapter<Link = HLink>> HCursorMut<'_, '_, 'g, A> {
    /// The current node, `None` past the end.
    pub fn get(&self) -> Option<&'g A::Value> {
        let cur = self.writer.load(self.slot);
        // SAFETY: a member; alive until the guard unpins.
        (!cur.is_null()).then(|| unsafe { &*A::value_ptr(cur) })
    }

    /// Steps to the next node; stays past the end once there.
    pub fn move_next(&mut self) {
        let cur = self.writer.load(self.slot);
        if !cur.is_null() {
            self.slot = Slot::Next(cur);
        }
    }

    /// Takes the current node off the chain; the cursor is then at its successor.
    pub fn remove_current(&mut self) -> Option<Unlinked<A::Pointer>> {
        (!self.writer.load(self.slot).is_null()).then(|| self.writer.take_at(self.slot))
    }

    /// Inserts `node` before the current node (past the end: last); the cursor is then at
    /// `node`.
    pub fn insert_before(&mut self, node: A::Pointer) -> Result<(), Refused<A::Pointer>> {
        let link = HListWriter::<A>::claim(node)?;
        self.writer.link_at(self.slot, link);
        Ok(())
    }
}

impl<A: Adapter<Link = HLink>> fmt::Debug for HCursorMut<'_, '_, '_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HCursorMut").field("at_end", &self.get().is_none()).finish()
    }
}

/// A lock-free walk of a hash chain, bound to a guard.
pub struct HIter<'g, A: Adapter<Link = HLink>> {
    next: *const HLink,
    _list: PhantomData<&'g RawHead<A>>,
}

impl<'g, A: Adapter<Link = HLink>> Iterator for HIter<'g, A> {
    type Item = &'g A::Value;

    #[inline]
    fn next(&mut self) -> Option<&'g A::Value> {
        // SAFETY: `self.next` was loaded from the chain (or from a node reached through it)
        // under the guard checked when the walk began, which lives for `'g`.
        unsafe { step::<A>(&mut self.next) }
    }
}

impl<A: Adapter<Link = HLink>> fmt::Debug for HIter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HIter").field("done", &self.next.is_null()).finish()
    }
}
