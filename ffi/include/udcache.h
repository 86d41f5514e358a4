/*
 * udcache.h -- libudcache, a userspace directory-entry cache for C filesystems (FUSE above all).
 *
 * Link with `pkg-config --cflags --libs udcache`. Names are `udc_`/`UDC_`-prefixed.
 *
 * CONVENTIONS
 *   - Errors are negative errno values (-EINVAL, -ENOENT, -EEXIST, -ENOTDIR, -ENAMETOOLONG,
 *     -ESTALE, -EBADF, -ENODATA, -ENOSYS, -EIO, -ENOTRECOVERABLE, ...). A refused call changes
 *     nothing. What each function returns that is not an error is in RESULTS below.
 *   - Names are (const char *name, size_t len) pairs, not NUL-terminated. len 0, a NULL name,
 *     a '/' or NUL inside, "." and "..": -EINVAL. len > 255: -ENAMETOOLONG, however large
 *     (over PTRDIFF_MAX too: a name's length is checked before anything else).
 *   - Every other length (a path, a buffer, an array of structs) whose bytes would span more
 *     than PTRDIFF_MAX is -EINVAL (a path's components over 255 bytes are -ENAMETOOLONG).
 *   - An inode number that is not cached is -ESTALE everywhere (FUSE servers map it to ESTALE
 *     or ENOENT themselves); a parent that is not a directory is -ENOTDIR.
 *   - A udc_cache * is a handle, not an address: the library never dereferences it, so any
 *     value may be passed where one is expected. NULL is -EINVAL; anything else that is not a
 *     live handle (garbage, or a destroyed one, even after later caches were made) is -EBADF
 *     and changes nothing, and udc_cache_destroy ignores it. Handles are never reused. The one
 *     rule the library cannot check is THREADS': no other thread may destroy a handle while a
 *     call uses it. That is all the `# Safety` sections below ask of `cache`. At most 1024
 *     caches are live at once (then -EMFILE).
 *   - Structs that may grow in later versions start with a `size` field: set it to
 *     sizeof(the struct) before passing it (udc_config_init does it for udc_config).
 *   - -EIO: a callback broke its contract (see CALLBACKS); nothing was filed, the cache is
 *     intact. -ENOTRECOVERABLE: a bug in the library (a Rust panic, caught: none unwinds into
 *     C); later calls neither deadlock nor crash, but the cache's contents may be
 *     inconsistent: destroy the cache and make a new one. Nothing else returns
 *     -ENOTRECOVERABLE. Running out of memory aborts the process.
 *
 * RESULTS (what each function returns that is not an error; errors are < 0)
 *   udc_lookup, udc_peek   UDC_MISS (0), UDC_POSITIVE (1: *out filled), UDC_NEGATIVE (2)
 *   udc_resolve            UDC_POSITIVE (1: *out filled, one lookup counted), UDC_NEGATIVE (2);
 *                          never UDC_MISS
 *   udc_walk, udc_walk_as  the walk's end, also in out->kind: UDC_WALK_MISS (0), _FOUND (1),
 *                          _NEGATIVE (2), _SYMLINK (3), _NOTDIR (4), _DENIED (5, udc_walk_as)
 *   udc_readdir            0: more may follow; 1: the end of the directory (*count set both
 *                          times, and may be 0 at the end)
 *   udc_children           how many children were visited
 *   udc_shrink             how many entries were evicted, at most n
 *   udc_stats_format       the length of the whole text, as snprintf
 *   udc_access             0: allowed (refused is the error -EACCES)
 *   udc_cached_access      UDC_MISS (0), UDC_ACCESS_ALLOWED (1), UDC_ACCESS_DENIED (2)
 *   udc_store_access       1: filed; 0: not filed (a revocation or another file came after
 *                          the stamp)
 *   every other int one    0
 *   udc_version returns a static string; udc_config_init and udc_cache_destroy return nothing.
 *   The callbacks answer: lookup 1 (exists) or 0 (does not); readdir 0; revalidate a
 *   UDC_REVAL_*; access a mask of UDC_MAY_* bits (0 to 7); each may return -errno instead.
 *
 * THREADS
 *   - Every function is thread-safe on one cache handle, from any number of threads at once,
 *     except udc_cache_destroy, which must be the last call on a handle: no other thread may
 *     be inside a udc_ function on it. On the calling thread itself it may run inside a
 *     callback (see CALLBACKS). udc_set_ops is meant to be called once, before the handle is
 *     shared.
 *   - udc_lookup, udc_walk and udc_getattr take no lock. Most writers (udc_add,
 *     udc_add_negative, udc_setattr, udc_unlink and udc_invalidate of a non-directory, a
 *     udc_forget that leaves a lookup count above 0) lock only the names and inodes they change.
 *     But each cache has one rename lock, which serializes udc_rename, udc_unlink and
 *     udc_invalidate of a directory, and every udc_forget that takes a count to 0. While one of
 *     these (except the last forget of a non-directory) holds it, a rename section is open:
 *     any udc_walk or udc_walk_as that overlaps a section walks again holding the rename lock
 *     (the locked fallback, udc_stats.walk_fallbacks), so it waits for those writers.
 *
 * CALLBACKS (struct udc_ops, and udc_children's visitor)
 *   - Each runs on the thread that called the udc_ function that needed it:
 *       lookup      udc_resolve (a miss, or a name the revalidate callback found invalid)
 *       readdir     udc_readdir
 *       revalidate  may_block = 1: udc_resolve, udc_walk_as (a name no longer trusted: its
 *                   timeout passed, or it is negative and its directory changed)
 *                   may_block = 0: udc_walk_as, inside its lockless walk
 *       access      udc_access; udc_walk_as with a credential (a search right not cached)
 *       visit       udc_children (its argument, not a member of udc_ops)
 *     udc_lookup, udc_walk, udc_cached_access and the others never call a callback. Several
 *     callbacks may run at once on different threads (never two lookups or revalidations of
 *     the same name, or two readdirs of the same range: concurrent misses wait for the one
 *     call).
 *   - A callback runs with no cache lock held, so it may block, and it may call any udc_
 *     function on the same cache except the call that is waiting for it (udc_resolve or
 *     udc_walk_as of the same parent and name; udc_readdir of the same directory), which would
 *     wait for itself. That includes udc_cache_destroy, of its own cache or another: the
 *     handle is refused with -EBADF from that moment, and the cache is freed when the
 *     outermost udc_ call of the thread returns (the call that ran the callback finishes
 *     first, with what the callback answered). The udc_fill a readdir callback receives is
 *     valid only until it returns.
 *   - Except revalidate with may_block = 0: it runs inside a lockless walk (no lock held, but
 *     the cache cannot free memory while it runs). It must answer from what it has at hand,
 *     without blocking or I/O, return UDC_REVAL_NEEDS_BLOCK if it cannot tell (it is then asked
 *     again with may_block = 1), and call no udc_ function but udc_lookup, udc_walk and
 *     udc_getattr.
 *   - A callback's -errno is passed on by the call that ran it as it is (and not cached),
 *     with two exceptions: the readdir callback's -EINVAL or -ESTALE at a cookie other than 0
 *     is udc_readdir's -EINVAL (a cookie it cannot resume at), and -ENOTRECOVERABLE, which
 *     the library keeps for its own bugs, is taken as a broken contract. A broken contract is
 *     reported as -EIO: an answer out of range (see RESULTS), a lookup entry with inode 0 or
 *     an unknown type, or a type other than the cached inode's, a readdir that returns 0
 *     without udc_fill_done.
 *   - ctx and the callbacks must therefore be safe to use from several threads at once.
 *
 * NEGATIVE ENTRIES
 *   A negative entry ("this name does not exist": udc_add_negative, udc_unlink, a lookup
 *   callback's 0 in udc_resolve) is kept within bounds per hash bucket, so a flood of misses
 *   cannot fill memory: at most 3 unused negatives in a row that no lookup has hit since they
 *   were filed (the run rule), and at most udc_config.negative_cap unused negatives in all
 *   (default 6: those a lookup hit are passed over by the run rule once, so a bucket of
 *   reused names holds up to 6; a flood of names used once settles at 3). Admission: a new
 *   negative that would make a bucket's run of such negatives longer than 3 is dropped at
 *   once rather than pushing an older one out (which a workload may reuse); filed again
 *   before the bucket drops another negative, it is kept and counts as reused. So after a
 *   flood, a name filed negative once may be missed at the next lookup (UDC_MISS): the call
 *   still returns 0, and the second filing sticks.
 *
 * DECLARATIONS
 *   Grouped by topic, each group under a DOC: comment: handles and configuration; lookups,
 *   walks and attributes; changes; readdir; revalidation and access; the filesystem's
 *   callbacks; statistics.
 */

#ifndef UDCACHE_H
#define UDCACHE_H

/* Generated by cbindgen from ffi/src with ffi/cbindgen.toml, its declarations grouped by
 * topic by ffi/tests/header.rs. Do not edit: change the Rust source (or the groups, TOPICS in
 * ffi/tests/header.rs) and run
 * `UDCACHE_BLESS=1 cargo test -p udcache-ffi --release --test header`. */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

/**
 * DOC: Handles and configuration
 *
 * A cache is made by udc_cache_new from a udc_config (udc_config_init, then the fields
 * to change) and freed by udc_cache_destroy. It starts with the root directory,
 * UDC_ROOT_INO, cached; udc_set_ops (under "The filesystem's callbacks") gives it
 * the filesystem behind it.
 */

/**
 * The library version as a NUL-terminated string, e.g. `"0.1.0"`. The pointer refers to
 * static storage: never free it.
 */
const char *udc_version(void);

/**
 * A directory-entry cache (opaque). Made by `udc_cache_new`, freed by `udc_cache_destroy`.
 * A `udc_cache *` is a handle, not an address: never dereference it. Any value may be passed
 * where one is expected; anything but a live handle is refused (see CONVENTIONS).
 */
typedef struct udc_cache udc_cache;

/**
 * The inode number of the root directory (FUSE's `FUSE_ROOT_ID`). Every cache starts with it.
 */
#define UDC_ROOT_INO 1

/**
 * What an unlinked name leaves behind (`udc_config.unlink_policy`).
 */
typedef enum udc_unlink_policy {
    /**
     * The name becomes a negative entry: the next lookup is answered "does not exist"
     * without asking the filesystem (Linux's default, `fs.dentry-negative = 0`), as long as
     * the bounds of negative entries keep it (see NEGATIVE ENTRIES and `udc_unlink`).
     */
    UDC_UNLINK_NEGATIVE = 0,
    /**
     * The entry is dropped: the next lookup misses (`fs.dentry-negative = 1`).
     */
    UDC_UNLINK_DROP = 1,
} udc_unlink_policy;

/**
 * How a cache is sized and behaves. Fill it with `udc_config_init`, then change fields.
 */
typedef struct udc_config {
    /**
     * `sizeof(struct udc_config)`, set by `udc_config_init`.
     */
    size_t size;
    /**
     * Sizes the tables for about this many entries; 0 = 65536. At most 2^28.
     */
    size_t expected_entries;
    /**
     * Hash buckets of the name table: 0 = from `expected_entries`; else rounded up to a
     * power of two. At most 2^28.
     */
    size_t buckets;
    /**
     * Unused negative entries kept per bucket: 0 = the default (6); `UINT32_MAX` = no cap
     * (the run rule alone bounds them).
     */
    uint32_t negative_cap;
    /**
     * What unlink leaves behind (`enum udc_unlink_policy`).
     */
    uint32_t unlink_policy;
    /**
     * Page budget of the readdir cache, all directories together; 0 = the default (4096).
     * At most 2^28.
     */
    size_t readdir_pages;
    /**
     * Entries asked of the readdir callback per call (one cached page); 0 = the default
     * (128). At most 65536.
     */
    size_t readdir_page_entries;
    /**
     * How long a positive entry is trusted before the revalidate callback is asked again, in
     * nanoseconds (FUSE's `entry_valid`): `UINT64_MAX` (set by `udc_config_init`) = until told
     * otherwise; 0 = ask at every use. A revalidate answer or `udc_set_entry_timeout` may set
     * another for one entry.
     */
    uint64_t entry_timeout_ns;
    /**
     * The same for a negative entry (also untrusted once its directory changes:
     * `udc_dir_changed`).
     */
    uint64_t negative_timeout_ns;
    /**
     * How long an access result is trusted before the access callback is asked again (also
     * forgotten by a mode, owner or group change through `udc_setattr`, and by
     * `udc_acl_changed`); `UINT64_MAX` = until then.
     */
    uint64_t access_timeout_ns;
} udc_config;

/**
 * Fills `*cfg` with the defaults and sets `cfg->size`. NULL is ignored.
 *
 * # Safety
 *
 * `cfg` must be NULL or point to writable memory for a `udc_config`.
 */
void udc_config_init(struct udc_config *cfg);

/**
 * Makes a cache holding only the root directory (`UDC_ROOT_INO`) and stores its handle in
 * `*out`. `cfg` may be NULL (the defaults).
 *
 * The handle is an opaque token, never NULL and never reused: after `udc_cache_destroy`, the
 * old handle is refused with `-EBADF` by every function, even once later caches were made.
 * At most 1024 caches are live at once. Another thread may use the handle once it got it
 * in a way ordered after this call returned (a mutex, thread creation, a release store read
 * by an acquire load), as it would a pointer to memory: a handle read through an unordered
 * (relaxed) channel may still be refused with `-EBADF` there.
 *
 * Returns 0, or `-EINVAL` (`out` NULL; `cfg->size` smaller than this library's
 * `sizeof(struct udc_config)`; an unknown `unlink_policy`; a size over 2^28, or
 * `readdir_page_entries` over 65536), `-ENOMEM` (the tables for that size, allocated now, do
 * not fit: 32 bytes per expected entry, each table rounded up to a power of two), `-EMFILE`
 * (1024 caches are live already), with `*out` unchanged.
 *
 * # Safety
 *
 * `cfg` must be NULL or point to a `udc_config`; `out` must be NULL or point to writable
 * memory for a pointer.
 */
int udc_cache_new(const struct udc_config *cfg, struct udc_cache **out);

/**
 * Frees a cache and everything in it. NULL is ignored, and so is anything that is not a live
 * handle (destroyed already, or garbage): a second destroy of a handle frees nothing, even
 * after another cache was made. No other thread may be inside a `udc_` call on the handle
 * during this call. A callback may call it, for its own cache or another (see CALLBACKS): the
 * handle is refused from then on, and the cache is freed when the thread's outermost `udc_`
 * call (the one that ran the callback) returns. After it, every use of the handle is refused
 * with `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread uses during the call (see CONVENTIONS).
 */
void udc_cache_destroy(struct udc_cache *cache);

/**
 * DOC: Lookups, walks and attributes
 *
 * Answers from what is cached: one name (udc_lookup, udc_peek), a path (udc_walk),
 * a directory's positive children (udc_children), an inode's attributes
 * (udc_getattr). None of them calls a callback but udc_resolve, which asks the
 * lookup callback on a miss and files its answer.
 */

/**
 * `udc_lookup`, `udc_resolve`: nothing is cached under the name; ask the filesystem.
 */
#define UDC_MISS 0

/**
 * `udc_lookup`, `udc_resolve`: the name exists; `*out` is filled.
 */
#define UDC_POSITIVE 1

/**
 * `udc_lookup`, `udc_resolve`: the name is known not to exist (a negative entry).
 */
#define UDC_NEGATIVE 2

/**
 * The type of a file, in `udc_entry.type`, `udc_dirent.type` and `udc_fill_add`.
 */
typedef enum udc_type {
    /**
     * Not known (only in directory listings; `udc_add` refuses it).
     */
    UDC_TYPE_UNKNOWN = 0,
    /**
     * A directory: has children, at most one name, and a parent (`..`).
     */
    UDC_TYPE_DIR = 1,
    /**
     * A regular file.
     */
    UDC_TYPE_REG = 2,
    /**
     * A symbolic link: `udc_walk` stops on it and reports it.
     */
    UDC_TYPE_LNK = 3,
    /**
     * Anything else: device, FIFO, socket.
     */
    UDC_TYPE_OTHER = 4,
} udc_type;

/**
 * What a name resolves to: an inode number, its type, and a word of the filesystem's own.
 */
typedef struct udc_entry {
    /**
     * The inode number (FUSE node id); never 0.
     */
    uint64_t ino;
    /**
     * The file type (`enum udc_type`).
     */
    uint32_t type;
    /**
     * The filesystem's own word (an index, a handle, a pointer cast to `uint64_t`): kept with
     * the inode, never interpreted.
     */
    uint64_t fs_data;
} udc_entry;

/**
 * Looks `name` up in directory `parent` in the cache only: lockless (a hit writes nothing
 * shared but one bit, once), never calls the filesystem, counts no lookup.
 *
 * Returns `UDC_POSITIVE` (and fills `*out`), `UDC_NEGATIVE`, `UDC_MISS`, or `-EINVAL` (NULL
 * `cache` or `out`; a bad name), `-ENAMETOOLONG`, `-ESTALE` (`parent` not cached),
 * `-ENOTDIR`, `-EBADF` (not a live handle).
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
 * must point to `len` readable bytes; `out` must be NULL or point to a writable `udc_entry`.
 */
int udc_lookup(struct udc_cache *cache,
               uint64_t parent,
               const char *name,
               size_t len,
               struct udc_entry *out);

/**
 * `udc_lookup` that is no use of the entry: its referenced bit is left as it is, so what
 * `udc_shrink` and the negative-trimming rules see of it does not change; nothing is written.
 * For a caller that checks what the cache holds without acting on the name. Same answers,
 * same errors, same contract as `udc_lookup`.
 *
 * # Safety
 *
 * As `udc_lookup`.
 */
int udc_peek(struct udc_cache *cache,
             uint64_t parent,
             const char *name,
             size_t len,
             struct udc_entry *out);

/**
 * The filesystem's lookup, called by `udc_resolve` on a miss: return 1 and fill `*out` if
 * `name` exists in directory `parent`, 0 if it does not (filed as a negative entry, under
 * the admission rule of NEGATIVE ENTRIES), or `-errno` (returned by `udc_resolve` as it is,
 * not cached; see CALLBACKS). `name` is not NUL-terminated. A return above 1, or an `*out`
 * with inode 0 or an unknown type, is a broken contract: `-EIO`.
 */
typedef int (*udc_lookup_fn)(void *ctx,
                             uint64_t parent,
                             const char *name,
                             size_t len,
                             struct udc_entry *out);

/**
 * The FUSE lookup: the cached answer, else the lookup callback's (filed in the cache, a
 * negative answer as a negative entry, bounded and admitted as `udc_add_negative`'s: after a
 * flood of negatives in its bucket, a name's first negative answer is dropped at once, so
 * the callback is asked again at its next miss, and its second is kept; see NEGATIVE
 * ENTRIES). A cached name no longer trusted (its timeout passed,
 * or it is negative and its directory changed) is first revalidated (the revalidate callback,
 * `may_block` 1). Concurrent misses of one name make one callback call.
 * Every `UDC_POSITIVE` counts one lookup of `out->ino` (balance it with `udc_forget`). A miss
 * in a directory whose complete listing is cached (see `udc_readdir`) is answered from it:
 * `UDC_NEGATIVE` without a callback call or a negative entry — only while negatives never
 * time out (`negative_timeout_ns` `UINT64_MAX`, the default): a listing has no age, so with a
 * finite timeout the callback is asked. For a walk's `UDC_WALK_MISS` the answer stands for
 * that component: `UDC_NEGATIVE` ends the walk, `UDC_POSITIVE` lets it go on from `out->ino`
 * (see `UDC_WALK_MISS`); `udc_walk` and `udc_lookup` may still miss the name afterwards.
 *
 * Returns `UDC_POSITIVE` (and fills `*out`), `UDC_NEGATIVE`, or `-errno`: the callback's own
 * error (not cached), `-ENOSYS` on a miss without a lookup callback, `-EIO` for a callback
 * that broke its contract, `-EMLINK` (see below), and the errors of `udc_lookup`. Never
 * `UDC_MISS`.
 *
 * A directory that the lookup callback names here while the cache holds it under another
 * name was renamed behind the cache (on the server): the cache moves its name here, with
 * what is cached below it, and drops the old name (a later lookup of it asks the callback).
 * If `parent` is cached below that directory, the cached name just below the directory on
 * the way is dropped first (the answer shows it stale), so no cycle of names forms.
 * `-EMLINK`: the callback answered with the root directory, or with `parent` itself, or the
 * directory's name kept changing (other threads renaming it) while the cache moved it;
 * nothing was filed: call again.
 *
 * # Safety
 *
 * As `udc_lookup`.
 */
int udc_resolve(struct udc_cache *cache,
                uint64_t parent,
                const char *name,
                size_t len,
                struct udc_entry *out);

/**
 * `udc_walk_result.kind`: the component at `offset` is not cached in directory `parent` (or
 * no longer trusted). Resolve it with `udc_resolve(parent, component)`, whose answer stands
 * for the component at that instant: `UDC_NEGATIVE` ends the walk (the path does not exist;
 * a complete cached listing answers so without a negative entry, so walking the same path
 * again would miss there again, for ever); `UDC_POSITIVE` names the inode (one lookup
 * counted): walk the rest of the path, after the component, from it.
 */
#define UDC_WALK_MISS 0

/**
 * `udc_walk_result.kind`: every component resolved; `entry` is what the path names.
 */
#define UDC_WALK_FOUND 1

/**
 * `udc_walk_result.kind`: the component at `offset` is known not to exist.
 */
#define UDC_WALK_NEGATIVE 2

/**
 * `udc_walk_result.kind`: `entry` is a symlink met before the last component (or last, with
 * a trailing `/`); the rest of the path starts at `offset`. Read the link and walk again (the
 * cache holds no link targets).
 */
#define UDC_WALK_SYMLINK 3

/**
 * `udc_walk_result.kind`: `entry` is not a directory but the component at `offset` needed
 * one (`offset` is the path's length for a trailing `/`).
 */
#define UDC_WALK_NOTDIR 4

/**
 * `udc_walk_result.kind` (`udc_walk_as` only): the credential may not search directory
 * `parent` (`EACCES`); the component at `offset` was not looked up.
 */
#define UDC_WALK_DENIED 5

/**
 * How a `udc_walk` or `udc_walk_as` ended. Set `size` before the call.
 */
typedef struct udc_walk_result {
    /**
     * `sizeof(struct udc_walk_result)`.
     */
    size_t size;
    /**
     * `UDC_WALK_FOUND`, `_NEGATIVE`, `_MISS`, `_SYMLINK`, `_NOTDIR` or (`udc_walk_as`)
     * `_DENIED`.
     */
    uint32_t kind;
    /**
     * FOUND, SYMLINK, NOTDIR: the inode.
     */
    struct udc_entry entry;
    /**
     * MISS: the directory to look the component up in; DENIED: the directory that may not be
     * searched.
     */
    uint64_t parent;
    /**
     * NEGATIVE, MISS, NOTDIR, DENIED: where the component starts in the path (bytes);
     * SYMLINK: where the rest of the path starts.
     */
    size_t offset;
} udc_walk_result;

/**
 * Resolves `path` (`len` bytes, not NUL-terminated) from directory `root`, one lockless
 * lookup per component, validated as a whole against concurrent renames (a walk that
 * overlaps one walks again under the rename lock). `.` stays, `..` climbs (from the root too:
 * the root's parent is itself), empty components are skipped, a trailing `/` asks for a
 * directory (`file/` is `UDC_WALK_NOTDIR`; `link/` is `UDC_WALK_SYMLINK` with the rest at
 * the slash); symlinks are reported, not followed. Counts no lookup. A `UDC_WALK_MISS` is
 * resolved with `udc_resolve`, whose answer decides the component (see `UDC_WALK_MISS`).
 *
 * Returns `out->kind` (>= 0; see `UDC_WALK_*`), or `-EINVAL` (NULL `cache`, `out` or `path`
 * with `len > 0`; `len` over `PTRDIFF_MAX`; a component with a NUL, or `out->size` too
 * small), `-ENAMETOOLONG` (a component over 255 bytes), `-ESTALE` (`root` not cached, or
 * the directory a `..` climbs to is no longer cached), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `path`
 * must point to `len` readable bytes; `out` must be NULL or point to a writable `udc_walk_result`
 * whose `size` is set.
 */
int udc_walk(struct udc_cache *cache,
             uint64_t root,
             const char *path,
             size_t len,
             struct udc_walk_result *out);

/**
 * Visitor of `udc_children`: called once per child with its name (`len` bytes, not
 * NUL-terminated) and entry; return 0 to go on, non-zero to stop.
 */
typedef int (*udc_child_fn)(void *ctx, const char *name, size_t len, const struct udc_entry *entry);

/**
 * Visits the cached positive children of directory `dir`: a snapshot taken first, in no
 * particular order, costing O(positive children) however many negative entries the
 * directory has. `visit` runs on the calling thread with no cache lock held and may call any
 * `udc_` function, `udc_cache_destroy` included, as a callback may (see CALLBACKS: a
 * destroyed cache is freed when this call returns, and the snapshot is visited to its end
 * or until `visit` stops it); it may be NULL, to count the children.
 *
 * Returns the number of children visited (the one whose visit returned non-zero included),
 * or `-ESTALE` (`dir` not cached), `-ENOTDIR`, `-EINVAL`, `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS);
 * `visit` must be NULL or a function of the documented type.
 */
int udc_children(struct udc_cache *cache, uint64_t dir, udc_child_fn visit, void *ctx);

/**
 * The attributes of an inode, shaped like `struct stat`. Times are seconds and nanoseconds
 * since the epoch.
 */
typedef struct udc_attr {
    /**
     * The inode number (set by `udc_getattr`; ignored by `udc_setattr`).
     */
    uint64_t ino;
    /**
     * Size in bytes.
     */
    uint64_t size;
    /**
     * 512-byte blocks allocated.
     */
    uint64_t blocks;
    /**
     * Type and permission bits (`st_mode`).
     */
    uint32_t mode;
    /**
     * Hard links.
     */
    uint32_t nlink;
    /**
     * Owner.
     */
    uint32_t uid;
    /**
     * Group.
     */
    uint32_t gid;
    /**
     * Device number, for device files.
     */
    uint32_t rdev;
    /**
     * Preferred I/O block size.
     */
    uint32_t blksize;
    /**
     * Last access, seconds.
     */
    int64_t atime_sec;
    /**
     * Last modification, seconds.
     */
    int64_t mtime_sec;
    /**
     * Last status change, seconds.
     */
    int64_t ctime_sec;
    /**
     * Last access, nanoseconds.
     */
    uint32_t atime_nsec;
    /**
     * Last modification, nanoseconds.
     */
    uint32_t mtime_nsec;
    /**
     * Last status change, nanoseconds.
     */
    uint32_t ctime_nsec;
} udc_attr;

/**
 * Copies the cached attributes of `ino` into `*out`: one consistent snapshot, read without
 * locks while another thread may be setting them.
 *
 * Returns 0, or `-ENODATA` (never set, or expired), `-ESTALE` (`ino` not cached), `-EINVAL`
 * (NULL `out`), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `out`
 * must be NULL or point to a writable `udc_attr`.
 */
int udc_getattr(struct udc_cache *cache, uint64_t ino, struct udc_attr *out);

/**
 * DOC: Changes
 *
 * What the filesystem did, told to the cache: a name added (positive or negative),
 * unlinked, renamed or invalidated; attributes set; lookup counts counted and
 * forgotten (FUSE's forget); and entries evicted on demand (udc_shrink).
 */

/**
 * Adds the name `name` in directory `parent` for the inode `*e` (turning a negative entry of
 * that name positive) and counts one lookup of the inode, as a FUSE reply to lookup, create,
 * mkdir, mknod, symlink or link does. If `e->ino` is cached, that inode gets a new name (a
 * hard link) and keeps its `fs_data`.
 *
 * Returns 0, or `-EINVAL` (NULL pointer; bad name; `e->ino` 0; `e->type` unknown or not the
 * cached inode's type), `-ENAMETOOLONG`, `-ESTALE` (`parent` not cached), `-ENOTDIR`,
 * `-EEXIST` (the name exists), `-EMLINK` (a second name for a directory, or the root),
 * `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
 * must point to `len` readable bytes; `e` must be NULL or point to a `udc_entry`.
 */
int udc_add(struct udc_cache *cache,
            uint64_t parent,
            const char *name,
            size_t len,
            const struct udc_entry *e);

/**
 * Files `name` in directory `parent` as a negative entry ("does not exist"), under the
 * bounds and the admission rule of NEGATIVE ENTRIES: negatives are bounded per hash bucket
 * (a flood of names used once settles at 3 per bucket, names a lookup reuses at up to
 * `udc_config.negative_cap`, default 6), so this one may be evicted at any time; and after
 * a flood, a name filed for the first time is dropped at once, the second filing kept. So a
 * `udc_lookup` right after this call may answer `UDC_MISS`.
 *
 * Returns 0 (also if it was remembered already, or dropped by the admission rule), or `-EINVAL`,
 * `-ENAMETOOLONG`, `-ESTALE`, `-ENOTDIR`, `-EEXIST` (the name is positive), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
 * must point to `len` readable bytes.
 */
int udc_add_negative(struct udc_cache *cache, uint64_t parent, const char *name, size_t len);

/**
 * Removes the name `name` from directory `parent` (unlink, rmdir): the entry turns negative
 * or is dropped, as `udc_config.unlink_policy` says. A negative it turns into is bounded and
 * admitted as `udc_add_negative`'s (NEGATIVE ENTRIES: after a flood of negatives in its
 * bucket it is dropped at once, and the next lookup misses). The inode stays cached until
 * `udc_forget` takes its lookup count to 0.
 *
 * Returns 0, or `-EINVAL`, `-ENAMETOOLONG`, `-ESTALE`, `-ENOTDIR`, `-ENOENT` (no positive
 * entry), `-EBADF`; each changes nothing. After a refusal of a name the filesystem did
 * remove (its entry was never made, or was shrunk away), call `udc_invalidate` on it: the
 * directory's cached listing may still name it.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
 * must point to `len` readable bytes.
 */
int udc_unlink(struct udc_cache *cache, uint64_t parent, const char *name, size_t len);

/**
 * `udc_rename` flag: fail with `-EEXIST` if the target name exists (Linux's
 * `RENAME_NOREPLACE`).
 */
#define UDC_RENAME_NOREPLACE 1

/**
 * `udc_rename` flag: swap the two names, which must both exist (Linux's `RENAME_EXCHANGE`).
 */
#define UDC_RENAME_EXCHANGE 2

/**
 * Moves the name `oldname` in `oldparent` to `newname` in `newparent` (a positive target is
 * replaced), atomically for every concurrent `udc_walk`. `flags`: 0, `UDC_RENAME_NOREPLACE`
 * or `UDC_RENAME_EXCHANGE`. Renaming a name onto itself or another name of the same inode
 * does nothing (with `UDC_RENAME_NOREPLACE` it is `-EEXIST`, as for `renameat2`).
 * Not checked (the filesystem's job): that a directory is not moved below itself.
 *
 * Returns 0, or `-EINVAL` (unknown or both flags; bad name), `-ENAMETOOLONG`, `-ESTALE`,
 * `-ENOTDIR`, `-ENOENT` (no positive source, or no positive target with EXCHANGE), `-EEXIST`
 * (positive target with NOREPLACE), `-EBADF`; each changes nothing. After a refusal of a
 * rename the filesystem did make, call `udc_invalidate` on both names, as for `udc_unlink`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS);
 * `oldname` and `newname` must point to `oldlen` and `newlen` readable bytes.
 */
int udc_rename(struct udc_cache *cache,
               uint64_t oldparent,
               const char *oldname,
               size_t oldlen,
               uint64_t newparent,
               const char *newname,
               size_t newlen,
               unsigned int flags);

/**
 * Drops the cached entry `name` in `parent` (positive or negative) and, for a directory,
 * every cached entry below it (the filesystem learnt that its copy is out of date). Inodes
 * stay cached until `udc_forget`. The directory's cached listing is marked changed, also
 * when no entry is cached for the name (whatever the listing says of it: a page may name it,
 * a complete listing answers that it does not exist, a readdir running now may complete the
 * listing without a name just created).
 *
 * Returns 0, or `-ENOENT` (nothing cached that could answer for the name: no entry, and no
 * listing of `parent`; nothing changed), `-EINVAL`, `-ENAMETOOLONG`, `-ESTALE`, `-ENOTDIR`,
 * `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
 * must point to `len` readable bytes.
 */
int udc_invalidate(struct udc_cache *cache, uint64_t parent, const char *name, size_t len);

/**
 * Caches `*attr` for `ino`, valid for `valid_ns` nanoseconds from now on the cache's
 * monotonic clock (0: expired at once, which drops what was cached; `UINT64_MAX`: forever).
 * A change of mode, owner or group forgets the inode's cached access results (see
 * `udc_access`).
 *
 * Returns 0, or `-ESTALE`, `-EINVAL` (NULL `attr`), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `attr`
 * must be NULL or point to a `udc_attr`.
 */
int udc_setattr(struct udc_cache *cache,
                uint64_t ino,
                const struct udc_attr *attr,
                uint64_t valid_ns);

/**
 * Counts one more lookup of `ino` (the filesystem replied to the kernel with it outside
 * `udc_resolve` and `udc_add`).
 *
 * Returns 0, or `-ESTALE` (`ino` not cached), `-EINVAL` (`cache` NULL), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
 */
int udc_count_lookup(struct udc_cache *cache, uint64_t ino);

/**
 * FUSE forget: the kernel dropped `nlookup` of its lookups of `ino`. At 0 the inode leaves
 * the cache with every name of it. `nlookup` 0 changes nothing.
 *
 * Returns 0, or `-ESTALE` (`ino` not cached), `-EINVAL` (more than counted; the root, which is
 * never forgotten), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
 */
int udc_forget(struct udc_cache *cache, uint64_t ino, uint64_t nlookup);

/**
 * Evicts up to `n` unused entries: negatives first (a negative a lookup hit gets a second
 * chance instead, once), then, only once no unused negative is left, the least recently
 * used positive ones (least recently used within each shard of the LRU, which are visited
 * in turn; their inodes stay cached until `udc_forget`). Negatives the bounding rules evict
 * because of the shrink's own changes (a second chance spent joins two runs of negatives)
 * count as evicted by it. `n` above `INT_MAX` is taken as `INT_MAX`. A shrink whose scan
 * meets mostly looked-up negatives may evict fewer than `n` while some remain: call again.
 *
 * Returns how many entries were evicted, exactly, at most `n` (>= 0), or `-EINVAL`, `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
 */
int udc_shrink(struct udc_cache *cache, size_t n);

/**
 * DOC: Readdir
 *
 * Listings cached per directory and indexed by cookie: udc_readdir answers from the
 * cache, or asks the readdir callback for a page, which it fills with udc_fill_add
 * and udc_fill_done; udc_dir_changed tells the cache that a directory changed.
 */

/**
 * One directory entry, as `udc_readdir` returns it.
 */
typedef struct udc_dirent {
    /**
     * The inode number.
     */
    uint64_t ino;
    /**
     * The position after this entry: pass it to `udc_readdir` to continue with the next one
     * (FUSE's `off`). Never 0.
     */
    uint64_t cookie;
    /**
     * The file type (`enum udc_type`; `UDC_TYPE_UNKNOWN` if the filesystem did not say).
     */
    uint32_t type;
    /**
     * Length of `name`, without the NUL.
     */
    uint32_t namelen;
    /**
     * The name, NUL-terminated.
     */
    char name[256];
} udc_dirent;

/**
 * Reads up to `max` entries of directory `dir` that follow `cookie` (0 = from the start) into
 * `buf` and sets `*count`: from the directory's cached pages, calling the readdir callback
 * for ranges not cached. A reader can stop and resume at any cookie it was given; while the
 * directory changes, every entry present for the whole listing is returned exactly once.
 * Local changes (`udc_add` of a new name, `udc_unlink`, `udc_rename`, `udc_invalidate`) mark
 * the listing changed themselves; report other changes with `udc_dir_changed`.
 *
 * Returns 1 at the end of the directory, 0 if more may follow, or `-EINVAL` (NULL pointer;
 * `max` 0, or `max * sizeof(struct udc_dirent)` over `PTRDIFF_MAX`; a cookie never issued
 * that the callback cannot resume at), `-ESTALE` (`dir` not cached, or the callback's
 * `-ESTALE` at cookie 0: the directory is gone), `-ENOTDIR`, `-ENOSYS`
 * (no readdir callback), `-ELOOP` (the callback repeated a cookie or returned 0, gave an
 * empty batch that is not the end, or its batches lead round in a cycle), `-EIO` (the
 * callback broke its contract), the callback's own `-errno`, `-EBADF`.
 * On error `*count` is unchanged.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `buf`
 * must point to `max` writable `udc_dirent`s; `count` must be NULL or point to a writable
 * `size_t`.
 */
int udc_readdir(struct udc_cache *cache,
                uint64_t dir,
                uint64_t cookie,
                struct udc_dirent *buf,
                size_t max,
                size_t *count);

/**
 * What the readdir callback fills (opaque; valid only until the callback returns).
 */
typedef struct udc_fill udc_fill;

/**
 * The filesystem's directory listing, called by `udc_readdir` for ranges the cache lacks:
 * append up to `max` entries that follow `cookie` (0 = the start) with `udc_fill_add`, then
 * call `udc_fill_done`; return 0 or `-errno`. `max` is the cache's page size
 * (`udc_config.readdir_page_entries`), not the `max` of the `udc_readdir` call that needed
 * the page: the cache fills whole pages and answers its callers from them. Fewer entries are
 * fine (at least one, unless the directory ends there); `udc_fill_add` refuses more with
 * `-ENOSPC`. Return `-EINVAL` or
 * `-ESTALE` for a cookie it cannot resume at (reported by `udc_readdir` as a bad cookie,
 * `-EINVAL`); at cookie 0 they are returned as they are (`-ESTALE`: the directory is gone).
 * Returning 0 without `udc_fill_done` is a broken contract (`-EIO`). The cookies it issues
 * must be non-zero.
 */
typedef int (*udc_readdir_fn)(void *ctx,
                              uint64_t dir,
                              uint64_t cookie,
                              size_t max,
                              struct udc_fill *fill);

/**
 * In a readdir callback: appends the entry `name` (`len` bytes) with inode `ino`, type `type`
 * (`enum udc_type`, `UDC_TYPE_UNKNOWN` allowed) and `cookie` (the position after it; not 0,
 * and unique in the directory).
 *
 * Returns 0, or `-ENOSPC` (the fill holds `max` entries already: stop, and resume at the last
 * cookie next time), `-EINVAL` (NULL pointer; bad name; `ino` or `cookie` 0; unknown type;
 * `udc_fill_done` called already), `-ENAMETOOLONG`, `-EBADF` (not a live fill). A refused
 * entry is not added.
 *
 * # Safety
 *
 * `fill` must be the fill passed to the running callback, used by one thread; `name` must
 * point to `len` readable bytes.
 */
int udc_fill_add(struct udc_fill *fill,
                 const char *name,
                 size_t len,
                 uint64_t ino,
                 uint32_t type,
                 uint64_t cookie);

/**
 * In a readdir callback: ends the fill. `eof` non-zero: the last entry added (or the cookie
 * asked for, if none was added) is the end of the directory. `verifier`: the directory's
 * change attribute when it was read (two fills with the same verifier saw the same contents;
 * a callback that has none can pass a counter it bumps on every change). Required before the
 * callback returns 0.
 *
 * Returns 0, or `-EINVAL` (NULL; called already), `-EBADF` (not a live fill).
 *
 * # Safety
 *
 * `fill` must be the fill passed to the running callback, used by one thread.
 */
int udc_fill_done(struct udc_fill *fill, int eof, uint64_t verifier);

/**
 * Tells the cache that directory `dir` changed behind its back (`verifier`: its new change
 * attribute or mtime; 0 = unknown; the same verifier as last time changes nothing, unless
 * last time was 0): its cached listing pages become stale, and its negative entries are no
 * longer trusted (each is revalidated at its next use: a miss for `udc_lookup` and
 * `udc_walk`, the revalidate callback for `udc_resolve` and `udc_walk_as`). Positive names
 * are not touched (use `udc_invalidate` for a name that went away or now leads elsewhere,
 * after this call).
 *
 * Returns 0, or `-ESTALE` (`dir` not cached), `-ENOTDIR`, `-EINVAL`, `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
 */
int udc_dir_changed(struct udc_cache *cache, uint64_t dir, uint64_t verifier);

/**
 * DOC: Revalidation and access
 *
 * How long a cached name is trusted (udc_config's timeouts, udc_set_entry_timeout),
 * the revalidate callback asked once it is not, udc_walk_as (a walk that revalidates
 * and checks search rights), and the access cache: udc_access through the access
 * callback, udc_cached_access, udc_access_stamp and udc_store_access for a
 * filesystem that computes rights itself, udc_acl_changed.
 */

/**
 * A time to live: forever (until told otherwise), in every `*_ns` timeout of the API.
 */
#define UDC_TTL_FOREVER 18446744073709551615ull

/**
 * `*ttl_ns` as the revalidate callback finds it: left so, the configured timeout of the
 * name's kind (`udc_config.entry_timeout_ns` or `negative_timeout_ns`) applies.
 */
#define UDC_TTL_CONFIGURED 18446744073709551614ull

/**
 * Sets how long the cached name `name` in `parent` (positive or negative) is trusted from
 * now: `ttl_ns` nanoseconds (a FUSE reply's `entry_valid`; 0: revalidate at its next use;
 * `UDC_TTL_FOREVER`: until told otherwise; `UDC_TTL_CONFIGURED` is refused, `-EINVAL`: a
 * revalidate answer's "as configured" is not a timeout). Its directory-change state is kept:
 * a name filed before its directory last changed (`udc_dir_changed` with no verifier or a new
 * one) may be trusted for less, never for longer — its answer may predate the change — until
 * a revalidation.
 *
 * Returns 0, or `-ENOENT` (nothing cached under the name), `-EINVAL`, `-ENAMETOOLONG`,
 * `-ESTALE`, `-ENOTDIR`, `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `name`
 * must point to `len` readable bytes.
 */
int udc_set_entry_timeout(struct udc_cache *cache,
                          uint64_t parent,
                          const char *name,
                          size_t len,
                          uint64_t ttl_ns);

/**
 * Revalidate callback answer: the cached name no longer holds; the cache drops it and the
 * name is looked up again. (Any value other than the three `UDC_REVAL_*` is taken as this.)
 */
#define UDC_REVAL_INVALID 0

/**
 * Revalidate callback answer: the cached name still holds; trust it for `*ttl_ns` more.
 */
#define UDC_REVAL_VALID 1

/**
 * Revalidate callback answer (with `may_block` 0 only): the callback cannot tell without
 * blocking; it is asked again with `may_block` 1 (with `may_block` 1 this is `INVALID`).
 */
#define UDC_REVAL_NEEDS_BLOCK 2

/**
 * What the revalidate callback is told about the cached name it is asked about. `size` is
 * set by the library.
 */
typedef struct udc_cached {
    /**
     * `sizeof(struct udc_cached)`.
     */
    size_t size;
    /**
     * 1: the name is cached as not existing (`entry` is all zero); 0: `entry` is its inode.
     */
    int negative;
    /**
     * 1: its timeout has passed.
     */
    int expired;
    /**
     * 1: its directory changed (`udc_dir_changed`) since it was filled.
     */
    int dir_changed;
    /**
     * The inode the name leads to (positive names).
     */
    struct udc_entry entry;
} udc_cached;

/**
 * The filesystem's revalidation of a cached name that is no longer trusted: whether `name`
 * (`len` bytes, not NUL-terminated) in directory `parent` still is what `*cached` says.
 * Return `UDC_REVAL_VALID` (then `*ttl_ns` is how long to trust it from now: left at
 * `UDC_TTL_CONFIGURED`, the configured timeout; `UDC_TTL_FOREVER`; 0, ask at every use),
 * `UDC_REVAL_INVALID`, or, when `may_block` is 0, `UDC_REVAL_NEEDS_BLOCK` if it cannot tell
 * without blocking. With `may_block` 0 it runs inside a lockless walk: see THREADS.
 */
typedef int (*udc_revalidate_fn)(void *ctx,
                                 uint64_t parent,
                                 const char *name,
                                 size_t len,
                                 const struct udc_cached *cached,
                                 int may_block,
                                 uint64_t *ttl_ns);

/**
 * Access mask bit: search a directory or execute a file (`X_OK`).
 */
#define UDC_MAY_EXEC 1

/**
 * Access mask bit: write (`W_OK`).
 */
#define UDC_MAY_WRITE 2

/**
 * Access mask bit: read (`R_OK`).
 */
#define UDC_MAY_READ 4

/**
 * Who asks: user, primary group and supplementary groups (in any order; duplicates are
 * ignored). Set `size` to `sizeof(struct udc_cred)`. The cache keeps only a digest of the
 * groups; the access callback receives the caller's struct itself.
 */
typedef struct udc_cred {
    /**
     * `sizeof(struct udc_cred)`.
     */
    size_t size;
    /**
     * The user.
     */
    uint32_t uid;
    /**
     * The primary group.
     */
    uint32_t gid;
    /**
     * `ngroups` supplementary groups; may be NULL when `ngroups` is 0.
     */
    const uint32_t *groups;
    /**
     * How many; at most 65536.
     */
    size_t ngroups;
} udc_cred;

/**
 * Resolves `path` from `root` like `udc_walk`, but revalidates names that are no longer
 * trusted and, with `cred`, checks that it may search each directory on the way (NULL: no
 * access checks). Lockless as `udc_walk` while every name is trusted, every search right is
 * the directory's most recent access result, and the revalidate callback answers without
 * blocking; otherwise the blocking work is done on this thread with no lock held (the
 * `revalidate` callback with `may_block` 1, `access` for a search right not cached) and the
 * walk starts again, at most 4 + 2 per path component times, using for one more use what
 * that blocking work was just told (so a name whose timeout is 0, "revalidate at every use",
 * is asked about once per walk). Counts no lookup.
 *
 * Returns `out->kind` (>= 0): the `UDC_WALK_*` of `udc_walk` (a `MISS` only for a name never
 * cached, dropped meanwhile, or dropped by this walk because the revalidate callback found it
 * invalid; the lookup callback is not called here: resolve it with `udc_resolve`, whose
 * answer decides the component, as for `udc_walk`: see `UDC_WALK_MISS`), or
 * `UDC_WALK_DENIED`. Errors: those of `udc_walk`; `-EINVAL` also for a bad `cred`; a
 * callback's `-errno`; `-EIO` for a callback that broke its contract; `-EMLINK` as for
 * `udc_resolve` (a directory renamed behind the cache is moved, as there); `-EAGAIN` when the
 * walk still needed blocking work after its last round (names or directories changing under
 * it faster than it can walk).
 *
 * # Safety
 *
 * As `udc_walk`; `cred` must be NULL or point to a `udc_cred` (see its fields).
 */
int udc_walk_as(struct udc_cache *cache,
                uint64_t root,
                const char *path,
                size_t len,
                const struct udc_cred *cred,
                struct udc_walk_result *out);

/**
 * The filesystem's permission check: the rights `*cred` has on inode `ino`, all three asked
 * at once, as a mask of `UDC_MAY_*` bits (0 to 7), or `-errno` (returned to the caller, not
 * cached). The cache keeps the answer for `udc_config.access_timeout_ns`. A return above 7 is
 * a broken contract: `-EIO`.
 */
typedef int (*udc_access_fn)(void *ctx, uint64_t ino, const struct udc_cred *cred);

/**
 * Whether `cred` has every right of `mask` (`UDC_MAY_*` bits) on `ino`: the cached result,
 * else the access callback's answer, which is cached. The callback runs on this thread with
 * no lock held. A `mask` of 0 (`F_OK`) asks only that `ino` is cached: 0 if it is, `-ESTALE`
 * if not, without a callback call (`cred` is still checked).
 *
 * Returns 0 (allowed), `-EACCES` (refused), or `-EINVAL` (NULL or bad `cred`; bits outside
 * `UDC_MAY_*`), `-ESTALE` (`ino` not cached), the callback's `-errno`, `-EIO` (a callback
 * answer above 7), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `cred`
 * must be NULL or point to a `udc_cred`.
 */
int udc_access(struct udc_cache *cache, uint64_t ino, const struct udc_cred *cred, uint32_t mask);

/**
 * `udc_cached_access`: the cached result grants every right asked for.
 */
#define UDC_ACCESS_ALLOWED 1

/**
 * `udc_cached_access`: the cached result refuses a right asked for.
 */
#define UDC_ACCESS_DENIED 2

/**
 * The cached answer to `udc_access`, without asking the callback. A `mask` of 0 asks only
 * that `ino` is cached, as for `udc_access`: `UDC_ACCESS_ALLOWED` if it is (whether or not an
 * access result is cached), `-ESTALE` if not.
 *
 * Returns `UDC_ACCESS_ALLOWED`, `UDC_ACCESS_DENIED`, `UDC_MISS` (no trusted result for this
 * credential), or the argument errors of `udc_access` (`-ESTALE` for `ino` not cached).
 *
 * # Safety
 *
 * As `udc_access`.
 */
int udc_cached_access(struct udc_cache *cache,
                      uint64_t ino,
                      const struct udc_cred *cred,
                      uint32_t mask);

/**
 * For a filesystem that computes rights itself instead of through the access callback: marks
 * the state of `ino`'s access results in `*stamp` *before* it reads the permissions it
 * computes from; `udc_store_access` files the result only if no revocation (`udc_setattr`
 * of mode, owner or group; `udc_acl_changed`) and no other file under the number came
 * between. A stamp is an opaque word: a made-up one is at worst refused, or taken as a stamp
 * of the inode's current state (then a result computed before a revocation may be stored).
 *
 * Returns 0, or `-EINVAL` (NULL `stamp`), `-ESTALE`, `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS);
 * `stamp` must be NULL or point to a writable `uint64_t`.
 */
int udc_access_stamp(struct udc_cache *cache, uint64_t ino, uint64_t *stamp);

/**
 * Files the rights `granted` (`UDC_MAY_*` bits) of `cred` on `ino`, computed after `stamp`
 * was taken by `udc_access_stamp`, for `udc_config.access_timeout_ns`.
 *
 * Returns 1 (filed), 0 (not filed: a revocation or another file came after the stamp; the
 * rights may be out of date, compute them again), or `-EINVAL` (NULL or bad `cred`; bits
 * outside `UDC_MAY_*`), `-ESTALE`, `-EBADF`.
 *
 * # Safety
 *
 * As `udc_access`.
 */
int udc_store_access(struct udc_cache *cache,
                     uint64_t ino,
                     const struct udc_cred *cred,
                     uint32_t granted,
                     uint64_t stamp);

/**
 * The permissions of `ino` changed in a way its cached attributes do not show (an ACL): every
 * cached access result of it is forgotten before this returns. (`udc_setattr` does this by
 * itself for a change of mode, owner or group.)
 *
 * Returns 0, or `-ESTALE`, `-EINVAL`, `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS).
 */
int udc_acl_changed(struct udc_cache *cache, uint64_t ino);

/**
 * DOC: The filesystem's callbacks
 *
 * The callbacks of the groups above and their context, given to a cache once, before
 * the handle is shared. When each runs and what it may do: CALLBACKS above.
 */

/**
 * The filesystem's callbacks and their context, given to `udc_set_ops`.
 */
typedef struct udc_ops {
    /**
     * `sizeof(struct udc_ops)`.
     */
    size_t size;
    /**
     * Called on a miss by `udc_resolve`; NULL: `udc_resolve` returns `-ENOSYS` on a miss.
     */
    udc_lookup_fn lookup;
    /**
     * Called by `udc_readdir`; NULL: `udc_readdir` returns `-ENOSYS`.
     */
    udc_readdir_fn readdir;
    /**
     * Passed to every callback as its first argument.
     */
    void *ctx;
    /**
     * Asked whether a cached name that is no longer trusted still holds (see
     * `udc_revalidate_fn`); NULL: `UDC_REVAL_NEEDS_BLOCK` without blocking, else a fresh
     * `lookup` compared by inode number.
     */
    udc_revalidate_fn revalidate;
    /**
     * Asked for a credential's rights on an inode (see `udc_access_fn`); NULL: every right
     * for everyone.
     */
    udc_access_fn access;
} udc_ops;

/**
 * Sets the filesystem's callbacks. Call it once, before the cache is used from several
 * threads; the callbacks then stay for the cache's life.
 *
 * Returns 0, `-EINVAL` (`cache` or `ops` NULL, or `ops->size` smaller than this library's
 * `sizeof(struct udc_ops)`), `-EBADF` (not a live handle), or `-EBUSY` (set already).
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `ops`
 * NULL or a `udc_ops`. The callbacks must follow the threading rules above for as long as the
 * cache lives.
 */
int udc_set_ops(struct udc_cache *cache, const struct udc_ops *ops);

/**
 * DOC: Statistics
 *
 * A cache's counters, as a struct (udc_stats_get) or as text that starts like
 * /proc/sys/fs/dentry-state (udc_stats_format).
 */

/**
 * A snapshot of a cache's figures. Set `size` before `udc_stats_get`.
 */
typedef struct udc_stats {
    /**
     * `sizeof(struct udc_stats)`.
     */
    size_t size;
    /**
     * Entries in the name table, positive and negative (dentry-state `nr_dentry`).
     */
    uint64_t nr_dentry;
    /**
     * Entries no operation holds (dentry-state `nr_unused`).
     */
    uint64_t nr_unused;
    /**
     * Negative entries (dentry-state `nr_negative`).
     */
    uint64_t nr_negative;
    /**
     * Hash buckets of the name table.
     */
    uint64_t nr_buckets;
    /**
     * Cached inodes.
     */
    uint64_t nr_inodes;
    /**
     * Negative entries evicted by the bounding rules.
     */
    uint64_t negative_evictions;
    /**
     * Lockless walks that met a rename and walked again under the rename lock.
     */
    uint64_t walk_fallbacks;
    /**
     * Calls of the lookup callback.
     */
    uint64_t backend_lookups;
    /**
     * Misses that waited for another thread's callback call of the same name.
     */
    uint64_t coalesced_misses;
    /**
     * `udc_readdir` batches answered from the cache.
     */
    uint64_t readdir_hits;
    /**
     * `udc_readdir` batches that needed the readdir callback.
     */
    uint64_t readdir_misses;
    /**
     * Misses answered "does not exist" by a complete cached listing, without a callback call
     * or a negative entry.
     */
    uint64_t complete_dir_negatives;
    /**
     * Rename write sections opened (renames, directory unlinks and forgets).
     */
    uint64_t rename_sections;
    /**
     * Inode objects this cache's pool handed out again after their grace period.
     */
    uint64_t inodes_recycled;
    /**
     * Calls of the revalidate callback (or its default), lockless and blocking.
     */
    uint64_t revalidations;
    /**
     * Lockless walks (`udc_walk`, which then answers `UDC_WALK_MISS` there, and `udc_walk_as`
     * rounds) that stopped for a name whose timeout passed.
     */
    uint64_t fallback_expired;
    /**
     * Lockless walks (`udc_walk`, `udc_walk_as` rounds) that stopped for a negative name whose
     * directory changed.
     */
    uint64_t fallback_verifier;
    /**
     * Lockless `udc_walk_as` rounds that stopped for a search right not in its directory's
     * most recent access result.
     */
    uint64_t fallback_access;
    /**
     * Lockless `udc_walk_as` rounds that stopped because the revalidate callback answered
     * `UDC_REVAL_NEEDS_BLOCK`.
     */
    uint64_t fallback_needs_block;
    /**
     * Access checks answered by the access cache.
     */
    uint64_t access_hits;
    /**
     * Calls of the access callback (or its default): access-cache misses.
     */
    uint64_t access_calls;
    /**
     * Dentries made in a recycled cell of the name table's pool (freed at least a grace
     * period before) rather than a fresh allocation.
     */
    uint64_t dentries_recycled;
} udc_stats;

/**
 * Copies the cache's figures into `*out`.
 *
 * Returns 0, or `-EINVAL` (NULL `out`, or `out->size` smaller than this library's
 * `sizeof(struct udc_stats)`), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `out`
 * must be NULL or point to a writable `udc_stats` whose `size` is set.
 */
int udc_stats_get(const struct udc_cache *cache, struct udc_stats *out);

/**
 * Writes the figures as text into `buf` (at most `len` bytes, NUL-terminated, truncated if
 * need be). The first line is `/proc/sys/fs/dentry-state`'s six numbers, tab-separated
 * (`nr_dentry nr_unused 0 0 nr_negative nr_buckets`: the sixth field, which Linux leaves 0,
 * is the bucket count); then one `name value` line per `udc_stats` field.
 *
 * Returns the length of the whole text without the NUL (as `snprintf`: a value >= `len`
 * means it was truncated; `buf` may be NULL when `len` is 0), or `-EINVAL` (`buf` NULL with
 * `len > 0`; `len` over `PTRDIFF_MAX`), `-EBADF`.
 *
 * # Safety
 *
 * `cache` may be any value that no other thread destroys during the call (see CONVENTIONS); `buf`
 * must be NULL or point to `len` writable bytes.
 */
int udc_stats_format(const struct udc_cache *cache, char *buf, size_t len);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* UDCACHE_H */
