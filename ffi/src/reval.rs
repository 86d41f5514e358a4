//! Revalidation and the access cache: entry timeouts, the `revalidate` and `access` callbacks,
//! the credential-checked walk `udc_walk_as`, access checks, and the stamp protocol for rights
//! the filesystem computes itself.
//!
//! The cache trusts a name until its timeout passes (`udc_config`'s timeouts, a revalidate
//! answer, `udc_set_entry_timeout`) and, for a negative name, while its directory has not
//! changed (`udc_dir_changed`); after that the name is revalidated at its next use. Access
//! results are kept per inode and credential until their timeout passes or the inode's mode,
//! owner, group (`udc_setattr`) or ACL (`udc_acl_changed`) changes.

use std::ffi::{c_char, c_int, c_void};

use dcache::{AccessStamp, Cached, Cred, Mask, OnMiss, PathEnd, Permission, Revalidate};

use crate::args::{self, check_size, versioned};
use crate::callbacks::AsCaller;
use crate::errors::{CResult, fail, fail_fs, ffi_call};
use crate::handle::{self, udc_cache};
use crate::lookup::{
    UDC_MISS, UDC_WALK_FOUND, UDC_WALK_MISS, UDC_WALK_NEGATIVE, UDC_WALK_NOTDIR, UDC_WALK_SYMLINK,
    udc_walk_result, walk_args,
};
use crate::types::udc_entry;

/// Access mask bit: search a directory or execute a file (`X_OK`).
pub const UDC_MAY_EXEC: u32 = 1;
/// Access mask bit: write (`W_OK`).
pub const UDC_MAY_WRITE: u32 = 2;
/// Access mask bit: read (`R_OK`).
pub const UDC_MAY_READ: u32 = 4;

/// `udc_cached_access`: the cached result grants every right asked for.
pub const UDC_ACCESS_ALLOWED: c_int = 1;
/// `udc_cached_access`: the cached result refuses a right asked for.
pub const UDC_ACCESS_DENIED: c_int = 2;

/// Revalidate callback answer: the cached name no longer holds; the cache drops it and the
/// name is looked up again. (Any value other than the three `UDC_REVAL_*` is taken as this.)
pub const UDC_REVAL_INVALID: c_int = 0;
/// Revalidate callback answer: the cached name still holds; trust it for `*ttl_ns` more.
pub const UDC_REVAL_VALID: c_int = 1;
/// Revalidate callback answer (with `may_block` 0 only): the callback cannot tell without
/// blocking; it is asked again with `may_block` 1 (with `may_block` 1 this is `INVALID`).
pub const UDC_REVAL_NEEDS_BLOCK: c_int = 2;

/// A time to live: forever (until told otherwise), in every `*_ns` timeout of the API.
pub const UDC_TTL_FOREVER: u64 = 0xFFFF_FFFF_FFFF_FFFF;
/// `*ttl_ns` as the revalidate callback finds it: left so, the configured timeout of the
/// name's kind (`udc_config.entry_timeout_ns` or `negative_timeout_ns`) applies.
pub const UDC_TTL_CONFIGURED: u64 = 0xFFFF_FFFF_FFFF_FFFE;

/// The most supplementary groups a `udc_cred` may list (Linux's `NGROUPS_MAX`).
const NGROUPS_MAX: usize = 65536;

/// Who asks: user, primary group and supplementary groups (in any order; duplicates are
/// ignored). Set `size` to `sizeof(struct udc_cred)`. The cache keeps only a digest of the
/// groups; the access callback receives the caller's struct itself.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct udc_cred {
    /// `sizeof(struct udc_cred)`.
    pub size: usize,
    /// The user.
    pub uid: u32,
    /// The primary group.
    pub gid: u32,
    /// `ngroups` supplementary groups; may be NULL when `ngroups` is 0.
    pub groups: *const u32,
    /// How many; at most 65536.
    pub ngroups: usize,
}
versioned!(udc_cred);

/// What the revalidate callback is told about the cached name it is asked about. `size` is
/// set by the library.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct udc_cached {
    /// `sizeof(struct udc_cached)`.
    pub size: usize,
    /// 1: the name is cached as not existing (`entry` is all zero); 0: `entry` is its inode.
    pub negative: c_int,
    /// 1: its timeout has passed.
    pub expired: c_int,
    /// 1: its directory changed (`udc_dir_changed`) since it was filled.
    pub dir_changed: c_int,
    /// The inode the name leads to (positive names).
    pub entry: udc_entry,
}

impl udc_cached {
    fn of(c: Cached) -> Self {
        udc_cached {
            size: size_of::<udc_cached>(),
            negative: c_int::from(c.inode.is_none()),
            expired: c_int::from(c.expired),
            dir_changed: c_int::from(c.dir_changed),
            entry: c.inode.map(udc_entry::of).unwrap_or_default(),
        }
    }
}

/// The filesystem's revalidation of a cached name that is no longer trusted: whether `name`
/// (`len` bytes, not NUL-terminated) in directory `parent` still is what `*cached` says.
/// Return `UDC_REVAL_VALID` (then `*ttl_ns` is how long to trust it from now: left at
/// `UDC_TTL_CONFIGURED`, the configured timeout; `UDC_TTL_FOREVER`; 0, ask at every use),
/// `UDC_REVAL_INVALID`, or, when `may_block` is 0, `UDC_REVAL_NEEDS_BLOCK` if it cannot tell
/// without blocking. With `may_block` 0 it runs inside a lockless walk: see THREADS.
pub type udc_revalidate_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        parent: u64,
        name: *const c_char,
        len: usize,
        cached: *const udc_cached,
        may_block: c_int,
        ttl_ns: *mut u64,
    ) -> c_int,
>;

/// The filesystem's permission check: the rights `*cred` has on inode `ino`, all three asked
/// at once, as a mask of `UDC_MAY_*` bits (0 to 7), or `-errno` (returned to the caller, not
/// cached). The cache keeps the answer for `udc_config.access_timeout_ns`. A return above 7 is
/// a broken contract: `-EIO`.
pub type udc_access_fn =
    Option<unsafe extern "C" fn(ctx: *mut c_void, ino: u64, cred: *const udc_cred) -> c_int>;

/// Calls the revalidate callback `f` (`None` if there is none).
pub(crate) fn call_revalidate(
    f: udc_revalidate_fn,
    ctx: *mut c_void,
    (parent, name): (u64, &[u8]),
    cached: Cached,
    may_block: bool,
) -> Option<Revalidate> {
    let f = f?;
    let cached = udc_cached::of(cached);
    let mut ttl = UDC_TTL_CONFIGURED;
    // SAFETY: `f` is the filesystem's function of the documented type; `name` is valid for
    // `name.len()` bytes, `cached` and `ttl` are live, all for the call.
    let r = unsafe {
        f(ctx, parent, name.as_ptr().cast(), name.len(), &cached, c_int::from(may_block), &mut ttl)
    };
    Some(match r {
        UDC_REVAL_VALID => {
            Revalidate::Valid { ttl: (ttl != UDC_TTL_CONFIGURED).then(|| args::ttl(ttl)) }
        }
        UDC_REVAL_NEEDS_BLOCK => Revalidate::NeedsBlock,
        _ => Revalidate::Invalid,
    })
}

/// A credential from C, checked (`size`; NULL `groups` with `ngroups` > 0, a misaligned
/// `groups` or more than 65536 of them: `EINVAL`), and its digest.
///
/// # Safety
///
/// `ptr` must be NULL or point to a `udc_cred` whose `groups` points to `ngroups` readable
/// `uint32_t` (if not NULL and `ngroups <= 65536`), all unchanged for `'a`.
unsafe fn cred_arg<'a>(ptr: *const udc_cred) -> Result<(&'a udc_cred, Cred), c_int> {
    // SAFETY: NULL or a udc_cred (the caller's contract).
    let c = unsafe { args::input(ptr) }?;
    check_size(c)?;
    let groups: &[u32] = match (c.groups.is_null(), c.ngroups) {
        (_, 0) => &[],
        (true, _) => return Err(libc::EINVAL),
        (false, n) if n > NGROUPS_MAX || !c.groups.is_aligned() => return Err(libc::EINVAL),
        // SAFETY: not NULL, aligned, and `n` readable groups (the caller's contract).
        (false, n) => unsafe { std::slice::from_raw_parts(c.groups, n) },
    };
    Ok((c, Cred::new(c.uid, c.gid, groups)))
}

/// An access mask from C: bits outside `UDC_MAY_*` are `EINVAL`.
fn mask_arg(bits: u32) -> Result<Mask, c_int> {
    Mask::from_bits(bits).ok_or(libc::EINVAL)
}

/// Sets how long the cached name `name` in `parent` (positive or negative) is trusted from
/// now: `ttl_ns` nanoseconds (a FUSE reply's `entry_valid`; 0: revalidate at its next use;
/// `UDC_TTL_FOREVER`: until told otherwise; `UDC_TTL_CONFIGURED` is refused, `-EINVAL`: a
/// revalidate answer's "as configured" is not a timeout). Its directory-change state is kept:
/// a name filed before its directory last changed (`udc_dir_changed` with no verifier or a new
/// one) may be trusted for less, never for longer — its answer may predate the change — until
/// a revalidation.
///
/// Returns 0, or `-ENOENT` (nothing cached under the name), `-EINVAL`, `-ENAMETOOLONG`,
/// `-ESTALE`, `-ENOTDIR`, `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_set_entry_timeout(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    ttl_ns: u64,
) -> c_int {
    ffi_call(|| -> CResult {
        // The handle and the name first, as every entry point checks them: a bad handle is
        // `-EBADF` (NULL `-EINVAL`) whatever else is wrong with the call.
        // SAFETY: the caller's contract, as documented.
        let (cache, name) = unsafe { handle::get_named(cache, name, len) }?;
        if ttl_ns == UDC_TTL_CONFIGURED {
            return Err(libc::EINVAL);
        }
        cache.check_dir(parent)?;
        let ttl = args::ttl(ttl_ns);
        cache.dcache.set_entry_timeout(parent, name, ttl).map_err(fail)?;
        Ok(0)
    })
}

/// Resolves `path` from `root` like `udc_walk`, but revalidates names that are no longer
/// trusted and, with `cred`, checks that it may search each directory on the way (NULL: no
/// access checks). Lockless as `udc_walk` while every name is trusted, every search right is
/// the directory's most recent access result, and the revalidate callback answers without
/// blocking; otherwise the blocking work is done on this thread with no lock held (the
/// `revalidate` callback with `may_block` 1, `access` for a search right not cached) and the
/// walk starts again, at most 4 + 2 per path component times, using for one more use what
/// that blocking work was just told (so a name whose timeout is 0, "revalidate at every use",
/// is asked about once per walk). Counts no lookup.
///
/// Returns `out->kind` (>= 0): the `UDC_WALK_*` of `udc_walk` (a `MISS` only for a name never
/// cached, dropped meanwhile, or dropped by this walk because the revalidate callback found it
/// invalid; the lookup callback is not called here: resolve it with `udc_resolve`, whose
/// answer decides the component, as for `udc_walk`: see `UDC_WALK_MISS`), or
/// `UDC_WALK_DENIED`. Errors: those of `udc_walk`; `-EINVAL` also for a bad `cred`; a
/// callback's `-errno`; `-EIO` for a callback that broke its contract; `-EMLINK` as for
/// `udc_resolve` (a directory renamed behind the cache is moved, as there); `-EAGAIN` when the
/// walk still needed blocking work after its last round (names or directories changing under
/// it faster than it can walk).
///
/// # Safety
///
/// As `udc_walk`; `cred` must be NULL or point to a `udc_cred` (see its fields).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_walk_as(
    cache: *mut udc_cache,
    root: u64,
    path: *const c_char,
    len: usize,
    cred: *const udc_cred,
    out: *mut udc_walk_result,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, path, out) = unsafe { walk_args(cache, path, len, out) }?;
        // SAFETY: NULL or a udc_cred (the caller's contract), checked.
        let cred = if cred.is_null() { None } else { Some(unsafe { cred_arg(cred) }?) };
        let _caller = AsCaller::lend(cred.map(|(c, _)| c));
        let digest = cred.as_ref().map(|(_, d)| d);
        let end = cache.dcache.resolve_path(digest, root, path, OnMiss::Report);
        let r = walk_result(end.map_err(fail_fs)?);
        out.write(r);
        Ok(r.kind as c_int)
    })
}

/// The C form of how a `udc_walk_as` ended.
fn walk_result(end: PathEnd) -> udc_walk_result {
    let mut r = udc_walk_result { size: size_of::<udc_walk_result>(), ..Default::default() };
    match end {
        PathEnd::Found(spec) => (r.kind, r.entry) = (UDC_WALK_FOUND, udc_entry::of(spec)),
        PathEnd::Negative { at } => (r.kind, r.offset) = (UDC_WALK_NEGATIVE, at),
        PathEnd::Miss { parent, at } => (r.kind, r.parent, r.offset) = (UDC_WALK_MISS, parent, at),
        PathEnd::Symlink { link, rest } => {
            (r.kind, r.entry, r.offset) = (UDC_WALK_SYMLINK, udc_entry::of(link), rest)
        }
        PathEnd::NotDir { inode, at } => {
            (r.kind, r.entry, r.offset) = (UDC_WALK_NOTDIR, udc_entry::of(inode), at)
        }
        PathEnd::Denied { dir, at } => return udc_walk_result::denied(dir, at),
        // Not made by this version of the library.
        _ => unreachable!("a walk end this version does not know: {end:?}"),
    }
    r
}

/// Whether `cred` has every right of `mask` (`UDC_MAY_*` bits) on `ino`: the cached result,
/// else the access callback's answer, which is cached. The callback runs on this thread with
/// no lock held. A `mask` of 0 (`F_OK`) asks only that `ino` is cached: 0 if it is, `-ESTALE`
/// if not, without a callback call (`cred` is still checked).
///
/// Returns 0 (allowed), `-EACCES` (refused), or `-EINVAL` (NULL or bad `cred`; bits outside
/// `UDC_MAY_*`), `-ESTALE` (`ino` not cached), the callback's `-errno`, `-EIO` (a callback
/// answer above 7), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `cred`
/// must be NULL or point to a `udc_cred`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_access(
    cache: *mut udc_cache,
    ino: u64,
    cred: *const udc_cred,
    mask: u32,
) -> c_int {
    // SAFETY: the caller's contract, as documented.
    unsafe { check_access(cache, (ino, cred, mask), true) }
}

/// The cached answer to `udc_access`, without asking the callback. A `mask` of 0 asks only
/// that `ino` is cached, as for `udc_access`: `UDC_ACCESS_ALLOWED` if it is (whether or not an
/// access result is cached), `-ESTALE` if not.
///
/// Returns `UDC_ACCESS_ALLOWED`, `UDC_ACCESS_DENIED`, `UDC_MISS` (no trusted result for this
/// credential), or the argument errors of `udc_access` (`-ESTALE` for `ino` not cached).
///
/// # Safety
///
/// As `udc_access`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_cached_access(
    cache: *mut udc_cache,
    ino: u64,
    cred: *const udc_cred,
    mask: u32,
) -> c_int {
    // SAFETY: the caller's contract, as documented.
    unsafe { check_access(cache, (ino, cred, mask), false) }
}

/// The body of `udc_access` (`ask`: the callback on a miss) and `udc_cached_access`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `cred`
/// NULL or a `udc_cred`.
unsafe fn check_access(
    cache: *mut udc_cache,
    (ino, cred, mask): (u64, *const udc_cred, u32),
    ask: bool,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, (c, cred), mask) = unsafe { access_args(cache, cred, mask) }?;
        if ask {
            let _caller = AsCaller::lend(Some(c));
            return match cache.dcache.access(ino, &cred, mask).map_err(fail_fs)? {
                true => Ok(0),
                false => Err(libc::EACCES),
            };
        }
        Ok(match cache.dcache.cached_access(ino, &cred, mask).map_err(fail)? {
            Permission::Allowed => UDC_ACCESS_ALLOWED,
            Permission::Denied => UDC_ACCESS_DENIED,
            _ => UDC_MISS,
        })
    })
}

/// The arguments of the access calls, checked: the handle, the credential, the mask.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `cred`
/// NULL or a `udc_cred`; both for `'a`.
unsafe fn access_args<'a>(
    cache: *mut udc_cache,
    cred: *const udc_cred,
    mask: u32,
) -> Result<(&'a udc_cache, (&'a udc_cred, Cred), Mask), c_int> {
    // SAFETY: no other thread destroys the handle during the call (the caller's contract).
    let cache = unsafe { handle::get(cache) }?;
    // SAFETY: NULL or a udc_cred (the caller's contract), checked.
    let cred = unsafe { cred_arg(cred) }?;
    Ok((cache, cred, mask_arg(mask)?))
}

/// For a filesystem that computes rights itself instead of through the access callback: marks
/// the state of `ino`'s access results in `*stamp` *before* it reads the permissions it
/// computes from; `udc_store_access` files the result only if no revocation (`udc_setattr`
/// of mode, owner or group; `udc_acl_changed`) and no other file under the number came
/// between. A stamp is an opaque word: a made-up one is at worst refused, or taken as a stamp
/// of the inode's current state (then a result computed before a revocation may be stored).
///
/// Returns 0, or `-EINVAL` (NULL `stamp`), `-ESTALE`, `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS);
/// `stamp` must be NULL or point to a writable `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_access_stamp(
    cache: *mut udc_cache,
    ino: u64,
    stamp: *mut u64,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        // SAFETY: NULL or a writable uint64_t (the caller's contract).
        let out = unsafe { args::output(stamp) }?;
        out.write(cache.dcache.access_stamp(ino).map_err(fail)?.to_raw());
        Ok(0)
    })
}

/// Files the rights `granted` (`UDC_MAY_*` bits) of `cred` on `ino`, computed after `stamp`
/// was taken by `udc_access_stamp`, for `udc_config.access_timeout_ns`.
///
/// Returns 1 (filed), 0 (not filed: a revocation or another file came after the stamp; the
/// rights may be out of date, compute them again), or `-EINVAL` (NULL or bad `cred`; bits
/// outside `UDC_MAY_*`), `-ESTALE`, `-EBADF`.
///
/// # Safety
///
/// As `udc_access`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_store_access(
    cache: *mut udc_cache,
    ino: u64,
    cred: *const udc_cred,
    granted: u32,
    stamp: u64,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, (_, cred), granted) = unsafe { access_args(cache, cred, granted) }?;
        let stamp = AccessStamp::from_raw(stamp);
        let stored = cache.dcache.store_access(ino, &cred, granted, stamp).map_err(fail)?;
        Ok(c_int::from(stored))
    })
}

/// The permissions of `ino` changed in a way its cached attributes do not show (an ACL): every
/// cached access result of it is forgotten before this returns. (`udc_setattr` does this by
/// itself for a change of mode, owner or group.)
///
/// Returns 0, or `-ESTALE`, `-EINVAL`, `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_acl_changed(cache: *mut udc_cache, ino: u64) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        cache.dcache.acl_changed(ino).map_err(fail)?;
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use std::ptr;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::callbacks::{udc_ops, udc_set_ops};
    use crate::handle::tests::small_cache;
    use crate::handle::udc_cache_destroy;

    /// The access callback: counts its calls in `*ctx` and grants read and search.
    unsafe extern "C" fn counting_access(
        ctx: *mut c_void,
        _ino: u64,
        _cred: *const udc_cred,
    ) -> c_int {
        // SAFETY: `ctx` is the test's `AtomicUsize`, alive while the cache is.
        let calls = unsafe { &*ctx.cast::<AtomicUsize>() };
        // Relaxed: a counter read by the same thread.
        calls.fetch_add(1, Ordering::Relaxed);
        (UDC_MAY_READ | UDC_MAY_EXEC) as c_int
    }

    #[test]
    fn mask_0_asks_only_that_the_inode_is_cached() {
        let calls = AtomicUsize::new(0);
        let c = small_cache();
        let ops = udc_ops {
            size: size_of::<udc_ops>(),
            lookup: None,
            readdir: None,
            ctx: ptr::from_ref(&calls).cast_mut().cast(),
            revalidate: None,
            access: Some(counting_access),
        };
        let cred = udc_cred {
            size: size_of::<udc_cred>(),
            uid: 7,
            gid: 7,
            groups: ptr::null(),
            ngroups: 0,
        };
        let root = dcache::ROOT_INO;
        // SAFETY: `c` is a live handle used by this thread only; `ops`, `cred` and `calls` are
        // live locals that outlive the cache.
        unsafe {
            assert_eq!(udc_set_ops(c, &ops), 0);
            // Nothing cached for this credential: no callback, no UDC_MISS.
            assert_eq!(udc_access(c, root, &cred, 0), 0);
            assert_eq!(udc_cached_access(c, root, &cred, 0), UDC_ACCESS_ALLOWED);
            assert_eq!(udc_access(c, 999, &cred, 0), -libc::ESTALE);
            assert_eq!(udc_cached_access(c, 999, &cred, 0), -libc::ESTALE);
            assert_eq!(udc_access(c, root, ptr::null(), 0), -libc::EINVAL);
            // Relaxed: the callback ran on this thread, if at all.
            assert_eq!(calls.load(Ordering::Relaxed), 0);
            assert_eq!(udc_cached_access(c, root, &cred, UDC_MAY_READ), UDC_MISS);
            // A right asked for: the callback, once; then cached, and mask 0 still allowed.
            assert_eq!(udc_access(c, root, &cred, UDC_MAY_WRITE), -libc::EACCES);
            assert_eq!(udc_access(c, root, &cred, UDC_MAY_READ), 0);
            assert_eq!(udc_cached_access(c, root, &cred, 0), UDC_ACCESS_ALLOWED);
            // Relaxed: as above.
            assert_eq!(calls.load(Ordering::Relaxed), 1);
            udc_cache_destroy(c);
        }
    }
}
