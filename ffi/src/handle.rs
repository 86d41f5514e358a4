//! The cache handle: creation from a config struct, destruction, and the check every entry
//! point makes on the handle it is given.
//!
//! A `udc_cache *` given to C is not an address: it is an opaque token that names a slot of a
//! fixed global table ([`TABLE`], [`SLOTS`] slots) and the slot's generation at the time the
//! cache was made. Neither C nor this library ever dereferences it. Each slot holds a pointer
//! to the boxed cache (null while free) and a generation, bumped at every destroy, so a token
//! stays unique for the life of the process (a slot whose generation would no longer fit in a
//! token is retired, never reused):
//!
//! - `udc_cache_new` boxes the cache, claims a free slot (a compare-and-swap of its pointer
//!   from null to the box) and returns the token (index, generation); with every slot taken it
//!   returns `EMFILE`.
//! - [`get`] decodes a token and checks it: odd (an address of real, aligned memory is even),
//!   the index in range (it is masked to the table's size), the slot's pointer set and its
//!   generation the token's, else `EBADF` (NULL stays `EINVAL`). A destroyed handle whose slot
//!   was reused by a later `udc_cache_new` is caught, since the generation moved on; so is any
//!   garbage that is not exactly a live handle's token. The check only loads: the per-call path
//!   writes nothing shared.
//! - `udc_cache_destroy` checks the token the same way, bumps the generation (a
//!   compare-and-swap, so of two destroys of one handle only one gets further), empties the
//!   slot, then drops the box. A stale or repeated destroy is ignored.
//!
//! What the table cannot catch is a use of a handle *during* its destroy (the handle is then
//! live when checked, freed while used): `udc_cache_destroy` must be the last call on a handle.

use std::ffi::{c_char, c_int};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use dcache::{Config, Dcache, Timeouts, UnlinkPolicy};

use crate::args::{self, check_size, versioned};
use crate::callbacks::Backend;
use crate::errors::{CResult, fail, ffi_call, ffi_void};

/// How many caches may be live at once: the slots of the handle table (a power of two).
const SLOTS: usize = 1024;
/// Bits of a token that hold the slot index (above the low bit, which is always 1).
const INDEX_BITS: u32 = SLOTS.trailing_zeros();
/// The largest generation a token can carry (the bits above the index: 53 on 64-bit targets).
/// A slot whose generation would pass it is retired.
const GEN_MAX: usize = usize::MAX >> (1 + INDEX_BITS);
/// The generation of a slot never used: tokens never carry 0, so no small odd number (such
/// as `(udc_cache *)1`) is a live handle.
const FIRST_GEN: usize = 1;

/// One slot of the handle table.
struct Slot {
    /// The boxed cache (from `Box::into_raw`), null while the slot is free, or [`retired`].
    cache: AtomicPtr<udc_cache>,
    /// The generation of the slot: the one in the token of its current cache; bumped at every
    /// destroy, so tokens of earlier caches in the slot no longer match.
    generation: AtomicUsize,
}

impl Slot {
    const fn new() -> Self {
        Slot { cache: AtomicPtr::new(ptr::null_mut()), generation: AtomicUsize::new(FIRST_GEN) }
    }
}

/// The handle table. Its slots are claimed by `udc_cache_new` and emptied by
/// `udc_cache_destroy`; every other entry point only loads from it.
static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];

/// The pointer of a retired slot: not null, so never claimed again, and never dereferenced (its
/// generation is `GEN_MAX + 1`, which no token carries, so no token passes the check).
fn retired() -> *mut udc_cache {
    NonNull::dangling().as_ptr()
}

/// The token of the cache in slot `index` at generation `generation`: odd, hence never NULL
/// (and never the address of a real, aligned object).
fn token(index: usize, generation: usize) -> *mut udc_cache {
    debug_assert!(index < SLOTS && (FIRST_GEN..=GEN_MAX).contains(&generation));
    ptr::without_provenance_mut((generation << (1 + INDEX_BITS)) | (index << 1) | 1)
}

/// The slot index a token names (masked, so always below [`SLOTS`]) and the generation it
/// carries, or `EBADF` for a value that is no token (even: the low bit of every token is 1).
/// NULL is `EINVAL`.
fn decode(handle: *const udc_cache) -> Result<(usize, usize), c_int> {
    let bits = handle.addr();
    if bits == 0 {
        return Err(libc::EINVAL);
    }
    if bits & 1 == 0 {
        return Err(libc::EBADF);
    }
    Ok(((bits >> 1) & (SLOTS - 1), bits >> (1 + INDEX_BITS)))
}

/// The boxed cache of a live token, else `EBADF` (`EINVAL` for NULL). Loads only.
fn live(handle: *const udc_cache) -> Result<(&'static Slot, usize, NonNull<udc_cache>), c_int> {
    let (index, generation) = decode(handle)?;
    let slot = &TABLE[index];
    // Acquire: pairs with the Release of the compare-and-swap in `udc_cache_new` that put this
    // pointer in the slot, so the box's contents are visible here. It also orders the
    // generation load below after the destroy that emptied the slot before that claim (that
    // claim acquired the destroy's Release store, which came after its generation bump): a
    // pointer of a later cache is never seen with the generation of an earlier one.
    let cache = slot.cache.load(Ordering::Acquire);
    // Relaxed: ordered by the Acquire load above (see there); compared only.
    let current = slot.generation.load(Ordering::Relaxed);
    match NonNull::new(cache) {
        Some(cache) if current == generation && cache.as_ptr() != retired() => {
            Ok((slot, generation, cache))
        }
        _ => Err(libc::EBADF),
    }
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
/// A `udc_cache *` is a handle, not an address: never dereference it.
pub struct udc_cache {
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
        let dcache = Dcache::try_new(config.with_unlink_policy(unlink)).map_err(fail)?;
        Ok(udc_cache { dcache, backend: OnceLock::new() })
    }
}

/// The cache behind the handle `ptr`, checked: NULL is `EINVAL`; anything but a live handle's
/// token (garbage, destroyed) is `EBADF`. The handle is never dereferenced; the check only loads.
///
/// # Safety
///
/// If `ptr` is a live handle, no thread may destroy it during `'a` (the returned reference
/// would dangle).
pub(crate) unsafe fn get<'a>(ptr: *const udc_cache) -> Result<&'a udc_cache, c_int> {
    let (_, _, cache) = live(ptr)?;
    // SAFETY: a live slot's pointer came from `Box::into_raw` in `udc_cache_new` and stays
    // valid until `udc_cache_destroy` of this handle, which the caller rules out during 'a;
    // its contents are visible to this thread (the Acquire load in `live`).
    Ok(unsafe { cache.as_ref() })
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
/// The handle is an opaque token, never NULL and never reused: after `udc_cache_destroy`, the
/// old handle is refused with `-EBADF` by every function, even once later caches were made.
/// At most 1024 caches are live at once.
///
/// Returns 0, or `-EINVAL` (`out` NULL; `cfg->size` smaller than this library's
/// `sizeof(struct udc_config)`; an unknown `unlink_policy`; a size over 2^28), `-ENOMEM` (the
/// tables for that size, allocated now, do not fit: 32 bytes per expected entry, each table
/// rounded up to a power of two), `-EMFILE` (1024 caches are live already), with `*out` unchanged.
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
        let cache = Box::into_raw(Box::new(udc_cache::new(cfg)?));
        match claim(cache) {
            Some(handle) => {
                out.write(handle);
                Ok(0)
            }
            None => {
                // SAFETY: `cache` came from `Box::into_raw` above and no slot holds it.
                drop(unsafe { Box::from_raw(cache) });
                Err(libc::EMFILE)
            }
        }
    })
}

/// Puts `cache` in a free slot of the table and returns its token, or `None` if every slot is
/// taken.
fn claim(cache: *mut udc_cache) -> Option<*mut udc_cache> {
    TABLE.iter().enumerate().find_map(|(index, slot)| {
        // Release: publishes the box's contents to `live`, whose Acquire load reads this
        // pointer. Acquire: pairs with the Release swap in `udc_cache_destroy` that emptied
        // the slot, so its generation bump (made before that swap) is visible below.
        // Relaxed on failure: the slot is taken; nothing was read.
        let claimed = slot.cache.compare_exchange(
            ptr::null_mut(),
            cache,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
        // Relaxed: ordered by the Acquire of the claim (see there); the generation changes
        // only at a destroy of this slot's token, which no one holds before it is returned.
        claimed.is_ok().then(|| token(index, slot.generation.load(Ordering::Relaxed)))
    })
}

/// Frees a cache and everything in it. NULL is ignored, and so is anything that is not a live
/// handle (destroyed already, or garbage): a second destroy of a handle frees nothing, even
/// after another cache was made. No other thread may be inside a `udc_` call on the handle
/// during this call, and no callback may call it; after it, every use of the handle is refused
/// with `-EBADF`.
///
/// # Safety
///
/// `cache` must be NULL or a handle that no other thread uses during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn udc_cache_destroy(cache: *mut udc_cache) {
    ffi_void(|| {
        let Ok((slot, generation, _)) = live(cache) else { return };
        // Relaxed: only one of two destroys of the handle wins this compare-and-swap (a single
        // location's modification order); the swap below publishes the bump.
        let bumped = slot.generation.compare_exchange(
            generation,
            generation + 1,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        if bumped.is_err() {
            return;
        }
        // A generation no token can carry: the slot is retired instead of freed.
        let empty = if generation < GEN_MAX { ptr::null_mut() } else { retired() };
        // Release: pairs with the Acquire of the claim in `udc_cache_new` (and of `live`), so
        // whoever sees the slot empty (or retired) sees the generation bumped. Acquire: pairs
        // with the Release of the claim that published the box, which is freed below.
        let boxed = slot.cache.swap(empty, Ordering::AcqRel);
        // SAFETY: the slot held this handle's box (checked by `live`, and the generation
        // compare-and-swap made this call its only destroyer); it came from `Box::into_raw`
        // in `udc_cache_new`, no slot holds it any more, and no other thread uses it (the
        // caller's contract).
        drop(unsafe { Box::from_raw(boxed) });
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lookup::{UDC_MISS, UDC_NEGATIVE, udc_lookup};
    use crate::ops::{udc_add_negative, udc_shrink};
    use crate::types::udc_entry;

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
    }

    #[test]
    fn tokens_are_odd_and_decode_to_their_slot_and_generation() {
        for (index, generation) in [(0, FIRST_GEN), (SLOTS - 1, FIRST_GEN), (5, GEN_MAX)] {
            let t = token(index, generation);
            assert_eq!(t.addr() & 1, 1);
            assert_eq!(decode(t), Ok((index, generation)));
        }
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
        let (index, generation) = decode(b).unwrap();
        let other = if generation > FIRST_GEN { generation - 1 } else { generation + 2 };
        for stale in [a, token(index, other), token(index, generation + 1)] {
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
            token(7, GEN_MAX),
        ];
        for g in garbage {
            refused(g);
            // SAFETY: garbage is ignored, and never read or written.
            unsafe { udc_cache_destroy(g) };
        }
        assert_eq!(memory, [0; 8]);
    }

    #[test]
    fn a_slot_whose_generation_runs_out_is_retired() {
        let cache = small_cache();
        let (index, _) = decode(cache).unwrap();
        let slot = &TABLE[index];
        // Relaxed: this thread holds the slot (the token is not shared); the handle it makes
        // is the slot's last.
        slot.generation.store(GEN_MAX, Ordering::Relaxed);
        refused(cache);
        let last = token(index, GEN_MAX);
        assert_eq!(add(last, b"x"), 0);
        // SAFETY: `last` is live and used by this thread only.
        unsafe { udc_cache_destroy(last) };
        refused(last);
        // Acquire: pairs with the destroy's Release swap (the same thread: for form's sake).
        assert_eq!(slot.cache.load(Ordering::Acquire), retired());
        // Relaxed: ordered by the Acquire load above.
        assert_eq!(slot.generation.load(Ordering::Relaxed), GEN_MAX + 1);
        let other = small_cache();
        assert_ne!(decode(other).unwrap().0, index); // never claimed again
        // SAFETY: `other` is live and used by this thread only.
        unsafe { udc_cache_destroy(other) };
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
