//! Releasing a list's reference to a node only after a grace period.
//!
//! Every list holds one strong count of each node's `Arc`. Readers reach nodes through the
//! list without touching that count, so the list's reference must outlive every reader that
//! could still be standing on the node: it is dropped only through crossbeam-epoch deferral,
//! never directly. [`Unlinked`] is the handle a writer gets back from a removal; dropping it
//! (or [`Unlinked::retire`]) defers the release.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::epoch::{self, Guard};

/// A node just taken off a list, still holding the list's reference.
///
/// Readers that were walking the list may still be standing on it, so the reference is
/// released only after a grace period: dropping an `Unlinked` (or calling
/// [`retire`](Unlinked::retire)) defers the release; it never frees the node at once. Use
/// [`to_arc`](Unlinked::to_arc) to keep the node (e.g. to insert it on another list).
pub struct Unlinked<T: Send + Sync + 'static> {
    node: Option<Arc<T>>,
}

impl<T: Send + Sync + 'static> Unlinked<T> {
    /// Takes over the list's reference from a pointer made by `Arc::into_raw`.
    ///
    /// # Safety
    ///
    /// `ptr` came from `Arc::into_raw` and the caller owns that strong count.
    pub(crate) unsafe fn from_raw(ptr: *const T) -> Self {
        // SAFETY: guaranteed by the caller.
        Self { node: Some(unsafe { Arc::from_raw(ptr) }) }
    }

    /// A new strong reference to the node (the list's own is still released after a grace
    /// period).
    pub fn to_arc(&self) -> Arc<T> {
        Arc::clone(self.node.as_ref().expect("Unlinked holds its node until dropped"))
    }

    /// Defers the release of the list's reference until every thread pinned now has unpinned.
    ///
    /// Cheaper than dropping when the writer already holds a guard. A guard of another
    /// collector (or none) is not trusted: the release then pins the default collector.
    pub fn retire(mut self, guard: &Guard) {
        if let Some(node) = self.node.take() {
            defer_release(node, guard);
        }
    }
}

impl<T: Send + Sync + 'static> Deref for Unlinked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.node.as_ref().expect("Unlinked holds its node until dropped")
    }
}

impl<T: Send + Sync + 'static> Drop for Unlinked<T> {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            defer_release(node, &epoch::pin());
        }
    }
}

impl<T: Send + Sync + fmt::Debug + 'static> fmt::Debug for Unlinked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Unlinked").field(&**self).finish()
    }
}

/// An insertion that was refused, handing the node back unchanged.
///
/// Returned when the node is on a list already (through the same link), or when the anchor or
/// the node to replace is not on this list. Nothing was changed.
pub struct Refused<T>(pub Arc<T>);

impl<T> Refused<T> {
    /// The node that was not inserted.
    pub fn into_inner(self) -> Arc<T> {
        self.0
    }
}

impl<T> fmt::Debug for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Refused(..)")
    }
}

impl<T> fmt::Display for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("node is on a list already, or the anchor is not on this list")
    }
}

impl<T> std::error::Error for Refused<T> {}

/// Whether `guard` pins the default collector, the one every reader of these lists must use.
#[inline]
pub(crate) fn is_default_guard(guard: &Guard) -> bool {
    guard.collector().is_some_and(|c| c == epoch::default_collector())
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
pub(crate) fn defer_release<T: Send + Sync + 'static>(node: Arc<T>, guard: &Guard) {
    if is_default_guard(guard) {
        guard.defer(move || drop(node));
    } else {
        epoch::pin().defer(move || drop(node));
    }
}

/// Drops the list's reference behind `ptr` (from `Arc::into_raw`) after a grace period.
///
/// # Safety
///
/// As [`Unlinked::from_raw`]; the node is on no list any more (or the list is being dropped).
pub(crate) unsafe fn release_raw<T: Send + Sync + 'static>(ptr: *const T) {
    // SAFETY: guaranteed by the caller.
    drop(unsafe { Unlinked::from_raw(ptr) });
}

/// A new strong reference to a node a reader reached through a list.
///
/// # Safety
///
/// `ptr` came from `Arc::into_raw` for a node some list holds (or held, with its release
/// deferred past `_guard`), and `_guard` pins the default collector.
pub(crate) unsafe fn arc_of<T>(ptr: *const T, _guard: &Guard) -> Arc<T> {
    // SAFETY: the list's strong count is alive until the guard unpins (its release is deferred),
    // so the count is at least one while we add ours.
    unsafe {
        Arc::increment_strong_count(ptr);
        Arc::from_raw(ptr)
    }
}
