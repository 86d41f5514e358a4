//! Releasing a list's reference to a node only after a grace period.
//!
//! Every list holds one owning reference to each of its nodes: an adapter's
//! [`Pointer`](crate::Adapter::Pointer), an `Arc` by default or any other
//! [`NodePtr`], kept as the raw pointer [`NodePtr::into_raw`] returns. Readers reach nodes
//! through the list without touching that reference, so it must outlive every reader that
//! could still be standing on the node: dropping it may free the node, or hand it back to a
//! pool for reuse, so it is dropped only through crossbeam-epoch deferral, never directly.
//! [`Unlinked`] is the handle a writer gets back from a removal; dropping it (or
//! [`Unlinked::retire`]) defers the release.

use std::fmt;
use std::marker::PhantomData;
use std::mem;
use std::ops::Deref;

use crate::NodePtr;
use crate::epoch::{self, Guard};

/// A node just taken off a list, still holding the list's reference (a `P`).
///
/// Readers that were walking the list may still be standing on it, so the reference is
/// released only after a grace period: dropping an `Unlinked` (or calling
/// [`retire`](Unlinked::retire)) defers the release; it never frees (or recycles) the node at
/// once. Use [`to_ptr`](Unlinked::to_ptr) to keep the node (e.g. to insert it on another list).
pub struct Unlinked<P: NodePtr> {
    /// The list's reference, as [`NodePtr::into_raw`] returned it (the provenance a later
    /// `from_raw`/`clone_raw` needs, which a pointer made from `Deref` might lack).
    raw: *const P::Target,
    _owns: PhantomData<P>,
}

// SAFETY: an `Unlinked<P>` owns one `P` (held as its raw form) and lends out only `&P::Target`,
// as a `P` does; moving it to another thread moves that reference, which `P: Send` allows.
unsafe impl<P: NodePtr> Send for Unlinked<P> {}
// SAFETY: through `&Unlinked` a thread gets `&P::Target` (`Deref`) and new references
// (`to_ptr`, which the `NodePtr` contract lets any thread call): what `&P` gives, so `P: Sync`
// suffices.
unsafe impl<P: NodePtr + Sync> Sync for Unlinked<P> {}

impl<P: NodePtr> Unlinked<P> {
    /// Takes over the list's reference from a pointer made by [`NodePtr::into_raw`].
    ///
    /// # Safety
    ///
    /// `ptr` came from `P::into_raw` (possibly through the adapter's `link_ptr`/`value_ptr`)
    /// and the caller owns the reference it stands for, which it hands over.
    pub(crate) unsafe fn from_raw(ptr: *const P::Target) -> Self {
        Self { raw: ptr, _owns: PhantomData }
    }

    /// A new owning reference to the node, made with [`NodePtr::clone_raw`] (the list's own is
    /// still released after a grace period).
    pub fn to_ptr(&self) -> P {
        // SAFETY: `raw` came from `P::into_raw` and stands for the reference we own, alive
        // until we are dropped: the `NodePtr` contract of `clone_raw`.
        unsafe { P::clone_raw(self.raw) }
    }

    /// Defers the release of the list's reference until every thread pinned now has unpinned.
    ///
    /// Cheaper than dropping when the writer already holds a guard. A guard of another
    /// collector (or none) is not trusted: the release then pins the default collector.
    pub fn retire(self, guard: &Guard) {
        defer_release(self.into_ptr(), guard);
    }

    /// The list's reference, taken out without deferring anything (the caller's job).
    fn into_ptr(self) -> P {
        let raw = self.raw;
        mem::forget(self);
        // SAFETY: `raw` came from `P::into_raw` and we owned its reference; `forget` keeps our
        // `Drop` from taking it back a second time.
        unsafe { P::from_raw(raw) }
    }
}

impl<P: NodePtr> Deref for Unlinked<P> {
    type Target = P::Target;

    fn deref(&self) -> &P::Target {
        // SAFETY: by the `NodePtr` contract, the pointer `into_raw` returned is valid for shared
        // reads while its reference lives, and we hold it for as long as `&self`.
        unsafe { &*self.raw }
    }
}

impl<P: NodePtr> Drop for Unlinked<P> {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `P::into_raw`; we own its reference and give it up here, once
        // (`into_ptr` forgets `self` instead of dropping it).
        let node = unsafe { P::from_raw(self.raw) };
        defer_release(node, &epoch::pin());
    }
}

impl<P: NodePtr> fmt::Debug for Unlinked<P>
where
    P::Target: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Unlinked").field(&**self).finish()
    }
}

/// An insertion that was refused, handing the node back unchanged.
///
/// Returned when the node is on a list already (through the same link), or when the anchor or
/// the node to replace is not on this list. Nothing was changed.
///
/// `P` is the adapter's [`Pointer`](crate::Adapter::Pointer): the very reference the caller
/// passed in comes back.
pub struct Refused<P>(pub P);

impl<P> Refused<P> {
    /// The node that was not inserted.
    pub fn into_inner(self) -> P {
        self.0
    }
}

impl<P> fmt::Debug for Refused<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Refused(..)")
    }
}

impl<P> fmt::Display for Refused<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("node is on a list already, or the anchor is not on this list")
    }
}

impl<P> std::error::Error for Refused<P> {}

/// Whether `guard` pins the default collector, the one every reader of these lists must use.
#[inline]
pub(crate) fn is_default_guard(guard: &Guard) -> bool {
    guard.collector().is_some_and(|c| c == default_collector())
}

/// crossbeam-epoch's default collector, kept in a `OnceLock` of this crate: its fast path (a
/// load and a compare) is inlined into every reader, where crossbeam's own accessor is a call
/// into another crate on each list search.
#[cfg(not(loom))]
#[inline]
fn default_collector() -> &'static epoch::Collector {
    static DEFAULT: std::sync::OnceLock<&'static epoch::Collector> = std::sync::OnceLock::new();
    DEFAULT.get_or_init(epoch::default_collector)
}

/// Under loom the default collector is made anew for each model execution: asked every time.
#[cfg(loom)]
fn default_collector() -> &'static epoch::Collector {
    epoch::default_collector()
}

/// Panics unless `guard` pins the default collector: a reader protected by another collector
/// (or by `unprotected()`) would not hold back the deferred releases.
#[inline]
pub(crate) fn check_guard(guard: &Guard) {
    assert!(
        is_default_guard(guard),
        "udcache-rculist: readers must hold a guard of crossbeam-epoch's default collector"
    );
}

/// Drops the list's reference `node` once every thread pinned now has unpinned.
pub(crate) fn defer_release<P: NodePtr>(node: P, guard: &Guard) {
    if is_default_guard(guard) {
        guard.defer(move || drop(node));
    } else {
        epoch::pin().defer(move || drop(node));
    }
}

/// Drops the list's reference behind `ptr` (from [`NodePtr::into_raw`]) after a grace period.
///
/// # Safety
///
/// As [`Unlinked::from_raw`]; the node is on no list any more (or the list is being dropped).
pub(crate) unsafe fn release_raw<P: NodePtr>(ptr: *const P::Target) {
    // SAFETY: guaranteed by the caller.
    drop(unsafe { Unlinked::<P>::from_raw(ptr) });
}

/// A new owning reference to a node a reader reached through a list.
///
/// # Safety
///
/// `ptr` came from [`NodePtr::into_raw`] (through the adapter's `link_ptr`/`value_ptr`) for a
/// node some list holds (or held, with its release deferred past `_guard`), and `_guard` pins
/// the default collector.
pub(crate) unsafe fn owned_of<P: NodePtr>(ptr: *const P::Target, _guard: &Guard) -> P {
    // SAFETY: the list's reference stays alive until the guard unpins (its release is
    // deferred past it), which is what `clone_raw` needs to add ours.
    unsafe { P::clone_raw(ptr) }
}
