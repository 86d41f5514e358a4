//! The links that put an [`Entry`] on its hash chain and on an LRU list, and the counted
//! reference ([`EntryRef`]) each list holds.

use udcache_rculist::{Adapter, BareLink, HLink};

use crate::entry::Entry;
use crate::pooled::EntryRef;

/// Puts an [`Entry`] on a hash chain through its `chain` link.
pub(crate) struct ChainAdapter<V>(std::marker::PhantomData<V>);
/// Puts an [`Entry`] on an LRU list through its `lru` link.
pub(crate) struct LruAdapter<V>(std::marker::PhantomData<V>);

// SAFETY: `link_ptr` takes the address of the `chain` field of the pointed-to entry and
// `value_ptr` steps back by that field's offset: each inverts the other, within one allocation.
unsafe impl<V: Send + Sync + 'static> Adapter for ChainAdapter<V> {
    type Value = Entry<V>;
    type Link = HLink;
    type Pointer = EntryRef<V>;

    unsafe fn link_ptr(value: *const Entry<V>) -> *const HLink {
        // SAFETY: the caller passes a live entry; taking a field address creates no reference.
        unsafe { std::ptr::addr_of!((*value).chain) }
    }

    unsafe fn value_ptr(link: *const HLink) -> *const Entry<V> {
        // SAFETY: `link` came from `link_ptr`: it lies `offset_of!` bytes into its entry.
        unsafe { link.byte_sub(std::mem::offset_of!(Entry<V>, chain)).cast() }
    }
}

// SAFETY: as for `ChainAdapter`, with the `lru` field.
unsafe impl<V: Send + Sync + 'static> Adapter for LruAdapter<V> {
    type Value = Entry<V>;
    type Link = BareLink;
    type Pointer = EntryRef<V>;

    unsafe fn link_ptr(value: *const Entry<V>) -> *const BareLink {
        // SAFETY: the caller passes a live entry; taking a field address creates no reference.
        unsafe { std::ptr::addr_of!((*value).lru) }
    }

    unsafe fn value_ptr(link: *const BareLink) -> *const Entry<V> {
        // SAFETY: `link` came from `link_ptr`: it lies `offset_of!` bytes into its entry.
        unsafe { link.byte_sub(std::mem::offset_of!(Entry<V>, lru)).cast() }
    }
}
