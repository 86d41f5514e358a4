//! Directory listings: `udc_readdir` through the cookie-indexed readdir cache, and the fill
//! object the readdir callback appends entries to.
//!
//! A listing reads through the readdir callback only for ranges the cache does not hold, and
//! can be resumed at any cookie it handed out, while the directory changes: an entry present
//! for the whole listing is returned exactly once (the `udcache-readdir` crate's guarantee).
//! The cache keeps the `enum udc_type` value of each entry as its type byte.

use std::ffi::{c_char, c_int};

use dcache::readdir::{DType, Entry, Fill, FillError, Verifier};

use crate::args;
use crate::callbacks::callback_errno;
use crate::errors::{CResult, fail, ffi_call};
use crate::handle::{self, udc_cache};
use crate::types::{file_type, udc_type};

/// One directory entry, as `udc_readdir` returns it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct udc_dirent {
    /// The inode number.
    pub ino: u64,
    /// The position after this entry: pass it to `udc_readdir` to continue with the next one
    /// (FUSE's `off`). Never 0.
    pub cookie: u64,
    /// The file type (`enum udc_type`; `UDC_TYPE_UNKNOWN` if the filesystem did not say).
    pub r#type: u32,
    /// Length of `name`, without the NUL.
    pub namelen: u32,
    /// The name, NUL-terminated.
    pub name: [c_char; 256],
}

impl udc_dirent {
    fn of(e: &Entry) -> Self {
        let mut name = [0 as c_char; 256];
        for (dst, &src) in name.iter_mut().zip(e.name.iter()) {
            *dst = src as c_char;
        }
        udc_dirent {
            ino: e.ino,
            cookie: e.cookie,
            r#type: u32::from(e.dtype.raw()),
            // At most 255: names are checked by udc_fill_add.
            namelen: e.name.len() as u32,
            name,
        }
    }
}

/// The magic word of a fill that its callback may still use.
const FILL_LIVE: u64 = u64::from_le_bytes(*b"udcfill\x01");

/// What the readdir callback fills (opaque; valid only until the callback returns).
pub struct udc_fill {
    /// [`FILL_LIVE`] until the callback returns.
    magic: u64,
    /// The most entries the callback was asked for.
    max: usize,
    entries: Vec<Entry>,
    /// `(eof, verifier)`, once `udc_fill_done` was called.
    done: Option<(bool, u64)>,
}

impl Drop for udc_fill {
    fn drop(&mut self) {
        // Makes a use of the fill after its callback returned likelier to be caught.
        self.magic = 0;
    }
}

/// The fill behind `ptr`, checked: NULL is `EINVAL`, a wrong magic word `EBADF`.
///
/// # Safety
///
/// `ptr` must be NULL or the fill passed to a readdir callback that has not returned, used
/// by no other thread.
unsafe fn fill_mut<'a>(ptr: *mut udc_fill) -> Result<&'a mut udc_fill, c_int> {
    if ptr.is_null() {
        return Err(libc::EINVAL);
    }
    if !ptr.is_aligned() {
        return Err(libc::EBADF);
    }
    // SAFETY: a live fill (the caller's contract). Only the magic word is read before it is
    // checked, through a raw field pointer, so a wrong pointer never becomes a reference.
    let magic = unsafe { std::ptr::addr_of!((*ptr).magic).read() };
    if magic != FILL_LIVE {
        return Err(libc::EBADF);
    }
    // SAFETY: the magic word says this is the running callback's fill, lent to it exclusively.
    Ok(unsafe { &mut *ptr })
}

/// Calls the filesystem's readdir callback for up to `max` entries of `dir` after `cookie`.
pub(crate) fn call_readdir(
    readdir: crate::callbacks::udc_readdir_fn,
    ctx: *mut std::ffi::c_void,
    (dir, cookie, max): (u64, u64, usize),
) -> Result<Fill, FillError> {
    let Some(readdir) = readdir else { return Err(FillError::Io(libc::ENOSYS)) };
    let mut fill = udc_fill { magic: FILL_LIVE, max, entries: Vec::new(), done: None };
    // SAFETY: `readdir` is the filesystem's function of the documented type; `fill` lives,
    // exclusively lent to the callback, until it returns.
    let r = unsafe { readdir(ctx, dir, cookie, max, &mut fill) };
    match (r, fill.done) {
        (0, Some((eof, verifier))) => Ok(Fill {
            entries: std::mem::take(&mut fill.entries),
            eof,
            verifier: Verifier::new(verifier),
        }),
        // Returned success without udc_fill_done: a broken contract.
        (0, None) => Err(FillError::Io(libc::EIO)),
        // Cookie 0 is always valid: there `-ESTALE` says the directory itself is gone, and is
        // returned as it is (as `-EINVAL` is, both through `Io`).
        (r, _) if cookie != 0 && (r == -libc::EINVAL || r == -libc::ESTALE) => {
            Err(FillError::UnknownCookie)
        }
        (r, _) => Err(FillError::Io(callback_errno(r))),
    }
}

/// Reads up to `max` entries of directory `dir` that follow `cookie` (0 = from the start) into
/// `buf` and sets `*count`: from the directory's cached pages, calling the readdir callback
/// for ranges not cached. A reader can stop and resume at any cookie it was given; while the
/// directory changes, every entry present for the whole listing is returned exactly once.
/// Local changes (`udc_add` of a new name, `udc_unlink`, `udc_rename`, `udc_invalidate`) mark
/// the listing changed themselves; report other changes with `udc_dir_changed`.
///
/// Returns 1 at the end of the directory, 0 if more may follow, or `-EINVAL` (NULL pointer;
/// `max` 0, or `max * sizeof(struct udc_dirent)` over `PTRDIFF_MAX`; a cookie never issued
/// that the callback cannot resume at), `-ESTALE` (`dir` not cached, or the callback's
/// `-ESTALE` at cookie 0: the directory is gone), `-ENOTDIR`, `-ENOSYS`
/// (no readdir callback), `-ELOOP` (the callback repeated a cookie or returned 0, gave an
/// empty batch that is not the end, or its batches lead round in a cycle), `-EIO` (the
/// callback broke its contract), the callback's own `-errno`, `-EBADF`.
/// On error `*count` is unchanged.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `buf`
/// must point to `max` writable `udc_dirent`s; `count` must be NULL or point to a writable
/// `size_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_readdir(
    cache: *mut udc_cache,
    dir: u64,
    cookie: u64,
    buf: *mut udc_dirent,
    max: usize,
    count: *mut usize,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        // SAFETY: `max` writable udc_dirents at `buf` (the caller's contract), checked.
        let buf = unsafe { args::array_out(buf, max) }?;
        // SAFETY: NULL or a writable size_t (the caller's contract).
        let count = unsafe { args::output(count) }?;
        if max == 0 {
            return Err(libc::EINVAL);
        }
        cache.check_dir(dir)?;
        if !cache.backend.has_readdir() {
            return Err(libc::ENOSYS);
        }
        let batch = cache.dcache.readdir(dir, cookie, max).map_err(fail)?;
        debug_assert!(batch.entries.len() <= max, "the readdir cache returned more than max");
        for (dst, e) in buf.iter_mut().zip(&batch.entries) {
            dst.write(udc_dirent::of(e));
        }
        count.write(batch.entries.len().min(max));
        Ok(c_int::from(batch.eof))
    })
}

/// Tells the cache that directory `dir` changed behind its back (`verifier`: its new change
/// attribute or mtime; 0 = unknown; the same verifier as last time changes nothing, unless
/// last time was 0): its cached listing pages become stale, and its negative entries are no
/// longer trusted (each is revalidated at its next use: a miss for `udc_lookup` and
/// `udc_walk`, the revalidate callback for `udc_resolve` and `udc_walk_as`). Positive names
/// are not touched (use `udc_invalidate` for a name that went away or now leads elsewhere,
/// after this call).
///
/// Returns 0, or `-ESTALE` (`dir` not cached), `-ENOTDIR`, `-EINVAL`, `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_dir_changed(cache: *mut udc_cache, dir: u64, verifier: u64) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        let verifier = (verifier != 0).then_some(verifier);
        cache.dcache.dir_changed(dir, verifier).map_err(fail)?;
        Ok(0)
    })
}

/// In a readdir callback: appends the entry `name` (`len` bytes) with inode `ino`, type `type`
/// (`enum udc_type`, `UDC_TYPE_UNKNOWN` allowed) and `cookie` (the position after it; not 0,
/// and unique in the directory).
///
/// Returns 0, or `-ENOSPC` (the fill holds `max` entries already: stop, and resume at the last
/// cookie next time), `-EINVAL` (NULL pointer; bad name; `ino` or `cookie` 0; unknown type;
/// `udc_fill_done` called already), `-ENAMETOOLONG`, `-EBADF` (not a live fill). A refused
/// entry is not added.
///
/// # Safety
///
/// `fill` must be the fill passed to the running callback, used by one thread; `name` must
/// point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_fill_add(
    fill: *mut udc_fill,
    name: *const c_char,
    len: usize,
    ino: u64,
    r#type: u32,
    cookie: u64,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the running callback's fill (the caller's contract), checked.
        let fill = unsafe { fill_mut(fill) }?;
        // SAFETY: `len` readable bytes at `name` (the caller's contract), checked.
        let name = unsafe { args::name(name, len) }?;
        if ino == 0 || cookie == 0 || fill.done.is_some() {
            return Err(libc::EINVAL);
        }
        if r#type != udc_type::UDC_TYPE_UNKNOWN as u32 {
            file_type(r#type)?;
        }
        if fill.entries.len() >= fill.max {
            return Err(libc::ENOSPC);
        }
        // Fits a byte: checked above.
        fill.entries.push(Entry::new(name, ino, DType::from_raw(r#type as u8), cookie));
        Ok(0)
    })
}

/// In a readdir callback: ends the fill. `eof` non-zero: the last entry added (or the cookie
/// asked for, if none was added) is the end of the directory. `verifier`: the directory's
/// change attribute when it was read (two fills with the same verifier saw the same contents;
/// a callback that has none can pass a counter it bumps on every change). Required before the
/// callback returns 0.
///
/// Returns 0, or `-EINVAL` (NULL; called already), `-EBADF` (not a live fill).
///
/// # Safety
///
/// `fill` must be the fill passed to the running callback, used by one thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_fill_done(fill: *mut udc_fill, eof: c_int, verifier: u64) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the running callback's fill (the caller's contract), checked.
        let fill = unsafe { fill_mut(fill) }?;
        if fill.done.is_some() {
            return Err(libc::EINVAL);
        }
        fill.done = Some((eof != 0, verifier));
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use std::mem::MaybeUninit;

    use super::*;
    use crate::handle::tests::small_cache;
    use crate::handle::udc_cache_destroy;

    #[test]
    fn a_max_over_ptrdiff_max_bytes_is_einval() {
        let c = small_cache();
        let mut buf = [const { MaybeUninit::<udc_dirent>::uninit() }; 2];
        let mut count = 12345;
        let too_many = isize::MAX as usize / size_of::<udc_dirent>() + 1;
        for max in [usize::MAX, too_many] {
            // SAFETY: `c` is a live handle; the length is refused before `buf` is touched.
            let r = unsafe {
                udc_readdir(c, dcache::ROOT_INO, 0, buf.as_mut_ptr().cast(), max, &mut count)
            };
            assert_eq!(r, -libc::EINVAL);
        }
        assert_eq!(count, 12345);
        // SAFETY: `c` is live and used by this thread only.
        unsafe { udc_cache_destroy(c) };
    }
}
