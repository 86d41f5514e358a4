//! Owning pointers to list nodes: what a list holds for each node it links.
//!
//! A list never owns a node outright. Linking a node hands the list one *owning reference* to
//! it (an `Arc`, by default); the list keeps that reference as a raw pointer inside the links
//! ([`NodePtr::into_raw`]) and turns it back into a value only when the node leaves the list
//! ([`NodePtr::from_raw`]). Readers walk the list without touching any count; a reader that
//! wants to keep a node beyond its guard asks for a reference of its own
//! ([`NodePtr::clone_raw`], behind [`HListBl::find_owned`](crate::HListBl::find_owned) and
//! [`Unlinked::to_ptr`](crate::Unlinked::to_ptr)).
//!
//! Which pointer a list uses is the adapter's choice ([`Adapter::Pointer`](crate::Adapter)):
//! [`adapter!`](macro@crate::adapter) picks `Arc<Node>` unless told otherwise with
//! `adapter!(Name = Node { field: Link }, pointer = MyPtr<Node>)`. Any type that upholds the
//! [`NodePtr`] contract will do, for example a counted handle to an object that lives in a pool
//! and goes back to the pool when the last handle is dropped (a `udcache-gp` pool's objects,
//! for example).
//!
//! # Why the grace period is the list's business, not the pointer's
//!
//! Dropping the last reference may free the node or hand its memory to the next user of a
//! pool. Lockless readers may still stand on a node the list just gave up, so every list they
//! walk drops its reference only after a crossbeam-epoch grace period
//! ([`Unlinked`](crate::Unlinked)). ([`BareList`](crate::BareList), which no lockless reader
//! walks, hands its reference back at once.)
//! The pointer type need not know about readers at all; it only has to count references
//! correctly and keep the node where it is while any reference exists.
//!
//! # A pointer of one's own
//!
//! A counted box: the node carries its own count and is freed when the count reaches zero.
//!
//! ```
//! use std::ops::Deref;
//! use std::ptr::NonNull;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use udcache_rculist::{Link, List, NodePtr, adapter, epoch};
//!
//! struct Item { refs: AtomicUsize, v: u32, link: Link }
//!
//! /// One counted reference to a boxed `Item`.
//! struct ItemRef(NonNull<Item>);
//!
//! // SAFETY: `Item` is `Send + Sync` and its count is atomic.
//! unsafe impl Send for ItemRef {}
//!
//! impl ItemRef {
//!     fn new(v: u32) -> Self {
//!         let item = Box::new(Item { refs: AtomicUsize::new(1), v, link: Link::new() });
//!         ItemRef(NonNull::from(Box::leak(item)))
//!     }
//! }
//!
//! impl Deref for ItemRef {
//!     type Target = Item;
//!     fn deref(&self) -> &Item {
//!         // SAFETY: our reference keeps the box alive.
//!         unsafe { self.0.as_ref() }
//!     }
//! }
//!
//! impl Drop for ItemRef {
//!     fn drop(&mut self) {
//!         if self.refs.fetch_sub(1, Ordering::Release) == 1 {
//!             std::sync::atomic::fence(Ordering::Acquire);
//!             // SAFETY: that was the last reference; the box came from `Box::leak`.
//!             drop(unsafe { Box::from_raw(self.0.as_ptr()) });
//!         }
//!     }
//! }
//!
//! // SAFETY: `into_raw`/`from_raw` pass one reference through the pointer unchanged, the box
//! // never moves, `Deref` reads at that address, `clone_raw` adds one to a count another live
//! // reference holds above zero, and the count is atomic.
//! unsafe impl NodePtr for ItemRef {
//!     fn into_raw(this: Self) -> *const Item {
//!         std::mem::ManuallyDrop::new(this).0.as_ptr()
//!     }
//!     unsafe fn from_raw(ptr: *const Item) -> Self {
//!         // SAFETY: `ptr` came from `into_raw`, so it is not null.
//!         ItemRef(unsafe { NonNull::new_unchecked(ptr.cast_mut()) })
//!     }
//!     unsafe fn clone_raw(ptr: *const Item) -> Self {
//!         // SAFETY: another live reference keeps the item alive.
//!         unsafe { &*ptr }.refs.fetch_add(1, Ordering::Relaxed);
//!         // SAFETY: as for `from_raw`; the reference made is the one just counted.
//!         unsafe { Self::from_raw(ptr) }
//!     }
//! }
//!
//! adapter!(ItemAdapter = Item { link: Link }, pointer = ItemRef);
//!
//! let list = List::<ItemAdapter>::new();
//! list.lock().push_back(ItemRef::new(7)).unwrap();
//! let guard = epoch::pin();
//! assert_eq!(list.iter(&guard).map(|i| i.v).sum::<u32>(), 7);
//! let gone = list.lock().pop_front().unwrap();
//! let kept: ItemRef = gone.to_ptr(); // a reference of our own
//! drop(gone); // the list's reference goes after a grace period
//! assert_eq!(kept.v, 7);
//! ```

use std::ops::Deref;
use std::sync::Arc;

/// An owning pointer to a list node: what a list holds for each node it links.
///
/// Each value of the type stands for one *reference* to a node: a share in keeping the node
/// alive. A list turns the reference it is given into a raw pointer while the node is linked
/// and back into a value when the node leaves, and lets readers that want a node of their own
/// make new references from the raw pointer. [`Arc`] is the usual choice (and what
/// [`adapter!`](macro@crate::adapter) picks unless told otherwise); see [the module docs](self) for
/// others and an example.
///
/// # Safety
///
/// An implementation promises, for every node `n` and every reference to it:
///
/// - **Round trip.** `into_raw(p)` gives up the value `p` without dropping the reference it
///   stands for and returns a pointer to the node; `from_raw` of that pointer takes the same
///   reference back. A pointer from `into_raw` stands for exactly one reference: each is passed
///   to `from_raw` at most once, and `from_raw` of any other pointer is never required to work.
///   The pointer keeps the provenance needed to give it back to `from_raw` and `clone_raw`
///   after a round trip through the `A::link_ptr`/`A::value_ptr` pair of an
///   [`Adapter`](crate::Adapter).
/// - **Pinned.** The node does not move while any reference to it exists; the pointer from
///   `into_raw` is valid for shared reads of the node (and its atomics) for all that time.
/// - **Deref.** `Deref` of a reference gives the node at the address `into_raw` returns for it.
/// - **Clone.** `clone_raw(ptr)`, where `ptr` came from `into_raw` for some reference that is
///   still alive (owned by someone else: a list, another thread), makes one more reference to
///   the same node, as if by cloning that one.
/// - **Threads.** Counting is thread-safe: `clone_raw` and the dropping of references may run on
///   any threads at once (a list releases its references on whichever thread runs a deferred
///   function, and readers on any thread call `clone_raw`).
/// - **Last reference.** Dropping the last reference may free the node or recycle its memory
///   (hand it to a pool). Nothing else does: the node stays allocated and unchanged while a
///   reference exists. Lists rely on this to drop their own reference only after a grace period,
///   once no lockless reader can still stand on the node.
pub unsafe trait NodePtr: Deref<Target: Sized> + Send + 'static {
    /// Gives up `this` without dropping its reference; returns the node's address.
    fn into_raw(this: Self) -> *const Self::Target;

    /// Takes back the reference that [`into_raw`](NodePtr::into_raw) gave up.
    ///
    /// # Safety
    ///
    /// `ptr` was returned by `into_raw` (possibly carried through an adapter's
    /// `link_ptr`/`value_ptr`), and the caller owns the reference it stands for, which it gives
    /// up: no other `from_raw` of it follows.
    unsafe fn from_raw(ptr: *const Self::Target) -> Self;

    /// Makes one more reference to the node at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` was returned by `into_raw` (possibly carried through an adapter's
    /// `link_ptr`/`value_ptr`) for a reference that stays alive throughout the call.
    unsafe fn clone_raw(ptr: *const Self::Target) -> Self;
}

// SAFETY: `Arc::into_raw`/`Arc::from_raw` pass one strong count through a pointer to the
// value, whose allocation does not move while a count exists and which `Deref` reads; the
// strong count is atomic; `clone_raw` adds a count to one that another live reference keeps
// above zero. `T: Send + Sync` makes `Arc<T>` `Send`.
unsafe impl<T: Send + Sync + 'static> NodePtr for Arc<T> {
    #[inline]
    fn into_raw(this: Self) -> *const T {
        Arc::into_raw(this)
    }

    #[inline]
    unsafe fn from_raw(ptr: *const T) -> Self {
        // SAFETY: `ptr` came from `Arc::into_raw` and we own its count (the caller's contract).
        unsafe { Arc::from_raw(ptr) }
    }

    #[inline]
    unsafe fn clone_raw(ptr: *const T) -> Self {
        // SAFETY: `ptr` came from `Arc::into_raw` and another live reference keeps the count at
        // least one while we add ours; the new count is then taken over by `from_raw`.
        unsafe {
            Arc::increment_strong_count(ptr);
            Arc::from_raw(ptr)
        }
    }
}
