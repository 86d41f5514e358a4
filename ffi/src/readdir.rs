//! Directory listings: `udc_readdir` through the cookie-indexed readdir cache, and the fill
//! object the readdir callback appends entries to.

use std::ffi::{c_char, c_int};

use crate::errors::ffi_call;
use crate::handle::udc_cache;

/// One directory entry, as `udc_readdir` returns it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct udc_dirent {
    /// The inode number.
    pub ino: u64,
    /// The position after this entry: pass it to `udc_readdir` to continue with the next one
    /// (FUSE's `off`). Never 0.
    pub cookie: u64,
    /// The file type (`enum udc_type`).
    pub r#type: u32,
    /// Length of `name`, without the NUL.
    pub namelen: u32,
    /// The name, NUL-terminated.
    pub name: [c_char; 256],
}

/// What the readdir callback fills (opaque; valid only during the callback).
pub struct udc_fill {
    _private: (),
}

/// Reads up to `max` entries of directory `dir` that follow `cookie` (0 = from the start) into
/// `buf` and sets `*count`.
///
/// # Safety
///
/// `cache` must be a live handle; `buf` must point to `max` writable `udc_dirent`s; `count`
/// must be NULL or point to a writable `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_readdir(
    cache: *mut udc_cache,
    dir: u64,
    cookie: u64,
    buf: *mut udc_dirent,
    max: usize,
    count: *mut usize,
) -> c_int {
    let _ = (cache, dir, cookie, buf, max, count);
    ffi_call(|| Err(libc::ENOSYS))
}

/// The directory changed; 0 = verifier unknown.
///
/// # Safety
///
/// `cache` must be a live handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_dir_changed(cache: *mut udc_cache, dir: u64, verifier: u64) -> c_int {
    let _ = (cache, dir, verifier);
    ffi_call(|| Err(libc::ENOSYS))
}

/// Appends one entry to a fill.
///
/// # Safety
///
/// `fill` must be the fill passed to the running callback; `name` must point to `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_fill_add(
    fill: *mut udc_fill,
    name: *const c_char,
    len: usize,
    ino: u64,
    r#type: u32,
    cookie: u64,
) -> c_int {
    let _ = (fill, name, len, ino, r#type, cookie);
    ffi_call(|| Err(libc::ENOSYS))
}

/// Ends a fill.
///
/// # Safety
///
/// `fill` must be the fill passed to the running callback.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_fill_done(fill: *mut udc_fill, eof: c_int, verifier: u64) -> c_int {
    let _ = (fill, eof, verifier);
    ffi_call(|| Err(libc::ENOSYS))
}
