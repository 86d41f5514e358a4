//! # udcache-ffi — the C ABI of udcache
//!
//! **Status: skeleton.** Builds `libudcache.so` and `libudcache.a`. The full API (cache
//! handles, lookup, walk, add, unlink, rename, forget, readdir, stats) lands with its own issue,
//! together with the cbindgen-generated `ffi/include/udcache.h`. For now the library exports the
//! version query, so C programs can already link it.
//!
//! Every exported function uses the `udc_` prefix and never lets a Rust panic unwind into C.

use std::ffi::c_char;

/// The library version as a NUL-terminated string, e.g. `"0.1.0"`.
///
/// The pointer refers to static storage: never free it.
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
