//! The cache handle: creation from a config struct, destruction, and the check every entry
//! point makes on the handle it is given.
//!
//! A `udc_cache *` given to C is not an address: it is an opaque token of a fixed global
//! [`HandleTable`] ([`TABLE`], [`SLOTS`] slots) that names a slot and the slot's generation at
//! the time the cache was made (the table's rules, and their orderings, are in
//! [`crate::table`]). Neither C nor this library ever dereferences it:
//!
//! - `udc_cache_new` boxes the cache and claims a slot for it; with every slot taken it
//!   returns `EMFILE`.
//! - [`get`] checks a token (loads only): anything but a live cache's token is `EBADF` (NULL
//!   `EINVAL`). A destroyed handle whose slot a later `udc_cache_new` reused is caught, since
//!   the generation moved on; so is any garbage that is not exactly a live handle's token.
//! - `udc_cache_destroy` releases the token (of two destroys of one handle, only one gets the
//!   box back) and drops the box. A stale or repeated destroy is ignored.
//!
//! What the table cannot catch is a use of a handle not ordered after its destroy (a call on
//! another thread while it runs: the handle is live when checked, freed while used):
//! `udc_cache_destroy` must be the last call on a handle. On the destroying thread itself it
//! is safe anywhere: each thread counts how deep it is in `udc_` calls ([`InCall`]), and a
//! destroy from inside a callback (the count above one: a call of this thread is running and
//! may be using the cache) releases the handle at once but frees the cache only when this
//! thread's outermost call returns. The count is the thread's own: calls write nothing shared.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};
use std::sync::Arc;

use dcache::{Config, Dcache, Timeouts, UnlinkPolicy};

use crate::args::{self, check_size, versioned};
use crate::callbacks::Backend;
use crate::errors::{CResult, fail, ffi_call, ffi_void};
use crate::table::HandleTable;

/// How many caches may be live at once: the slots of the handle table (a power of two).
const SLOTS: usize = 1024;

/// The handle table. Its slots are claimed by `udc_cache_new` and released by
/// `udc_cache_destroy`; every other entry point only checks tokens against it.
static TABLE: HandleTable<udc_cache, SLOTS> = HandleTable::new();

/// The handle C is given for `token`: the token's bits, with no provenance (never
/// dereferenced).
fn handle(token: usize) -> *mut udc_cache {
    ptr::without_provenance_mut(token)
}

/// Table size when `expected_entries` is 0.
const DEFAULT_ENTRIES: usize = 65536;
/// Readdir page budget when `readdir_pages` is 0 (the udcache crate's default).
const DEFAULT_READDIR_PAGES: usize = 4096;
/// Entries per readdir page when `readdir_page_entries` is 0 (the udcache crate's default).
const DEFAULT_PAGE_ENTRIES: usize = 128;
/// The largest `expected_entries` or `buckets` accepted (8 GiB of tables at 32 bytes an
/// entry): beyond it a size is a mistake, refused as such. Below it, tables that do not fit
/// in memory are `ENOMEM` (`Dcache::try_new`).
const MAX_ENTRIES: usize = 1 << 28;
/// The largest `readdir_page_entries` accepted. The page budget counts pages, so the entries
/// of one page bound what one callback call may add: beyond this a size is a mistake.
const MAX_PAGE_ENTRIES: usize = 1 << 16;

/// What an unlinked name leaves behind (`udc_config.unlink_policy`).
#[repr(C)]
#[allow(clippy::upper_case_acronyms, dead_code)]
pub enum udc_unlink_policy {
    /// The name becomes a negative entry: the next lookup is answered "does not exist"
    /// without asking the filesystem (Linux's default, `fs.dentry-negative = 0`), as long as
    /// the bounds of negative entries keep it (see NEGATIVE ENTRIES and `udc_unlink`).
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
    /// Page budget of the readdir cache, all directories together; 0 = the default (4096).
    /// At most 2^28.
    pub readdir_pages: usize,
    /// Entries asked of the readdir callback per call (one cached page); 0 = the default
    /// (128). At most 65536.
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
/// A `udc_cache *` is a handle, not an address: never dereference it. Any value may be passed
/// where one is expected; anything but a live handle is refused (see CONVENTIONS).
pub struct udc_cache {
    /// The cache.
    pub(crate) dcache: Dcache,
    /// The filesystem's callbacks, set once by `udc_set_ops`; the cache's filesystem.
    pub(crate) backend: Arc<Backend>,
}

impl udc_cache {
    fn new(cfg: &udc_config) -> Result<Self, c_int> {
        check_size(cfg)?;
        if cfg.expected_entries > MAX_ENTRIES
            || cfg.buckets > MAX_ENTRIES
            || cfg.readdir_pages > MAX_ENTRIES
            || cfg.readdir_page_entries > MAX_PAGE_ENTRIES
        {
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
        let backend = Arc::new(Backend::new());
        let config = config.with_unlink_policy(unlink).with_filesystem(backend.clone());
        let dcache = Dcache::try_new(config).map_err(fail)?;
        Ok(udc_cache { dcache, backend })
    }
}

thread_local! {
    /// How many `udc_` calls this thread is inside: more than one while a callback runs.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Whether `DOOMED` holds anything (read by every outermost call as it ends).
    static ANY_DOOMED: Cell<bool> = const { Cell::new(false) };
    /// Caches this thread destroyed from inside a callback: released, not yet freed.
    static DOOMED: RefCell<Vec<NonNull<udc_cache>>> = const { RefCell::new(Vec::new()) };
}

/// This thread is inside a `udc_` call while it lives (every entry point makes one, in
/// [`crate::errors`]); the outermost one, ending, frees the caches destroyed from inside it.
pub(crate) struct InCall(());

impl InCall {
    pub(crate) fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        InCall(())
    }
}

impl Drop for InCall {
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| {
            d.set(d.get() - 1);
            d.get()
        });
        if depth == 0 && ANY_DOOMED.with(|a| a.replace(false)) {
            // `try_with`: at thread exit the list may be gone already (then they leak).
            let doomed = DOOMED.try_with(|d| std::mem::take(&mut *d.borrow_mut()));
            // Not unwinding into C: a panic while dropping a cache is swallowed.
            let _ = catch_unwind(AssertUnwindSafe(|| free_all(doomed.unwrap_or_default())));
        }
    }
}

/// Drops released caches and frees what they retired.
fn free_all(boxes: Vec<NonNull<udc_cache>>) {
    for boxed in boxes {
        // SAFETY: each came from `Box::leak` in `udc_cache_new` and was given to one
        // `udc_cache_destroy` alone by the table's release; no call of this thread uses it
        // any more (its outermost call is over), and no other thread does (the caller's
        // contract).
        drop(unsafe { Box::from_raw(boxed.as_ptr()) });
    }
    collect_garbage();
}

/// The cache behind the handle `ptr`, checked: NULL is `EINVAL`; anything but a live handle's
/// token (garbage, destroyed) is `EBADF`. The handle is never dereferenced; the check only loads.
///
/// # Safety
///
/// If `ptr` is a live handle, no other thread may destroy it during `'a` (the returned
/// reference would dangle; a destroy on this thread frees nothing before its outermost call
/// returns, see the module docs).
pub(crate) unsafe fn get<'a>(ptr: *const udc_cache) -> Result<&'a udc_cache, c_int> {
    let cache = TABLE.live(ptr.addr())?;
    // SAFETY: a live slot's pointer came from `Box::leak` in `udc_cache_new` and stays
    // valid until `udc_cache_destroy` of this handle, which the caller rules out during 'a;
    // its contents are visible to this thread (the check's Acquire load, see `table.rs`).
    Ok(unsafe { cache.as_ref() })
}

/// The handle and one checked name (see [`get`] and [`args::name`]).
///
/// # Safety
///
/// No other thread may destroy `cache` during `'a`, and `name` must point to `len` readable
/// bytes for `'a`.
pub(crate) unsafe fn get_named<'a>(
    cache: *const udc_cache,
    name: *const c_char,
    len: usize,
) -> Result<(&'a udc_cache, &'a [u8]), c_int> {
    // SAFETY: no other thread destroys the handle during 'a (the caller's contract).
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
/// The handle is an opaque token, never NULL and never reused: after `udc_cache_destroy`, the
/// old handle is refused with `-EBADF` by every function, even once later caches were made.
/// At most 1024 caches are live at once. Another thread may use the handle once it got it
/// in a way ordered after this call returned (a mutex, thread creation, a release store read
/// by an acquire load), as it would a pointer to memory: a handle read through an unordered
/// (relaxed) channel may still be refused with `-EBADF` there.
///
/// Returns 0, or `-EINVAL` (`out` NULL; `cfg->size` smaller than this library's
/// `sizeof(struct udc_config)`; an unknown `unlink_policy`; a size over 2^28, or
/// `readdir_page_entries` over 65536), `-ENOMEM` (the tables for that size, allocated now, do
/// not fit: 32 bytes per expected entry, each table rounded up to a power of two), `-EMFILE`
/// (1024 caches are live already), with `*out` unchanged.
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
        let cache = NonNull::from(Box::leak(Box::new(udc_cache::new(cfg)?)));
        match TABLE.claim(cache) {
            Some(token) => {
                out.write(handle(token));
                Ok(0)
            }
            None => {
                // SAFETY: `cache` came from `Box::leak` above and no slot holds it.
                drop(unsafe { Box::from_raw(cache.as_ptr()) });
                Err(libc::EMFILE)
            }
        }
    })
}

/// Frees a cache and everything in it. NULL is ignored, and so is anything that is not a live
/// handle (destroyed already, or garbage): a second destroy of a handle frees nothing, even
/// after another cache was made. No other thread may be inside a `udc_` call on the handle
/// during this call. A callback may call it, for its own cache or another (see CALLBACKS): the
/// handle is refused from then on, and the cache is freed when the thread's outermost `udc_`
/// call (the one that ran the callback) returns. After it, every use of the handle is refused
/// with `-EBADF`.
///
/// # Safety
///
/// `cache` may be any value that no other thread uses during the call (see CONVENTIONS).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_cache_destroy(cache: *mut udc_cache) {
    ffi_void(|| {
        let Some(boxed) = TABLE.release(cache.addr()) else { return };
        // This call is one level; more means a callback: a call of this thread may be using
        // the cache, so it is freed when the outermost call returns (`InCall`).
        if DEPTH.with(Cell::get) > 1 {
            DOOMED.with(|d| d.borrow_mut().push(boxed));
            ANY_DOOMED.with(|a| a.set(true));
        } else {
            free_all(vec![boxed]);
        }
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lookup::{UDC_MISS, UDC_NEGATIVE, udc_lookup};
    use crate::ops::{udc_add_negative, udc_shrink};
    use crate::reval::{UDC_TTL_CONFIGURED, udc_set_entry_timeout};
    use crate::table::FIRST_GEN;
    use crate::types::udc_entry;

    type Table = HandleTable<udc_cache, SLOTS>;

    /// A new small cache, for the tests of the entry points.
    pub(crate) fn small_cache() -> *mut udc_cache {
        let mut cfg = udc_config::defaults();
        cfg.expected_entries = 16;
        let mut cache = ptr::null_mut();
        // SAFETY: `cfg` and `cache` are live locals.
        assert_eq!(unsafe { udc_cache_new(&cfg, &mut cache) }, 0);
        assert!(!cache.is_null());
        cache
    }

    /// Adds the negative name `name` in the root through `cache`.
    fn add(cache: *mut udc_cache, name: &[u8]) -> c_int {
        // SAFETY: the handle is checked, never dereferenced; `name` is a live slice.
        unsafe { udc_add_negative(cache, dcache::ROOT_INO, name.as_ptr().cast(), name.len()) }
    }

    /// `udc_lookup` of `name` in the root through `cache`.
    fn look(cache: *mut udc_cache, name: &[u8]) -> c_int {
        let mut e = udc_entry::default();
        // SAFETY: the handle is checked; `name` and `e` are live.
        unsafe { udc_lookup(cache, dcache::ROOT_INO, name.as_ptr().cast(), name.len(), &mut e) }
    }

    /// Every way `handle` must be refused with `EBADF`, changing nothing.
    fn refused(handle: *mut udc_cache) {
        // SAFETY: the handle is checked, never dereferenced.
        assert_eq!(unsafe { get(handle) }.err(), Some(libc::EBADF));
        assert_eq!(add(handle, b"via-stale"), -libc::EBADF);
        assert_eq!(look(handle, b"via-stale"), -libc::EBADF);
        // SAFETY: as above.
        assert_eq!(unsafe { udc_shrink(handle, 10) }, -libc::EBADF);
        // The handle before the other arguments: a timeout that is refused as well does not
        // hide the bad handle.
        let name = b"via-stale";
        // SAFETY: as above; `name` is a live slice.
        let set = unsafe {
            udc_set_entry_timeout(
                handle,
                dcache::ROOT_INO,
                name.as_ptr().cast(),
                name.len(),
                UDC_TTL_CONFIGURED,
            )
        };
        assert_eq!(set, -libc::EBADF);
    }

    #[test]
    fn a_destroyed_handle_is_ebadf_and_the_next_cache_works() {
        let a = small_cache();
        assert_eq!(add(a, b"a"), 0);
        // SAFETY: `a` is live and used by this thread only.
        unsafe { udc_cache_destroy(a) };
        let b = small_cache();
        assert_ne!(a, b);
        // `a`, and whatever handle b's slot had before or will have next: a destroyed handle
        // whose slot `b` now holds is refused whichever slot the claim took.
        let (index, generation) = Table::decode(b.addr()).unwrap();
        let other = if generation > FIRST_GEN { generation - 1 } else { generation + 2 };
        let near = [other, generation + 1].map(|g| handle(Table::token(index, g)));
        for stale in [a].into_iter().chain(near) {
            refused(stale);
        }
        assert_eq!(look(b, b"via-stale"), UDC_MISS); // nothing went to b
        assert_eq!(look(b, b"a"), UDC_MISS);
        assert_eq!(add(b, b"b"), 0);
        assert_eq!(look(b, b"b"), UDC_NEGATIVE);
        // SAFETY: `b` is live and used by this thread only.
        unsafe { udc_cache_destroy(b) };
        refused(b);
    }

    #[test]
    fn a_second_destroy_is_ignored_and_frees_nothing() {
        let a = small_cache();
        // SAFETY: `a` is live and used by this thread only; later destroys of it are ignored.
        unsafe { udc_cache_destroy(a) };
        let b = small_cache();
        assert_eq!(add(b, b"kept"), 0);
        // SAFETY: destroying a destroyed handle is ignored (the handle is checked, not read).
        unsafe {
            udc_cache_destroy(a);
            udc_cache_destroy(a);
        }
        assert_eq!(look(b, b"kept"), UDC_NEGATIVE);
        assert_eq!(add(b, b"more"), 0);
        // SAFETY: `b` is live and used by this thread only; the second destroy is ignored.
        unsafe {
            udc_cache_destroy(b);
            udc_cache_destroy(b);
        }
        refused(b);
    }

    #[test]
    fn garbage_is_ebadf_and_null_einval() {
        // SAFETY: the handle is checked, never dereferenced.
        assert_eq!(unsafe { get(ptr::null()) }.err(), Some(libc::EINVAL));
        assert_eq!(add(ptr::null_mut(), b"x"), -libc::EINVAL);
        let mut memory = [0u64; 8];
        let garbage = [
            memory.as_mut_ptr().cast::<udc_cache>(), // an address: even
            ptr::without_provenance_mut(1),          // generation 0: never issued
            ptr::without_provenance_mut(3),
            ptr::without_provenance_mut(usize::MAX),
            handle(Table::token(7, Table::GEN_MAX)),
        ];
        for g in garbage {
            refused(g);
            // SAFETY: garbage is ignored, and never read or written.
            unsafe { udc_cache_destroy(g) };
        }
        assert_eq!(memory, [0; 8]);
    }

    #[test]
    fn handles_made_and_destroyed_on_many_threads_never_cross() {
        const THREADS: usize = 4;
        const ROUNDS: usize = 100;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || {
                    let mut destroyed = Vec::new();
                    for r in 0..ROUNDS {
                        let cache = small_cache();
                        let name = format!("t{t}r{r}");
                        assert_eq!(add(cache, name.as_bytes()), 0);
                        // Each cache holds its own name only: a handle that reached another
                        // thread's cache, or this thread's last one, would see theirs.
                        assert_eq!(look(cache, name.as_bytes()), UDC_NEGATIVE);
                        if r > 0 {
                            assert_eq!(look(cache, format!("t{t}r{}", r - 1).as_bytes()), UDC_MISS);
                        }
                        // SAFETY: `cache` is live and used by this thread only.
                        unsafe { udc_cache_destroy(cache) };
                        destroyed.push(cache);
                        // Every handle destroyed stays refused, whatever the other threads made
                        // since in the slots it had.
                        for &stale in &destroyed {
                            assert_eq!(look(stale, b"x"), -libc::EBADF);
                        }
                    }
                });
            }
        });
    }
}
