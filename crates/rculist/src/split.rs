//! [`SplitList`]: one list in two parts under one lock, walked first part then second.
//!
//! A list whose members fall into two kinds, where most walkers want only one kind, keeps each
//! kind in a part of its own: walkers of the first part never step over a member of the second,
//! however many there are, and need no test per step to know where the first part ends. For
//! example a directory's children, positive entries in the first part and negative ones in the
//! second: walkers of the positive children skip any number of negative ones.
//!
//! # Rules
//!
//! - **Shape.** Two [`List`](crate::List)s (the parts), each with the [`List`](crate::List)
//!   rules and guarantees. A member is on exactly one part. The cost against one list is one
//!   more head (three words), and that walking all members is two walks.
//! - **Lock.** One writer lock protects both parts: a [`SplitWriter`] (from
//!   [`SplitList::lock`], [`SplitList::get_mut`] or [`SplitList::writer_unchecked`]) gives a
//!   [`ListWriter`] of either part ([`SplitWriter::first`], [`SplitWriter::second`]), so a
//!   member changes parts atomically for writers.
//! - **Moves between parts.** [`SplitWriter::move_to_second`] and
//!   [`SplitWriter::move_to_first`] move a member to the back of the other part inside a
//!   write section of both parts' move counts.
//!
//! # What a concurrent reader sees during a move between parts
//!
//! For `move_to_second(x)` (and symmetrically `move_to_first`):
//! - a walk of the first part sees `x` at most once; a reader standing on `x` when it moves
//!   continues into the second part (it sees members of the second part and misses the
//!   first-part members after `x`);
//! - a walk of the second part sees `x` at most once;
//! - a walk of both parts ([`SplitList::iter_all`]) sees `x` at most twice (twice if it had
//!   passed `x` in the first part; never if it passed `x`'s old place after the unlink and
//!   reached the second part before the relink), and may miss first-part members after `x` if
//!   it stood on `x`;
//! - every other member is seen exactly once unless the reader stood on `x`.
//!
//! Every such walk reports the move through `valid()`; a walk that returns `valid() == true`
//! saw each member present throughout exactly once, in its part.

use std::fmt;

use crate::epoch::Guard;
use crate::list::{End, Iter, ListWriter, RawList};
use crate::lock::{Held, SpinLock};
use crate::retire::{Unlinked, check_guard};
use crate::{Adapter, Link};

/// One list in two parts under one lock (see the [module docs](self)).
///
/// ```
/// use std::sync::Arc;
/// use udcache_rculist::{Link, SplitList, adapter, epoch};
///
/// struct Task { name: &'static str, link: Link }
/// adapter!(TaskAdapter = Task { link: Link });
///
/// // Pending tasks first, finished ones after.
/// let tasks = SplitList::<TaskAdapter>::new();
/// let a = Arc::new(Task { name: "a", link: Link::new() });
/// let b = Arc::new(Task { name: "b", link: Link::new() });
/// {
///     let mut w = tasks.lock();
///     w.first().push_back(a.clone()).unwrap();
///     w.first().push_back(b.clone()).unwrap();
///     assert!(w.move_to_second(&a)); // "a" finished: it moves behind the pending ones
/// }
/// let guard = epoch::pin();
/// let pending: Vec<_> = tasks.iter_first(&guard).map(|t| t.name).collect();
/// assert_eq!(pending, ["b"]);
/// let all = tasks.iter_all(&guard);
/// assert_eq!(all.map(|t| t.name).collect::<Vec<_>>(), ["b", "a"]);
/// ```
pub struct SplitList<A: Adapter<Link = Link>> {
    first: RawList<A>,
    second: RawList<A>,
    lock: SpinLock,
}

impl<A: Adapter<Link = Link>> SplitList<A> {
    /// Both parts empty.
    pub fn new() -> Self {
        Self { first: RawList::new(), second: RawList::new(), lock: SpinLock::new() }
    }

    /// Walks the first part without locks.
    pub fn iter_first<'g>(&'g self, guard: &'g Guard) -> Iter<'g, A> {
        self.first.iter(guard)
    }

    /// Walks the second part without locks.
    pub fn iter_second<'g>(&'g self, guard: &'g Guard) -> Iter<'g, A> {
        self.second.iter(guard)
    }

    /// Walks both parts, the first part first, without locks.
    pub fn iter_all<'g>(&'g self, guard: &'g Guard) -> SplitIter<'g, A> {
        check_guard(guard);
        // Both move counts are read before the walk starts, so a move during either half is
        // reported.
        let second_seq = self.second.move_seq_begin();
        SplitIter {
            first: self.first.iter(guard),
            second_list: &self.second,
            second_seq,
            second: None,
        }
    }

    /// Takes the writer lock (both parts).
    pub fn lock(&self) -> SplitWriter<'_, A> {
        SplitWriter { parts: self.parts(), _held: self.lock.hold() }
    }

    /// Writer access through exclusive access.
    pub fn get_mut(&mut self) -> SplitWriter<'_, A> {
        SplitWriter { parts: self.parts(), _held: Held::external() }
    }

    /// Writer access for a caller that serialises this list's writers with its own lock.
    ///
    /// # Safety
    ///
    /// While the returned writer lives, no other [`SplitWriter`] of this list exists.
    pub unsafe fn writer_unchecked(&self) -> SplitWriter<'_, A> {
        SplitWriter { parts: self.parts(), _held: Held::external() }
    }

    fn parts(&self) -> [&RawList<A>; 2] {
        [&self.first, &self.second]
    }
}

impl<A: Adapter<Link = Link>> Default for SplitList<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for SplitList<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SplitList")
            .field("first_empty", &self.first.is_empty())
            .field("second_empty", &self.second.is_empty())
            .finish()
    }
}

/// Proof that the holder is the [`SplitList`]'s only writer.
pub struct SplitWriter<'l, A: Adapter<Link = Link>> {
    /// `[first, second]`.
    parts: [&'l RawList<A>; 2],
    _held: Held<'l>,
}

impl<'l, A: Adapter<Link = Link>> SplitWriter<'l, A> {
    /// The first part, with every [`ListWriter`] operation. A writer of its own, borrowed
    /// from this one: it cannot outlive the lock (a `&mut` to a writer of the lock's lifetime
    /// could be swapped out with `mem::replace` and kept after the unlock, making a second
    /// writer of the part possible).
    ///
    /// ```compile_fail,E0505
    /// use udcache_rculist::{Link, SplitList, adapter};
    /// struct Node { link: Link }
    /// adapter!(NodeAdapter = Node { link: Link });
    ///
    /// let list = SplitList::<NodeAdapter>::new();
    /// let mut w = list.lock();
    /// // The part's writer cannot outlive the lock's writer: the lock is released with it.
    /// let part = w.first();
    /// drop(w);
    /// part.is_empty();
    /// ```
    pub fn first(&mut self) -> ListWriter<'_, A> {
        ListWriter::over(self.parts[0])
    }

    /// The second part, as [`first`](Self::first).
    pub fn second(&mut self) -> ListWriter<'_, A> {
        ListWriter::over(self.parts[1])
    }

    /// Both parts' writers, for a move between them (`&mut self`: only one pair at a time).
    fn both(&mut self) -> [ListWriter<'_, A>; 2] {
        self.parts.map(ListWriter::over)
    }

    /// Moves a member of the first part to the back of the second; `false` if it is not in
    /// the first part of this list.
    pub fn move_to_second(&mut self, node: &A::Value) -> bool {
        let [mut first, mut second] = self.both();
        first.move_to(node, &mut second, End::Back)
    }

    /// Moves a member of the second part to the back of the first; `false` if it is not in
    /// the second part of this list.
    pub fn move_to_first(&mut self, node: &A::Value) -> bool {
        let [mut first, mut second] = self.both();
        second.move_to(node, &mut first, End::Back)
    }

    /// Takes a member off whichever part it is on; `None` if it is not on this list.
    pub fn remove(&mut self, node: &A::Value) -> Option<Unlinked<A::Pointer>> {
        let [mut first, mut second] = self.both();
        first.remove(node).or_else(|| second.remove(node))
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for SplitWriter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SplitWriter").finish_non_exhaustive()
    }
}

/// A lock-free walk of both parts of a [`SplitList`]: the first, then the second.
pub struct SplitIter<'g, A: Adapter<Link = Link>> {
    first: Iter<'g, A>,
    second_list: &'g RawList<A>,
    second_seq: usize,
    second: Option<Iter<'g, A>>,
}

impl<A: Adapter<Link = Link>> SplitIter<'_, A> {
    /// Whether no move touched either part since the walk began (see [`Iter::valid`]).
    pub fn valid(&self) -> bool {
        let second_valid = match &self.second {
            Some(it) => it.valid(),
            None => self.second_list.seq_valid(self.second_seq),
        };
        self.first.valid() && second_valid
    }
}

impl<'g, A: Adapter<Link = Link>> Iterator for SplitIter<'g, A> {
    type Item = &'g A::Value;

    fn next(&mut self) -> Option<&'g A::Value> {
        if self.second.is_none() {
            if let Some(v) = self.first.next() {
                return Some(v);
            }
            // The guard was checked in `iter_all`; the second part's head is read only now,
            // so members moved there while we walked the first part can still be seen.
            self.second = Some(Iter::starting_at(self.second_list, self.second_seq));
        }
        self.second.as_mut().and_then(Iterator::next)
    }
}

impl<A: Adapter<Link = Link>> fmt::Debug for SplitIter<'_, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SplitIter").field("in_second", &self.second.is_some()).finish()
    }
}
