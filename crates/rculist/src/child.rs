//! [`ChildList`]: a directory's children, positive entries first.
//!
//! # Why two lists
//!
//! The dentry-cache thread (seed 000) keeps one child list, moves an entry that turns negative
//! to the tail and flags the boundary so walkers of positive children can stop there; its author
//! calls splitting the list in two "the more obvious" form. We split it:
//!
//! - walkers of positive children never touch a negative entry: with 24M negative children
//!   (the thread's inotify case) they still walk only the positives, and they need no boundary
//!   test per step;
//! - a single list with a boundary needs that boundary kept right by every insertion, removal and
//!   move next to it, and a per-node "rest is negative" mark the list does not own; two lists
//!   are two plain [`List`](crate::List)s with the contract already proven for them;
//! - the cost is one more head (three words) per directory and that "all children" is two walks.
//!
//! Both lists share one writer lock, so an entry changes sides atomically for writers.
//!
//! # Rules
//!
//! The [`List`](crate::List) rules apply to each side. One [`ChildWriter`] (from
//! [`ChildList::lock`], [`ChildList::get_mut`] or [`ChildList::writer_unchecked`]) protects both
//! sides. [`ChildWriter::make_negative`] and [`ChildWriter::make_positive`] move an entry to the
//! back of the other side inside a write section of both sides' move counts.
//!
//! # What a concurrent reader sees during a move between sides
//!
//! For `make_negative(x)` (and symmetrically `make_positive`):
//! - a walk of the positives sees `x` at most once; a reader standing on `x` when it moves
//!   continues into the negatives (it sees negative entries and misses the positives after `x`);
//! - a walk of the negatives sees `x` at most once;
//! - a walk of all children ([`ChildList::iter_all`]) sees `x` at most twice (twice if it had
//!   passed `x` among the positives; never if it passed `x`'s old place after the unlink and
//!   reached the negatives before the relink), and may miss positives after `x` if it stood
//!   on `x`;
//! - every other entry is seen exactly once unless the reader stood on `x`.
//!
//! Every such walk reports the move through `valid()`; a walk that returns `valid() == true`
//! saw each entry present throughout exactly once, on its side.

use std::fmt;

use crate::epoch::Guard;
use crate::list::{End, Iter, ListWriter, RawList};
use crate::lock::{Held, SpinLock};
use crate::retire::{Unlinked, check_guard};
use crate::{Adapter, Link};

/// A directory's children in two lists: positive entries, then negative ones.
///
/// ```
/// use std::sync::Arc;
/// use udcache_rculist::{ChildList, Link, adapter, epoch};
///
/// struct Child { name: &'static str, link: Link }
/// adapter!(ChildAdapter = Child { link: Link });
///
/// let dir = ChildList::<ChildAdapter>::new();
/// let a = Arc::new(Child { name: "a", link: Link::new() });
/// let b = Arc::new(Child { name: "b", link: Link::new() });
/// {
///     let mut w = dir.lock();
///     w.positive().push_back(a.clone()).unwrap();
///     w.positive().push_back(b.clone()).unwrap();
///     assert!(w.make_negative(&a)); // "a" was unlinked: it moves behind the positives
/// }
/// let guard = epoch::pin();
/// let pos: Vec<_> = dir.iter_positive(&guard).map(|c| c.name).collect();
/// assert_eq!(pos, ["b"]);
/// let all = dir.iter_all(&guard);
/// assert_eq!(all.map(|c| c.name).collect::<Vec<_>>(), ["b", "a"]);
/// ```
pub struct ChildList<A: Adapter<Link = Link>> {
    positive: RawList<A>,
    negative: RawList<A>,
    lock: SpinLock,
}

impl<A: Adapter<Link = Link>> ChildList<A> {
    /// No children.
    pub fn new() -> Self {
        Self { positive: RawList::new(), negative: RawList::new(), lock: SpinLock::new() }
    }

    /// Walks the positive children without locks.
    pub fn iter_positive<'g>(&'g self, guard: &'g Guard) -> Iter<'g, A> {
        self.positive.iter(guard)
    }

    /// Walks the negative children without locks.
    pub fn iter_negative<'g>(&'g self, guard: &'g Guard) -> Iter<'g, A> {
        self.negative.iter(guard)
    }

    /// Walks all children, positives first, without locks.
    pub fn iter_all<'g>(&'g self, guard: &'g Guard) -> AllIter<'g, A> {
        check_guard(guard);
        // Both move counts are read before the walk starts, so a move during either half is
        // reported.
        let neg_seq = self.negative.move_seq_begin();
        AllIter {
            positive: self.positive.iter(guard),
            negative_list: &self.negative,
            neg_seq,
            negative: None,
        }
    }

    /// Takes the writer lock (both sides).
    pub fn lock(&self) -> ChildWriter<'_, A> {
        ChildWriter { sides: self.sides(), _held: self.lock.hold() }
    }

    /// Writer access through exclusive access.
    pub fn get_mut(&mut self) -> ChildWriter<'_, A> {
        ChildWriter { sides: self.sides(), _held: Held::external() }
    }

    /// Writer access for a caller that serialises this list's writers with its own lock (say,
    /// the parent directory's lock).
    ///
    /// # Safety
    ///
    /// While the returned writer lives, no other [`ChildWriter`] of this list exists.
    pub unsafe fn writer_unchecked(&self) -> ChildWriter<'_, A> {
        ChildWriter { sides: self.sides(), _held: Held::external() }
    }

    fn sides(&self) -> [&RawList<A>; 2] {
        [&self.positive, &self.negative]
    }
}

impl<A: Adapter<Link = Link>> Default for ChildList<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for ChildList<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildList")
            .field("positive_empty", &self.positive.is_empty())
            .field("negative_empty", &self.negative.is_empty())
            .finish()
    }
}

/// Proof that the holder is the [`ChildList`]'s only writer.
pub struct ChildWriter<'l, A: Adapter<Link = Link>> {
    /// `[positive, negative]`.
    sides: [&'l RawList<A>; 2],
    _held: Held<'l>,
}

impl<'l, A: Adapter<Link = Link>> ChildWriter<'l, A> {
    /// The positive side, with every [`ListWriter`] operation. A writer of its own, borrowed
    /// from this one: it cannot outlive the lock (a `&mut` to a writer of the lock's lifetime
    /// could be swapped out with `mem::replace` and kept after the unlock, making a second
    /// writer of the side possible).
    ///
    /// ```compile_fail,E0505
    /// use udcache_rculist::{ChildList, Link, adapter};
    /// struct Child { link: Link }
    /// adapter!(ChildAdapter = Child { link: Link });
    ///
    /// let dir = ChildList::<ChildAdapter>::new();
    /// let mut w = dir.lock();
    /// // The side's writer cannot outlive the lock's writer: the lock is released with it.
    /// let side = w.positive();
    /// drop(w);
    /// side.is_empty();
    /// ```
    pub fn positive(&mut self) -> ListWriter<'_, A> {
        ListWriter::over(self.sides[0])
    }

    /// The negative side, as [`positive`](Self::positive).
    pub fn negative(&mut self) -> ListWriter<'_, A> {
        ListWriter::over(self.sides[1])
    }

    /// Both sides' writers, for a move between them (`&mut self`: only one pair at a time).
    fn both(&mut self) -> [ListWriter<'_, A>; 2] {
        self.sides.map(ListWriter::over)
    }

    /// Moves a positive child to the back of the negatives; `false` if it is not a positive
    /// child of this list.
    pub fn make_negative(&mut self, node: &A::Value) -> bool {
        let [mut pos, mut neg] = self.both();
        pos.move_to(node, &mut neg, End::Back)
    }

    /// Moves a negative child to the back of the positives; `false` if it is not a negative
    /// child of this list.
    pub fn make_positive(&mut self, node: &A::Value) -> bool {
        let [mut pos, mut neg] = self.both();
        neg.move_to(node, &mut pos, End::Back)
    }

    /// Takes a child off whichever side it is on; `None` if it is not a child of this list.
    pub fn remove(&mut self, node: &A::Value) -> Option<Unlinked<A::Pointer>> {
        let [mut pos, mut neg] = self.both();
        pos.remove(node).or_else(|| neg.remove(node))
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for ChildWriter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildWriter").finish_non_exhaustive()
    }
}

/// A lock-free walk of all children: the positives, then the negatives.
pub struct AllIter<'g, A: Adapter<Link = Link>> {
    positive: Iter<'g, A>,
    negative_list: &'g RawList<A>,
    neg_seq: usize,
    negative: Option<Iter<'g, A>>,
}

impl<A: Adapter<Link = Link>> AllIter<'_, A> {
    /// Whether no move touched either side since the walk began (see [`Iter::valid`]).
    pub fn valid(&self) -> bool {
        let neg_valid = match &self.negative {
            Some(it) => it.valid(),
            None => self.negative_list.seq_valid(self.neg_seq),
        };
        self.positive.valid() && neg_valid
    }
}

impl<'g, A: Adapter<Link = Link>> Iterator for AllIter<'g, A> {
    type Item = &'g A::Value;

    fn next(&mut self) -> Option<&'g A::Value> {
        if self.negative.is_none() {
            if let Some(v) = self.positive.next() {
                return Some(v);
            }
            // The guard was checked in `iter_all`; the negative head is read only now, so
            // entries that turned negative while we walked the positives can still be seen.
            self.negative = Some(Iter::starting_at(self.negative_list, self.neg_seq));
        }
        self.negative.as_mut().and_then(Iterator::next)
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for AllIter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AllIter").field("in_negatives", &self.negative.is_some()).finish()
    }
}
