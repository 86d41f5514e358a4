//! The filesystem's callbacks: `udc_ops`, and the adapter that lets the cache call them.
//!
//! # Threads
//!
//! A callback runs on the thread that called the `udc_` function that needed it:
//!
//! - `lookup`: `udc_resolve` (a miss, or a name found invalid: it is looked up again there;
//!   `udc_walk_as` drops such a name and returns `UDC_WALK_MISS` for it);
//! - `readdir`: `udc_readdir`;
//! - `revalidate` with `may_block` 1: `udc_resolve` and `udc_walk_as` (a cached name whose
//!   timeout passed or whose directory changed);
//! - `revalidate` with `may_block` 0: `udc_walk_as`, in the middle of its lockless walk;
//! - `access`: `udc_access`, `udc_walk_as` (a credential's search right not cached).
//!
//! Except for `revalidate` with `may_block` 0, a callback runs with no cache lock held and no
//! epoch pinned, so it may block and may call any `udc_` function on the same cache except
//! the call that is waiting for it (a `udc_resolve` or `udc_walk_as` of the same name, a
//! `udc_readdir` of the same directory), which would wait for itself. `udc_cache_destroy` is
//! one it may call: the handle is released at once and the cache freed when the thread's
//! outermost call returns (see [`crate::handle`]). `revalidate` with `may_block` 0 runs inside
//! a lockless walk (no lock held, but grace periods wait for it): it must answer from what it
//! has at hand, without blocking or I/O, return `UDC_REVAL_NEEDS_BLOCK` if it cannot, and call
//! no `udc_` function but the lockless readers (`udc_lookup`, `udc_walk`, `udc_getattr`).
//! Several callbacks run at once when several threads miss different names.
//!
//! A callback's `-errno` is passed on as it is ([`callback_errno`]), except `-ENOTRECOVERABLE`
//! (kept for the library's panics) and the readdir callback's bad-cookie answers (see
//! `crate::readdir`); a broken contract is `EIO`.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::ptr;
use std::sync::OnceLock;

use dcache::defaults;
use dcache::readdir::{Fill, FillError};
use dcache::{Cached, Cred, Errno, Filesystem, InodeSpec, Mask, Revalidate};

use crate::args::{self, check_size, versioned};
use crate::errors::{CResult, ffi_call};
use crate::handle::{self, udc_cache};
use crate::types::udc_entry;

/// The filesystem's lookup, called by `udc_resolve` on a miss: return 1 and fill `*out` if
/// `name` exists in directory `parent`, 0 if it does not (filed as a negative entry, under
/// the admission rule of NEGATIVE ENTRIES), or `-errno` (returned by `udc_resolve` as it is,
/// not cached; see CALLBACKS). `name` is not NUL-terminated. A return above 1, or an `*out`
/// with inode 0 or an unknown type, is a broken contract: `-EIO`.
pub type udc_lookup_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        parent: u64,
        name: *const c_char,
        len: usize,
        out: *mut udc_entry,
    ) -> c_int,
>;

/// The filesystem's directory listing, called by `udc_readdir` for ranges the cache lacks:
/// append up to `max` entries that follow `cookie` (0 = the start) with `udc_fill_add`, then
/// call `udc_fill_done`; return 0 or `-errno`. `max` is the cache's page size
/// (`udc_config.readdir_page_entries`), not the `max` of the `udc_readdir` call that needed
/// the page: the cache fills whole pages and answers its callers from them. Fewer entries are
/// fine (at least one, unless the directory ends there); `udc_fill_add` refuses more with
/// `-ENOSPC`. Return `-EINVAL` or
/// `-ESTALE` for a cookie it cannot resume at (reported by `udc_readdir` as a bad cookie,
/// `-EINVAL`); at cookie 0 they are returned as they are (`-ESTALE`: the directory is gone).
/// Returning 0 without `udc_fill_done` is a broken contract (`-EIO`). The cookies it issues
/// must be non-zero.
pub type udc_readdir_fn = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        dir: u64,
        cookie: u64,
        max: usize,
        fill: *mut crate::readdir::udc_fill,
    ) -> c_int,
>;

/// The filesystem's callbacks and their context, given to `udc_set_ops`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct udc_ops {
    /// `sizeof(struct udc_ops)`.
    pub size: usize,
    /// Called on a miss by `udc_resolve`; NULL: `udc_resolve` returns `-ENOSYS` on a miss.
    pub lookup: udc_lookup_fn,
    /// Called by `udc_readdir`; NULL: `udc_readdir` returns `-ENOSYS`.
    pub readdir: udc_readdir_fn,
    /// Passed to every callback as its first argument.
    pub ctx: *mut c_void,
    /// Asked whether a cached name that is no longer trusted still holds (see
    /// `udc_revalidate_fn`); NULL: `UDC_REVAL_NEEDS_BLOCK` without blocking, else a fresh
    /// `lookup` compared by inode number.
    pub revalidate: crate::reval::udc_revalidate_fn,
    /// Asked for a credential's rights on an inode (see `udc_access_fn`); NULL: every right
    /// for everyone.
    pub access: crate::reval::udc_access_fn,
}
versioned!(udc_ops);

/// The callbacks as the cache sees them: a [`Filesystem`], given to the cache when it is made
/// and set by `udc_set_ops` (before that, none: the defaults and `ENOSYS`).
pub(crate) struct Backend {
    ops: OnceLock<udc_ops>,
}

// SAFETY: the header requires the callbacks and their context to be usable from any thread,
// several at once (see the module rules); `ops` is written once, by `udc_set_ops`, and only
// read after (`OnceLock` orders the write before every read that sees it).
unsafe impl Send for Backend {}
// SAFETY: as above.
unsafe impl Sync for Backend {}

/// No callbacks (before `udc_set_ops`).
const NO_OPS: udc_ops = udc_ops {
    size: size_of::<udc_ops>(),
    lookup: None,
    readdir: None,
    ctx: ptr::null_mut(),
    revalidate: None,
    access: None,
};

impl Backend {
    /// No callbacks yet.
    pub(crate) fn new() -> Self {
        Backend { ops: OnceLock::new() }
    }

    /// The callbacks: those `udc_set_ops` set, or none.
    fn ops(&self) -> &udc_ops {
        self.ops.get().unwrap_or(&NO_OPS)
    }

    /// Whether a readdir callback was given.
    pub(crate) fn has_readdir(&self) -> bool {
        self.ops().readdir.is_some()
    }
}

thread_local! {
    /// The credential of the `udc_` call running on this thread that may make the cache ask
    /// for rights (`udc_walk_as`, `udc_access`), for the access callback: the cache's [`Cred`]
    /// holds only a digest of the groups, and it calls its filesystem on the calling thread.
    static CALLER: Cell<*const crate::reval::udc_cred> = const { Cell::new(ptr::null()) };
}

/// The caller's credential lent to the access callback for the length of one `udc_` call
/// (see [`CALLER`]); the one of an enclosing call (a callback's own `udc_` call) comes back
/// when it drops.
pub(crate) struct AsCaller {
    outer: *const crate::reval::udc_cred,
}

impl AsCaller {
    /// Lends `cred` (NULL: none) until the result drops; `cred` must outlive it.
    pub(crate) fn lend(cred: Option<&crate::reval::udc_cred>) -> Self {
        let cred = cred.map_or(ptr::null(), ptr::from_ref);
        AsCaller { outer: CALLER.replace(cred) }
    }
}

impl Drop for AsCaller {
    fn drop(&mut self) {
        CALLER.set(self.outer);
    }
}

/// The positive errno of a callback's negative return value, passed on as it is; anything
/// else is a broken contract, `EIO`: a value that is no negative errno, and
/// `-ENOTRECOVERABLE`, which the library keeps for its own panics
/// ([`PANICKED`](crate::errors::PANICKED)) so that it always means one.
pub(crate) fn callback_errno(r: c_int) -> c_int {
    match r.checked_neg() {
        Some(e) if e > 0 && e != crate::errors::PANICKED => e,
        _ => libc::EIO,
    }
}

impl Filesystem for Backend {
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        let ops = self.ops();
        let Some(lookup) = ops.lookup else { return Err(Errno::new(libc::ENOSYS)) };
        let mut out = udc_entry::default();
        // SAFETY: `lookup` is the filesystem's function of the documented type; `name` is
        // valid for `name.len()` bytes and `out` is a live udc_entry, both for the call.
        let r = unsafe { lookup(ops.ctx, parent, name.as_ptr().cast(), name.len(), &mut out) };
        match r {
            1 => out.spec().map(Some).map_err(|_| Errno::EIO),
            0 => Ok(None),
            r => Err(Errno::new(callback_errno(r))),
        }
    }

    fn readdir(&self, dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        crate::readdir::call_readdir(self.ops().readdir, self.ops().ctx, (dir, cookie, max))
    }

    fn revalidate(&self, parent: u64, name: &[u8], cached: Cached, may_block: bool) -> Revalidate {
        let (f, ctx) = (self.ops().revalidate, self.ops().ctx);
        crate::reval::call_revalidate(f, ctx, (parent, name), cached, may_block)
            .unwrap_or_else(|| defaults::revalidate(self, parent, name, cached, may_block))
    }

    /// With the caller's `udc_cred` that the entry points that check access lend
    /// ([`AsCaller`]); without one, the default, or `EIO` if there is an access callback.
    fn access(&self, ino: u64, cred: &Cred) -> Result<Mask, Errno> {
        // SAFETY: NULL, or lent by an `AsCaller` of a call running on this thread, which
        // outlives the cache's call of its filesystem (made on this thread, inside that call).
        let c = unsafe { CALLER.get().as_ref() };
        self.access_as(ino, cred, c).map_err(Errno::new)
    }
}

impl Backend {
    /// The rights of `cred` (whose C form is `c`) on `ino`: the access callback's answer, or
    /// the default without one.
    pub(crate) fn access_as(
        &self,
        ino: u64,
        cred: &Cred,
        c: Option<&crate::reval::udc_cred>,
    ) -> Result<Mask, i32> {
        let ops = self.ops();
        let Some(access) = ops.access else {
            return defaults::access(ino, cred).map_err(|e| e.get());
        };
        // Only `udc_access` and `udc_walk_as` make the cache ask for rights, and both pass the
        // caller's credential: without it the groups are unknown, so nothing is guessed.
        let c = c.ok_or(libc::EIO)?;
        // SAFETY: `access` is the filesystem's function of the documented type; `c` (and the
        // groups it points to, the caller's) is valid for the call.
        let r = unsafe { access(ops.ctx, ino, c) };
        match u32::try_from(r) {
            Ok(bits) => Mask::from_bits(bits).ok_or(libc::EIO),
            Err(_) => Err(callback_errno(r)),
        }
    }
}

/// Sets the filesystem's callbacks. Call it once, before the cache is used from several
/// threads; the callbacks then stay for the cache's life.
///
/// Returns 0, `-EINVAL` (`cache` or `ops` NULL, or `ops->size` smaller than this library's
/// `sizeof(struct udc_ops)`), `-EBADF` (not a live handle), or `-EBUSY` (set already).
///
/// # Safety
///
/// `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `ops`
/// NULL or a `udc_ops`. The callbacks must follow the threading rules above for as long as the
/// cache lives.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_set_ops(cache: *mut udc_cache, ops: *const udc_ops) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: no other thread destroys the handle during the call (the caller's contract).
        let cache = unsafe { handle::get(cache) }?;
        // SAFETY: NULL or a udc_ops (the caller's contract).
        let ops = unsafe { args::input(ops) }?;
        check_size(ops)?;
        let ops = udc_ops { size: size_of::<udc_ops>(), ..*ops };
        cache.backend.ops.set(ops).map_err(|_| libc::EBUSY)?;
        Ok(0)
    })
}
