//! The cache handle: creation from a config struct, destruction, and the check every entry
//! point makes on the handle it is given.
//!
//! A `udc_cache *` is a `Box<udc_cache>` given to C. Its first word is a magic number, set
//! when the box is made and overwritten at destroy: an entry point refuses a handle whose
//! magic is wrong with `EBADF`. That catches garbage pointers and most uses of a destroyed
//! handle, but it is a diagnostic, not a guarantee: reading a freed handle is undefined.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use dcache::{Config, Dcache, Timeouts, UnlinkPolicy};

use crate::args::{self, check_size, versioned};
use crate::callbacks::Backend;
use crate::errors::{CResult, ffi_call, ffi_void};

/// The magic word of a live handle ("udcache" and a format version).
const LIVE: u64 = u64::from_le_bytes(*b"udcache\x01");
/// The magic word of a destroyed handle.
const DEAD: u64 = u64::from_le_bytes(*b"udcDEAD\0");

/// Table size when `expected_entries` is 0.
const DEFAULT_ENTRIES: usize = 65536;
/// Readdir page budget when `readdir_pages` is 0 (the udcache crate's default).
const DEFAULT_READDIR_PAGES: usize = 4096;
/// Entries per readdir page when `readdir_page_entries` is 0 (the udcache crate's default).
const DEFAULT_PAGE_ENTRIES: usize = 128;
/// The largest `expected_entries` or `buckets` accepted: beyond it the tables would not fit
/// (a failed allocation aborts the process, so absurd sizes are refused up front).
const MAX_ENTRIES: usize = 1 << 28;

/// What an unlinked name leaves behind (`udc_config.unlink_policy`).
#[repr(C)]
#[allow(clippy::upper_case_acronyms, dead_code)]
pub enum udc_unlink_policy {
    /// The name becomes a negative entry: the next lookup is answered "does not exist"
    /// without asking the filesystem (Linux's default, `fs.dentry-negative = 0`).
    UDC_UNLINK_NEGATIVE = 0,
    /// The entry is dropped: the next lookup misses (`fs.dentry-negative = 1`).
    UDC_UNLINK_DROP = 1,
}

/// How a cache is sized and behaves. Fill it with `udc_config_init`, then change fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct udc_config {
    /// `sizeof(struct udc_config)`, set by `udc_config_init`.
    pub size: usize,
    /// Sizes the tables for about this many entries; 0 = 65536. At most 2^28.
    pub expected_entries: usize,
    /// Hash buckets of the name table: 0 = from `expected_entries`; else rounded up to a
    /// power of two. At most 2^28.
    pub buckets: usize,
    /// Unused negative entries kept per bucket: 0 = the default (6); `UINT32_MAX` = no cap
    /// (the run rule alone bounds them).
    pub negative_cap: u32,
    /// What unlink leaves behind (`enum udc_unlink_policy`).
    pub unlink_policy: u32,
    /// Page budget of the readdir cache, all directories together; 0 = the default.
    pub readdir_pages: usize,
    /// Entries asked of the readdir callback per call (one cached page); 0 = the default.
    pub readdir_page_entries: usize,
    /// How long a positive entry is trusted before the revalidate callback is asked again, in
    /// nanoseconds (FUSE's `entry_valid`): `UINT64_MAX` (set by `udc_config_init`) = until told
    /// otherwise; 0 = ask at every use. A revalidate answer or `udc_set_entry_timeout` may set
    /// another for one entry.
    pub entry_timeout_ns: u64,
    /// The same for a negative entry (also untrusted once its directory changes:
    /// `udc_dir_changed`).
    pub negative_timeout_ns: u64,
    /// How long an access result is trusted before the access callback is asked again (also
    /// forgotten by a mode, owner or group change through `udc_setattr`, and by
    /// `udc_acl_changed`); `UINT64_MAX` = until then.
    pub access_timeout_ns: u64,
}
versioned!(udc_config);

impl udc_config {
    fn defaults() -> Self {
        udc_config {
            size: size_of::<udc_config>(),
            entry_timeout_ns: u64::MAX,
            negative_timeout_ns: u64::MAX,
            access_timeout_ns: u64::MAX,
            ..udc_config::default()
        }
    }
}

/// A directory-entry cache (opaque). Made by `udc_cache_new`, freed by `udc_cache_destroy`.
pub struct udc_cache {
    /// [`LIVE`] while the handle may be used.
    magic: AtomicU64,
    /// The cache.
    pub(crate) dcache: Dcache,
    /// The filesystem's callbacks, set once by `udc_set_ops`.
    pub(crate) backend: OnceLock<Arc<Backend>>,
}

impl udc_cache {
    fn new(cfg: &udc_config) -> Result<Self, c_int> {
        check_size(cfg)?;
        if cfg.expected_entries > MAX_ENTRIES || cfg.buckets > MAX_ENTRIES {
            return Err(libc::EINVAL);
        }
        let unlink = match cfg.unlink_policy {
            0 => UnlinkPolicy::Negative,
            1 => UnlinkPolicy::Drop,
            _ => return Err(libc::EINVAL),
        };
        // A zero field means "the default".
        let or = |v: usize, default: usize| if v == 0 { default } else { v };
        let mut config = Config::for_entries(or(cfg.expected_entries, DEFAULT_ENTRIES));
        if cfg.buckets != 0 {
            config = config.with_buckets(cfg.buckets);
        }
        config = match cfg.negative_cap {
            0 => config,
            u32::MAX => config.with_negative_cap(None),
            cap => config.with_negative_cap(Some(cap as usize)),
        };
        config = config.with_readdir(
            or(cfg.readdir_pages, DEFAULT_READDIR_PAGES),
            or(cfg.readdir_page_entries, DEFAULT_PAGE_ENTRIES),
        );
        config = config.with_timeouts(Timeouts {
            entry: args::ttl(cfg.entry_timeout_ns),
            negative: args::ttl(cfg.negative_timeout_ns),
            access: args::ttl(cfg.access_timeout_ns),
        });
        Ok(udc_cache {
            magic: AtomicU64::new(LIVE),
            dcache: Dcache::new(config.with_unlink_policy(unlink)),
            backend: OnceLock::new(),
        })
    }
}

/// The handle behind `ptr`, checked: NULL is `EINVAL`, a wrong magic word `EBADF`.
///
/// # Safety
///
/// `ptr` must be NULL or a handle from `udc_cache_new` not yet destroyed, and no thread may
/// destroy it during `'a`. (A garbage pointer to readable, aligned memory is caught by the
/// magic word; anything else is undefined behaviour the check may not catch.)
pub(crate) unsafe fn get<'a>(ptr: *const udc_cache) -> Result<&'a udc_cache, c_int> {
    if ptr.is_null() {
        return Err(libc::EINVAL);
    }
    if !ptr.cast::<u64>().is_aligned() {
        return Err(libc::EBADF);
    }
    // SAFETY: the caller guarantees a live handle (see above). Only the magic field is read
    // before it is checked, through a raw field pointer, so a wrong pointer never becomes a
    // reference to a whole `udc_cache`.
    let magic = unsafe { &*std::ptr::addr_of!((*ptr).magic) };
    // Relaxed: a misuse check; the handle's contents were published to this thread by
    // whatever the program used to share the pointer.
    if magic.load(Ordering::Relaxed) != LIVE {
        return Err(libc::EBADF);
    }
    // SAFETY: the magic word says this is a live handle made by `udc_cache_new`.
    Ok(unsafe { &*ptr })
}

/// The handle and one checked name (see [`get`] and [`args::name`]).
///
/// # Safety
///
/// `cache` must be a live handle and `name` point to `len` readable bytes, both for `'a`.
pub(crate) unsafe fn get_named<'a>(
    cache: *const udc_cache,
    name: *const c_char,
    len: usize,
) -> Result<(&'a udc_cache, &'a [u8]), c_int> {
    // SAFETY: a live handle (the caller's contract), checked.
    let cache = unsafe { get(cache) }?;
    // SAFETY: `len` readable bytes at `name` (the caller's contract), checked.
    let name = unsafe { args::name(name, len) }?;
    Ok((cache, name))
}

/// Fills `*cfg` with the defaults and sets `cfg->size`. NULL is ignored.
///
/// # Safety
///
/// `cfg` must be NULL or point to writable memory for a `udc_config`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_config_init(cfg: *mut udc_config) {
    ffi_void(|| {
        // SAFETY: NULL or writable memory for a udc_config (the caller's contract).
        if let Ok(cfg) = unsafe { args::output(cfg) } {
            cfg.write(udc_config::defaults());
        }
    })
}

/// Makes a cache holding only the root directory (`UDC_ROOT_INO`) and stores its handle in
/// `*out`. `cfg` may be NULL (the defaults).
///
/// Returns 0, or `-EINVAL` (`out` NULL; `cfg->size` smaller than this library's
/// `sizeof(struct udc_config)`; an unknown `unlink_policy`; a size over 2^28), with `*out`
/// unchanged.
///
/// # Safety
///
/// `cfg` must be NULL or point to a `udc_config`; `out` must be NULL or point to writable
/// memory for a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_cache_new(cfg: *const udc_config, out: *mut *mut udc_cache) -> c_int {
    ffi_call(|| -> CResult {
        // SAFETY: NULL or writable memory for a pointer (the caller's contract).
        let out = unsafe { args::output(out) }?;
        let defaults = udc_config::defaults();
        // SAFETY: NULL (then the defaults) or a udc_config (the caller's contract).
        let cfg = if cfg.is_null() { &defaults } else { unsafe { args::input(cfg) }? };
        let cache = udc_cache::new(cfg)?;
        out.write(Box::into_raw(Box::new(cache)));
        Ok(0)
    })
}

/// Frees a cache and everything in it. NULL is ignored, and so is a handle whose magic word
/// is wrong (e.g. destroyed already). No other thread may use the handle during or after the
/// call, and no callback may call it.
///
/// # Safety
///
/// `cache` must be NULL or a live handle from `udc_cache_new` that no other thread uses.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_cache_destroy(cache: *mut udc_cache) {
    ffi_void(|| {
        // SAFETY: NULL or a live handle (the caller's contract); checked.
        let Ok(live) = (unsafe { get(cache) }) else { return };
        // Relaxed: no other thread may use the handle now; the store only makes a later
        // misuse of this pointer more likely to be caught.
        live.magic.store(DEAD, Ordering::Relaxed);
        // SAFETY: `cache` came from `Box::into_raw` in `udc_cache_new` (the magic word said
        // so) and is not used again by anyone (the caller's contract).
        drop(unsafe { Box::from_raw(cache) });
        collect_garbage();
    })
}

/// Rounds of epoch collection at destroy. Each round frees up to a few bags of retired
/// objects (crossbeam-epoch frees 8 bags of at most 64 per collection), so 1024 rounds free up
/// to about half a million, in well under a millisecond when there is nothing to free.
const COLLECT_ROUNDS: usize = 1024;

/// Frees what the cache retired through the epoch (unlinked entries, replaced inodes) and no
/// reader can still see. A lockless structure frees a retired object only after a grace
/// period, in whichever thread later pins and collects; at destroy no thread uses the cache
/// any more, so pinning and flushing here moves the epoch on and frees them, instead of
/// leaving them to the next user of the epoch, or to process exit. Objects that another
/// thread's pin holds back stay until that thread unpins: that is the epoch's rule.
fn collect_garbage() {
    for _ in 0..COLLECT_ROUNDS {
        dcache::epoch::pin().flush();
    }
}

impl udc_cache {
    /// The filesystem's callbacks, or none (every callback then fails with `ENOSYS`).
    pub(crate) fn callbacks(&self) -> &Backend {
        self.backend.get().map_or(&Backend::NONE, |b| b)
    }

    /// Checks that `ino` is a cached directory: `ESTALE` if it is not cached, `ENOTDIR` if it
    /// is not a directory.
    pub(crate) fn check_dir(&self, ino: u64) -> Result<(), c_int> {
        let guard = dcache::epoch::pin();
        match self.dcache.inode(&guard, ino) {
            None => Err(libc::ESTALE),
            Some(i) if i.kind() != dcache::FileType::Directory => Err(libc::ENOTDIR),
            Some(_) => Ok(()),
        }
    }
}
