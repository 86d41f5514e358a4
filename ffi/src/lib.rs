//! # udcache-ffi — the C ABI of udcache
//!
//! Builds `libudcache.so` and `libudcache.a` for C userspace filesystems (FUSE low-level
//! servers above all): inode numbers, `(parent, name)` pairs, a lookup count per inode, and
//! callbacks into the filesystem for what the cache does not hold. The header
//! `include/udcache.h` is generated from this crate by cbindgen (`cbindgen.toml`), its
//! declarations grouped by topic by `tests/header.rs`, and is the documentation C programmers
//! read; `tests/header.rs` fails when it is stale.
//!
//! ## Conventions
//!
//! - Everything exported is `udc_`/`UDC_`-prefixed; the cache is an opaque handle.
//! - Errors are negative errno values; a refused call changes nothing. Arguments are checked
//!   before anything is read or written ([`args`]), the handle (an opaque token naming a slot
//!   of a global table, never dereferenced) by its slot and generation ([`handle`]).
//! - Every entry point runs inside [`errors::ffi_call`]: no panic unwinds into C.
//! - Structs that may grow open with a `size` field the caller sets to `sizeof`.
//! - Every function is thread-safe on one handle; which thread runs which callback, and what a
//!   callback may call, is in [`callbacks`].
//!
//! Module map: [`handle`] (config, new, destroy), [`args`] (names and pointers from C),
//! [`types`] (file types, entries), [`lookup`] (lookup, resolve, walk, children), [`ops`]
//! (add, unlink, rename, forget, invalidate, shrink), [`attr`], [`readdir`], [`reval`]
//! (timeouts, revalidation, `udc_walk_as`, the access cache), [`stats`], [`callbacks`],
//! [`errors`].

// The exported types carry their C names (`udc_cache`, `udc_entry`, ...): the header is the API.
#![allow(non_camel_case_types)]

use std::ffi::c_char;

mod args;
pub mod attr;
pub mod callbacks;
mod errors;
pub mod handle;
pub mod lookup;
pub mod ops;
pub mod readdir;
pub mod reval;
pub mod stats;
mod sync;
mod table;
pub mod types;

/// The library version as a NUL-terminated string, e.g. `"0.1.0"`. The pointer refers to
/// static storage: never free it.
#[unsafe(no_mangle)]
pub extern "C" fn udc_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    #[test]
    fn version_is_the_package_version() {
        // SAFETY: udc_version returns a pointer to a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(super::udc_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
