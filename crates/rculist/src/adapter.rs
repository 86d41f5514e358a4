//! Adapters: how a list finds the link inside a node and the node around a link.
//!
//! A node type embeds one [`Link`](crate::Link) or [`HLink`](crate::HLink) per list it can sit
//! on, and declares one adapter per link with the [`adapter!`](crate::adapter) macro:
//!
//! ```
//! use udcache_rculist::{HLink, Link, adapter};
//!
//! struct Dentry {
//!     name: String,
//!     hash: HLink,  // on a hash chain
//!     child: Link,  // on its parent's child list
//!     lru: Link,    // on the LRU
//! }
//! adapter!(HashAdapter = Dentry { hash: HLink });
//! adapter!(ChildAdapter = Dentry { child: Link });
//! adapter!(LruAdapter = Dentry { lru: Link });
//! ```

/// Maps a node type to one of its embedded links and back.
///
/// Lists store pointers to links; readers convert them back to nodes with
/// [`value_ptr`](Adapter::value_ptr).
///
/// # Safety
///
/// Implement it only through [`adapter!`](crate::adapter), or uphold what the macro guarantees:
/// `link_ptr(v)` points at a field of `*v` (same allocation, fixed offset), and
/// `value_ptr(link_ptr(v)) == v` for every `v`, preserving the provenance of the link pointer.
pub unsafe trait Adapter {
    /// The node type. Nodes live in an `Arc`; the list's reference is released after a grace
    /// period on another thread, hence `Send + Sync + 'static`.
    type Value: Send + Sync + 'static;
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
/// [`Adapter`] with `Value = Node`, `Link = Link`. The field's type must be the named link type
/// (a mismatch does not compile). See [the module docs](crate::adapter) for an example.
#[macro_export]
macro_rules! adapter {
    ($(#[$meta:meta])* $vis:vis $name:ident = $value:ty { $field:ident : $link:ty }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default)]
        $vis struct $name;

        // SAFETY: `link_ptr` takes the address of the named field of the pointed-to node and
        // `value_ptr` subtracts that field's `offset_of!`, so each inverts the other; the field's
        // type is checked to be `$link` by the return type of `link_ptr`.
        unsafe impl $crate::Adapter for $name {
            type Value = $value;
            type Link = $link;

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
