//! Adapters: how a list finds the link inside a node and the node around a link.
//!
//! A node type embeds one [`Link`](crate::Link) or [`HLink`](crate::HLink) per list it can sit
//! on, and declares one adapter per link with the [`adapter!`](macro@crate::adapter) macro:
//!
//! ```
//! use udcache_rculist::{HLink, Link, adapter};
//!
//! struct Entry {
//!     key: String,
//!     hash: HLink,  // on a hash chain
//!     group: Link,  // on its group's list
//!     lru: Link,    // on the LRU
//! }
//! adapter!(HashAdapter = Entry { hash: HLink });
//! adapter!(GroupAdapter = Entry { group: Link });
//! adapter!(LruAdapter = Entry { lru: Link });
//! ```
//!
//! An adapter also names the owning pointer its list holds for each node
//! ([`Adapter::Pointer`]). The form above picks `Arc<Entry>`; a node that lives elsewhere, say in
//! a pool, names its own [`NodePtr`] type after the link:
//!
//! ```
//! # use udcache_rculist::{HLink, adapter};
//! # struct Entry { hash: HLink }
//! # type PoolRef<T> = std::sync::Arc<T>; // stands in for a pool's handle type
//! adapter!(HashAdapter = Entry { hash: HLink }, pointer = PoolRef<Entry>);
//! ```
//!
//! Every list a node sits on must then hold it through the same kind of pointer (each list
//! holds one reference of its own); [the `pointer` module](crate::pointer) has a complete
//! example.

use crate::NodePtr;

/// Maps a node type to one of its embedded links and back.
///
/// Lists store pointers to links; readers convert them back to nodes with
/// [`value_ptr`](Adapter::value_ptr). What a list owns for each node is one
/// [`Pointer`](Adapter::Pointer), kept as the raw pointer [`NodePtr::into_raw`] returns.
///
/// # Safety
///
/// Implement it only through [`adapter!`](macro@crate::adapter), or uphold what the macro
/// guarantees: `link_ptr(v)` points at a field of `*v` (same allocation, fixed offset), and
/// `value_ptr(link_ptr(v)) == v` for every `v`, preserving the provenance of the link pointer.
/// (What the [`Pointer`](Adapter::Pointer) must uphold is the contract of its own unsafe trait,
/// [`NodePtr`].)
pub unsafe trait Adapter {
    /// The node type. Readers on any thread share it and the list's reference is released after
    /// a grace period on another thread, hence `Send + Sync + 'static`.
    type Value: Send + Sync + 'static;
    /// The owning pointer a list holds for each of its nodes: `Arc<Self::Value>` for adapters
    /// declared by the plain form of [`adapter!`](macro@crate::adapter), or any [`NodePtr`] (a
    /// counted handle to a pooled object, for example). Insertions take one, removals hand it back
    /// (through [`Unlinked`](crate::Unlinked) where readers may still stand on the node).
    type Pointer: NodePtr<Target = Self::Value>;
    /// The link type embedded in the node: [`Link`](crate::Link) or [`HLink`](crate::HLink).
    type Link;

    /// The link embedded in `*value`.
    ///
    /// # Safety
    ///
    /// `value` points to a live `Self::Value`.
    unsafe fn link_ptr(value: *const Self::Value) -> *const Self::Link;

    /// The node around `link` (the inverse of [`link_ptr`](Adapter::link_ptr)).
    ///
    /// # Safety
    ///
    /// `link` was returned by `link_ptr` (possibly stored and loaded back since).
    unsafe fn value_ptr(link: *const Self::Link) -> *const Self::Value;
}

/// Declares an adapter type mapping a node type to one of its link fields.
///
/// `adapter!(pub Name = Node { field: Link });` declares `pub struct Name;` implementing
/// [`Adapter`] with `Value = Node`, `Link = Link` and `Pointer = Arc<Node>`. The field's type
/// must be the named link type (a mismatch does not compile). See [the crate docs](crate)
/// for an example.
///
/// `adapter!(pub Name = Node { field: Link }, pointer = Ptr);` does the same with
/// `Pointer = Ptr`, which must implement [`NodePtr`] with `Target = Node`
/// (see [`NodePtr`] for an example).
#[macro_export]
macro_rules! adapter {
    ($(#[$meta:meta])* $vis:vis $name:ident = $value:ty { $field:ident : $link:ty }) => {
        $crate::adapter!(
            $(#[$meta])* $vis $name = $value { $field: $link }, pointer = ::std::sync::Arc<$value>
        );
    };
    (
        $(#[$meta:meta])* $vis:vis $name:ident = $value:ty { $field:ident : $link:ty },
        pointer = $pointer:ty $(,)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default)]
        $vis struct $name;

        // SAFETY: `link_ptr` takes the address of the named field of the pointed-to node and
        // `value_ptr` subtracts that field's `offset_of!`, so each inverts the other; the field's
        // type is checked to be `$link` by the return type of `link_ptr`. (`$pointer` answers for
        // itself: it must implement the unsafe trait `NodePtr` with `Target = $value`.)
        unsafe impl $crate::Adapter for $name {
            type Value = $value;
            type Link = $link;
            type Pointer = $pointer;

            #[inline(always)]
            unsafe fn link_ptr(value: *const $value) -> *const $link {
                // SAFETY: the caller passes a pointer to a live node; taking a field's address
                // creates no reference and stays inside the node's allocation.
                unsafe { ::core::ptr::addr_of!((*value).$field) }
            }

            #[inline(always)]
            unsafe fn value_ptr(link: *const $link) -> *const $value {
                // SAFETY: `link` came from `link_ptr`, so it lies `offset_of!` bytes into the
                // node; stepping back stays within the same allocation.
                unsafe { link.byte_sub(::core::mem::offset_of!($value, $field)).cast::<$value>() }
            }
        }
    };
}
