//! Changing names and lookup counts: add, add negative, unlink, rename, forget, count lookup,
//! invalidate, shrink. Each refused call changes nothing.

use std::ffi::{c_char, c_int, c_uint};

use dcache::{Dcache, Error, RenameMode};

use crate::args;
use crate::errors::{CResult, fail, ffi_call};
use crate::handle::{self, udc_cache};
use crate::types::udc_entry;

/// `udc_rename` flag: fail with `-EEXIST` if the target name exists (Linux's
/// `RENAME_NOREPLACE`).
pub const UDC_RENAME_NOREPLACE: c_uint = 1;
/// `udc_rename` flag: swap the two names, which must both exist (Linux's `RENAME_EXCHANGE`).
pub const UDC_RENAME_EXCHANGE: c_uint = 2;

/// The body of the entry points that change one name in a directory (add negative, unlink,
/// invalidate): checks the handle, the name and the directory `parent`, then runs `op`.
///
/// # Safety
///
/// No other thread may destroy `cache` during the call, and `name` must point to `len`
/// readable bytes.
pub(crate) unsafe fn change_name(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    op: impl FnOnce(&Dcache, u64, &[u8]) -> Result<(), Error>,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, name) = unsafe { handle::get_named(cache, name, len) }?;
        cache.check_dir(parent)?;
        op(&cache.dcache, parent, name).map_err(fail)?;
        Ok(0)
    })
}

/// Adds the name `name` in directory `parent` for the inode `*e` (turning a negative entry of
/// that name positive) and counts one lookup of the inode, as a FUSE reply to lookup, create,
/// mkdir, mknod, symlink or link does. If `e->ino` is cached, that inode gets a new name (a
/// hard link) and keeps its `fs_data`.
///
/// Returns 0, or `-EINVAL` (NULL pointer; bad name; `e->ino` 0; `e->type` unknown or not the
/// cached inode's type), `-ENAMETOOLONG`, `-ESTALE` (`parent` not cached), `-ENOTDIR`,
/// `-EEXIST` (the name exists), `-EMLINK` (a second name for a directory, or the root),
/// `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes; `e` must be NULL or point to a `udc_entry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_add(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    e: *const udc_entry,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, name) = unsafe { handle::get_named(cache, name, len) }?;
        // SAFETY: NULL or a udc_entry (the caller's contract).
        let spec = unsafe { args::input(e) }?.spec()?;
        cache.dcache.add(parent, name, spec).map_err(fail)?;
        Ok(0)
    })
}

/// Files `name` in directory `parent` as a negative entry ("does not exist"), under the
/// bounds and the admission rule of NEGATIVE ENTRIES: negatives are bounded per hash bucket
/// (a flood of names used once settles at 3 per bucket, names a lookup reuses at up to
/// `udc_config.negative_cap`, default 6), so this one may be evicted at any time; and after
/// a flood, a name filed for the first time is dropped at once, the second filing kept. So a
/// `udc_lookup` right after this call may answer `UDC_MISS`.
///
/// Returns 0 (also if it was remembered already, or dropped by the admission rule), or `-EINVAL`,
/// `-ENAMETOOLONG`, `-ESTALE`, `-ENOTDIR`, `-EEXIST` (the name is positive), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_add_negative(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as documented.
    unsafe { change_name(cache, parent, name, len, Dcache::add_negative) }
}

/// Removes the name `name` from directory `parent` (unlink, rmdir): the entry turns negative
/// or is dropped, as `udc_config.unlink_policy` says. A negative it turns into is bounded and
/// admitted as `udc_add_negative`'s (NEGATIVE ENTRIES: after a flood of negatives in its
/// bucket it is dropped at once, and the next lookup misses). The inode stays cached until
/// `udc_forget` takes its lookup count to 0.
///
/// Returns 0, or `-EINVAL`, `-ENAMETOOLONG`, `-ESTALE`, `-ENOTDIR`, `-ENOENT` (no positive
/// entry), `-EBADF`; each changes nothing. After a refusal of a name the filesystem did
/// remove (its entry was never made, or was shrunk away), call `udc_invalidate` on it: the
/// directory's cached listing may still name it.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_unlink(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as documented.
    unsafe { change_name(cache, parent, name, len, Dcache::unlink) }
}

/// Moves the name `oldname` in `oldparent` to `newname` in `newparent` (a positive target is
/// replaced), atomically for every concurrent `udc_walk`. `flags`: 0, `UDC_RENAME_NOREPLACE`
/// or `UDC_RENAME_EXCHANGE`. Renaming a name onto itself or another name of the same inode
/// does nothing (with `UDC_RENAME_NOREPLACE` it is `-EEXIST`, as for `renameat2`).
/// Not checked (the filesystem's job): that a directory is not moved below itself.
///
/// Returns 0, or `-EINVAL` (unknown or both flags; bad name), `-ENAMETOOLONG`, `-ESTALE`,
/// `-ENOTDIR`, `-ENOENT` (no positive source, or no positive target with EXCHANGE), `-EEXIST`
/// (positive target with NOREPLACE), `-EBADF`; each changes nothing. After a refusal of a
/// rename the filesystem did make, call `udc_invalidate` on both names, as for `udc_unlink`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS);
/// `oldname` and `newname` must point to `oldlen` and `newlen` readable bytes.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn udc_rename(
    cache: *mut udc_cache,
    oldparent: u64,
    oldname: *const c_char,
    oldlen: usize,
    newparent: u64,
    newname: *const c_char,
    newlen: usize,
    flags: c_uint,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, old) = unsafe { handle::get_named(cache, oldname, oldlen) }?;
        // SAFETY: `newlen` readable bytes at `newname` (the caller's contract), checked.
        let new = unsafe { args::name(newname, newlen) }?;
        let mode = match flags {
            0 => RenameMode::Replace,
            UDC_RENAME_NOREPLACE => RenameMode::NoReplace,
            UDC_RENAME_EXCHANGE => RenameMode::Exchange,
            _ => return Err(libc::EINVAL),
        };
        cache.check_dir(oldparent)?;
        cache.check_dir(newparent)?;
        cache.dcache.rename(oldparent, old, newparent, new, mode).map_err(fail)?;
        Ok(0)
    })
}

/// FUSE forget: the kernel dropped `nlookup` of its lookups of `ino`. At 0 the inode leaves
/// the cache with every name of it. `nlookup` 0 changes nothing.
///
/// Returns 0, or `-ESTALE` (`ino` not cached), `-EINVAL` (more than counted; the root, which is
/// never forgotten), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_forget(cache: *mut udc_cache, ino: u64, nlookup: u64) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        cache.dcache.forget(ino, nlookup).map_err(fail)?;
        Ok(0)
    })
}

/// Counts one more lookup of `ino` (the filesystem replied to the kernel with it outside
/// `udc_resolve` and `udc_add`).
///
/// Returns 0, or `-ESTALE` (`ino` not cached), `-EINVAL` (`cache` NULL), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_count_lookup(cache: *mut udc_cache, ino: u64) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        cache.dcache.count_lookup(ino).map_err(fail)?;
        Ok(0)
    })
}

/// Drops the cached entry `name` in `parent` (positive or negative) and, for a directory,
/// every cached entry below it (the filesystem learnt that its copy is out of date). Inodes
/// stay cached until `udc_forget`. The directory's cached listing is marked changed, also
/// when no entry is cached for the name (whatever the listing says of it: a page may name it,
/// a complete listing answers that it does not exist, a readdir running now may complete the
/// listing without a name just created).
///
/// Returns 0, or `-ENOENT` (nothing cached that could answer for the name: no entry, and no
/// listing of `parent`; nothing changed), `-EINVAL`, `-ENAMETOOLONG`, `-ESTALE`, `-ENOTDIR`,
/// `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_invalidate(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
) -> c_int {
    // SAFETY: the caller's contract, as documented.
    unsafe { change_name(cache, parent, name, len, Dcache::invalidate) }
}

/// Evicts up to `n` unused entries: negatives first (a negative a lookup hit gets a second
/// chance instead, once), then, only once no unused negative is left, the least recently
/// used positive ones (least recently used within each shard of the LRU, which are visited
/// in turn; their inodes stay cached until `udc_forget`). Negatives the bounding rules evict
/// because of the shrink's own changes (a second chance spent joins two runs of negatives)
/// count as evicted by it. `n` above `INT_MAX` is taken as `INT_MAX`. A shrink whose scan
/// meets mostly looked-up negatives may evict fewer than `n` while some remain: call again.
///
/// Returns how many entries were evicted, exactly, at most `n` (>= 0), or `-EINVAL`, `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_shrink(cache: *mut udc_cache, n: usize) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        let n = n.min(c_int::MAX as usize);
        // At most `n`, which fits.
        Ok(cache.dcache.shrink(n) as c_int)
    })
}
