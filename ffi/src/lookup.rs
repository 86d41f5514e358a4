//! Reading names: `udc_lookup` (lockless, cache only; `udc_peek` too, marking nothing used),
//! `udc_resolve` (the FUSE lookup: cache, else the filesystem's callback), `udc_walk` (a whole
//! path, lockless) and `udc_children` (a directory's positive children).

use std::ffi::{c_char, c_int, c_void};

use dcache::epoch::Guard;
use dcache::{Dcache, Error, Lookup, Resolved, Walk, epoch};

use crate::args::{self, Out, versioned};
use crate::errors::{CResult, fail, fail_fs, ffi_call};
use crate::handle::{self, udc_cache};
use crate::types::udc_entry;

/// `udc_lookup`, `udc_resolve`: nothing is cached under the name; ask the filesystem.
pub const UDC_MISS: c_int = 0;
/// `udc_lookup`, `udc_resolve`: the name exists; `*out` is filled.
pub const UDC_POSITIVE: c_int = 1;
/// `udc_lookup`, `udc_resolve`: the name is known not to exist (a negative entry).
pub const UDC_NEGATIVE: c_int = 2;

/// `udc_walk_result.kind`: the component at `offset` is not cached in directory `parent` (or
/// no longer trusted). Resolve it with `udc_resolve(parent, component)`, whose answer stands
/// for the component at that instant: `UDC_NEGATIVE` ends the walk (the path does not exist;
/// a complete cached listing answers so without a negative entry, so walking the same path
/// again would miss there again, for ever); `UDC_POSITIVE` names the inode (one lookup
/// counted): walk the rest of the path, after the component, from it.
pub const UDC_WALK_MISS: u32 = 0;
/// `udc_walk_result.kind`: every component resolved; `entry` is what the path names.
pub const UDC_WALK_FOUND: u32 = 1;
/// `udc_walk_result.kind`: the component at `offset` is known not to exist.
pub const UDC_WALK_NEGATIVE: u32 = 2;
/// `udc_walk_result.kind`: `entry` is a symlink met before the last component (or last, with
/// a trailing `/`); the rest of the path starts at `offset`. Read the link and walk again (the
/// cache holds no link targets).
pub const UDC_WALK_SYMLINK: u32 = 3;
/// `udc_walk_result.kind`: `entry` is not a directory but the component at `offset` needed
/// one (`offset` is the path's length for a trailing `/`).
pub const UDC_WALK_NOTDIR: u32 = 4;
/// `udc_walk_result.kind` (`udc_walk_as` only): the credential may not search directory
/// `parent` (`EACCES`); the component at `offset` was not looked up.
pub const UDC_WALK_DENIED: u32 = 5;

/// How a `udc_walk` or `udc_walk_as` ended. Set `size` before the call.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct udc_walk_result {
    /// `sizeof(struct udc_walk_result)`.
    pub size: usize,
    /// `UDC_WALK_FOUND`, `_NEGATIVE`, `_MISS`, `_SYMLINK`, `_NOTDIR` or (`udc_walk_as`)
    /// `_DENIED`.
    pub kind: u32,
    /// FOUND, SYMLINK, NOTDIR: the inode.
    pub entry: udc_entry,
    /// MISS: the directory to look the component up in; DENIED: the directory that may not be
    /// searched.
    pub parent: u64,
    /// NEGATIVE, MISS, NOTDIR, DENIED: where the component starts in the path (bytes);
    /// SYMLINK: where the rest of the path starts.
    pub offset: usize,
}
versioned!(udc_walk_result);

/// The arguments of `udc_lookup` and `udc_resolve`, checked: the handle, the name, the output
/// pointer, and `parent` a cached directory.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes; `out` must be NULL or point to a writable `udc_entry`; all
/// for `'a`.
unsafe fn read_args<'a>(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    out: *mut udc_entry,
) -> Result<(&'a udc_cache, &'a [u8], Out<'a, udc_entry>), c_int> {
    // SAFETY: the caller's contract, as documented.
    let (cache, name) = unsafe { handle::get_named(cache, name, len) }?;
    // SAFETY: NULL or a writable udc_entry (the caller's contract).
    let out = unsafe { args::output(out) }?;
    cache.check_dir(parent)?;
    Ok((cache, name, out))
}

/// Looks `name` up in directory `parent` in the cache only: lockless (a hit writes nothing
/// shared but one bit, once), never calls the filesystem, counts no lookup.
///
/// Returns `UDC_POSITIVE` (and fills `*out`), `UDC_NEGATIVE`, `UDC_MISS`, or `-EINVAL` (NULL
/// `cache` or `out`; a bad name), `-ENAMETOOLONG`, `-ESTALE` (`parent` not cached),
/// `-ENOTDIR`, `-EBADF` (not a live handle).
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
/// must point to `len` readable bytes; `out` must be NULL or point to a writable `udc_entry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_lookup(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    out: *mut udc_entry,
) -> c_int {
    // SAFETY: the caller's contract, the same as `cached`'s.
    unsafe { cached(cache, (parent, name, len), out, Dcache::lookup) }
}

/// `udc_lookup` that is no use of the entry: its referenced bit is left as it is, so what
/// `udc_shrink` and the negative-trimming rules see of it does not change; nothing is written.
/// For a caller that checks what the cache holds without acting on the name. Same answers,
/// same errors, same contract as `udc_lookup`.
///
/// # Safety
///
/// As `udc_lookup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_peek(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    out: *mut udc_entry,
) -> c_int {
    // SAFETY: the caller's contract, the same as `cached`'s.
    unsafe { cached(cache, (parent, name, len), out, Dcache::peek) }
}

/// A cache-only search of the name table: `Dcache::lookup` or `Dcache::peek`.
type Search = for<'g> fn(&'g Dcache, &'g Guard, u64, &[u8]) -> Result<Lookup<'g>, Error>;

/// `udc_lookup` and `udc_peek`, by `search`.
///
/// # Safety
///
/// As `udc_lookup` (the name is `len` bytes at `name`).
unsafe fn cached(
    cache: *mut udc_cache,
    (parent, name, len): (u64, *const c_char, usize),
    out: *mut udc_entry,
    search: Search,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, name, out) = unsafe { read_args(cache, parent, name, len, out) }?;
        let guard = epoch::pin();
        match search(&cache.dcache, &guard, parent, name).map_err(fail)? {
            Lookup::Hit(inode) => {
                out.write(udc_entry::of_inode(inode));
                Ok(UDC_POSITIVE)
            }
            Lookup::Negative => Ok(UDC_NEGATIVE),
            Lookup::Miss => Ok(UDC_MISS),
        }
    })
}

/// The FUSE lookup: the cached answer, else the lookup callback's (filed in the cache, a
/// negative answer as a negative entry, bounded and admitted as `udc_add_negative`'s: after a
/// flood of negatives in its bucket, a name's first negative answer is dropped at once, so
/// the callback is asked again at its next miss, and its second is kept; see NEGATIVE
/// ENTRIES). A cached name no longer trusted (its timeout passed,
/// or it is negative and its directory changed) is first revalidated (the revalidate callback,
/// `may_block` 1). Concurrent misses of one name make one callback call.
/// Every `UDC_POSITIVE` counts one lookup of `out->ino` (balance it with `udc_forget`). A miss
/// in a directory whose complete listing is cached (see `udc_readdir`) is answered from it:
/// `UDC_NEGATIVE` without a callback call or a negative entry — only while negatives never
/// time out (`negative_timeout_ns` `UINT64_MAX`, the default): a listing has no age, so with a
/// finite timeout the callback is asked. For a walk's `UDC_WALK_MISS` the answer stands for
/// that component: `UDC_NEGATIVE` ends the walk, `UDC_POSITIVE` lets it go on from `out->ino`
/// (see `UDC_WALK_MISS`); `udc_walk` and `udc_lookup` may still miss the name afterwards.
///
/// Returns `UDC_POSITIVE` (and fills `*out`), `UDC_NEGATIVE`, or `-errno`: the callback's own
/// error (not cached), `-ENOSYS` on a miss without a lookup callback, `-EIO` for a callback
/// that broke its contract, `-EMLINK` (see below), and the errors of `udc_lookup`. Never
/// `UDC_MISS`.
///
/// A directory that the lookup callback names here while the cache holds it under another
/// name was renamed behind the cache (on the server): the cache moves its name here, with
/// what is cached below it, and drops the old name (a later lookup of it asks the callback).
/// If `parent` is cached below that directory, the cached name just below the directory on
/// the way is dropped first (the answer shows it stale), so no cycle of names forms.
/// `-EMLINK`: the callback answered with the root directory, or with `parent` itself, or the
/// directory's name kept changing (other threads renaming it) while the cache moved it;
/// nothing was filed: call again.
///
/// # Safety
///
/// As `udc_lookup`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_resolve(
    cache: *mut udc_cache,
    parent: u64,
    name: *const c_char,
    len: usize,
    out: *mut udc_entry,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, name, out) = unsafe { read_args(cache, parent, name, len, out) }?;
        let resolved = cache.dcache.resolve(parent, name).map_err(fail_fs)?;
        match resolved {
            Resolved::Found(spec) => {
                out.write(udc_entry::of(spec));
                Ok(UDC_POSITIVE)
            }
            Resolved::Negative => Ok(UDC_NEGATIVE),
        }
    })
}

/// Resolves `path` (`len` bytes, not NUL-terminated) from directory `root`, one lockless
/// lookup per component, validated as a whole against concurrent renames (a walk that
/// overlaps one walks again under the rename lock). `.` stays, `..` climbs (from the root too:
/// the root's parent is itself), empty components are skipped, a trailing `/` asks for a
/// directory (`file/` is `UDC_WALK_NOTDIR`; `link/` is `UDC_WALK_SYMLINK` with the rest at
/// the slash); symlinks are reported, not followed. Counts no lookup. A `UDC_WALK_MISS` is
/// resolved with `udc_resolve`, whose answer decides the component (see `UDC_WALK_MISS`).
///
/// Returns `out->kind` (>= 0; see `UDC_WALK_*`), or `-EINVAL` (NULL `cache`, `out` or `path`
/// with `len > 0`; `len` over `PTRDIFF_MAX`; a component with a NUL, or `out->size` too
/// small), `-ENAMETOOLONG` (a component over 255 bytes), `-ESTALE` (`root` not cached, or
/// the directory a `..` climbs to is no longer cached), `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `path`
/// must point to `len` readable bytes; `out` must be NULL or point to a writable `udc_walk_result`
/// whose `size` is set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_walk(
    cache: *mut udc_cache,
    root: u64,
    path: *const c_char,
    len: usize,
    out: *mut udc_walk_result,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: the caller's contract, as documented.
        let (cache, path, out) = unsafe { walk_args(cache, path, len, out) }?;
        let guard = epoch::pin();
        let r = udc_walk_result::of(cache.dcache.walk(&guard, root, path).map_err(fail)?);
        out.write(r);
        Ok(r.kind as c_int)
    })
}

/// The arguments of `udc_walk` and `udc_walk_as`, checked: the handle, the path and the result
/// struct (its `size` too).
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `path`
/// must point to `len` readable bytes; `out` must be NULL or point to a writable `udc_walk_result`
/// whose `size` is set; all for `'a`.
pub(crate) unsafe fn walk_args<'a>(
    cache: *mut udc_cache,
    path: *const c_char,
    len: usize,
    out: *mut udc_walk_result,
) -> Result<(&'a udc_cache, &'a [u8], Out<'a, udc_walk_result>), c_int> {
    // SAFETY: no other thread destroys the handle during the call (the caller's contract).
    let cache = unsafe { handle::get(cache) }?;
    // SAFETY: `len` readable bytes at `path` (the caller's contract), checked.
    let path = unsafe { args::path(path, len) }?;
    // SAFETY: NULL or a writable udc_walk_result (the caller's contract).
    let out = unsafe { args::output(out) }?;
    out.check_size()?;
    Ok((cache, path, out))
}

impl udc_walk_result {
    /// The result of a walk that ended as `w`.
    pub(crate) fn of(w: Walk<'_>) -> Self {
        let mut r = udc_walk_result { size: size_of::<udc_walk_result>(), ..Default::default() };
        match w {
            Walk::Found(inode) => (r.kind, r.entry) = (UDC_WALK_FOUND, udc_entry::of_inode(&inode)),
            Walk::Negative { at } => (r.kind, r.offset) = (UDC_WALK_NEGATIVE, at),
            Walk::Miss { parent, at } => (r.kind, r.parent, r.offset) = (UDC_WALK_MISS, parent, at),
            Walk::Symlink { inode, rest } => {
                (r.kind, r.entry, r.offset) = (UDC_WALK_SYMLINK, udc_entry::of_inode(inode), rest)
            }
            Walk::NotDir { inode, at } => {
                (r.kind, r.entry, r.offset) = (UDC_WALK_NOTDIR, udc_entry::of_inode(inode), at)
            }
        }
        r
    }

    /// The result of a walk refused at directory `dir`, component at `at`.
    pub(crate) fn denied(dir: u64, at: usize) -> Self {
        udc_walk_result {
            size: size_of::<udc_walk_result>(),
            kind: UDC_WALK_DENIED,
            parent: dir,
            offset: at,
            ..Default::default()
        }
    }
}

/// Visitor of `udc_children`: called once per child with its name (`len` bytes, not
/// NUL-terminated) and entry; return 0 to go on, non-zero to stop.
pub type udc_child_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        name: *const c_char,
        len: usize,
        entry: *const udc_entry,
    ) -> c_int,
>;

/// Visits the cached positive children of directory `dir`: a snapshot taken first, in no
/// particular order, costing O(positive children) however many negative entries the
/// directory has. `visit` runs on the calling thread with no cache lock held and may call any
/// `udc_` function, `udc_cache_destroy` included, as a callback may (see CALLBACKS: a
/// destroyed cache is freed when this call returns, and the snapshot is visited to its end
/// or until `visit` stops it); it may be NULL, to count the children.
///
/// Returns the number of children visited (the one whose visit returned non-zero included),
/// or `-ESTALE` (`dir` not cached), `-ENOTDIR`, `-EINVAL`, `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS);
/// `visit` must be NULL or a function of the documented type.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_children(
    cache: *mut udc_cache,
    dir: u64,
    visit: udc_child_fn,
    ctx: *mut c_void,
) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        let children = cache.dcache.children(dir).map_err(fail)?;
        let mut visited: c_int = 0;
        for child in &children {
            visited = visited.saturating_add(1);
            let Some(visit) = visit else { continue };
            let entry = udc_entry::of(child.inode);
            // SAFETY: `visit` is the caller's function of the documented type; the name and
            // the entry live until it returns.
            let stop = unsafe { visit(ctx, child.name.as_ptr().cast(), child.name.len(), &entry) };
            if stop != 0 {
                break;
            }
        }
        Ok(visited)
    })
}
