//! Fuzz the C ABI (`ffi/`, libudcache): raw bytes as names, paths, inode numbers, cookies,
//! flags, struct sizes and pointers (NULL, garbage handles, misaligned handles, lengths over
//! `NAME_MAX` on one-byte buffers) through every `udc_*` function, with a lookup callback and
//! a readdir callback that answer from a script (well or badly: bad entries, bad return
//! values, a missing or repeated `udc_fill_done`, entries past `max`, calls back into the
//! cache), and revalidate and access callbacks that do the same (any answer, any ttl, masks
//! above 7, errnos); credentials well-formed or not (NULL, short `size`, NULL groups, more than
//! 65536 groups on a one-element buffer), access masks with any bits, made-up stamps, and
//! entry, negative and access timeouts of 0, 1 ms, or forever.
//!
//! Every buffer the library reads or writes is allocated at exactly its size, so an over-read
//! or over-write is an AddressSanitizer report. For each call:
//! - a malformed argument gets one of the errnos the header gives for it, and nothing changes
//!   (counts, the names the call mentions, no callback runs);
//! - a well-formed call returns one of the values the header documents for that function, a
//!   refusal of a change changes nothing, and a success has its documented effect (an added
//!   name is found, an unlinked one is not, a rename moves the inode, ...);
//! - after every call the cache is still sound through the API: counters are sane and
//!   monotonic, the lookup callback ran exactly as often as the cache counts, a known name that
//!   no call has touched still walks to its inode, every child `udc_children` reports is
//!   found by `udc_lookup`, and a second cache that no call touches is unchanged;
//! - `udc_peek` right after a `udc_lookup` answers what it answered, errors included.
#![no_main]

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::ops::RangeInclusive;
use std::ptr;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libc::{
    EACCES, EAGAIN, EBADF, EBUSY, EEXIST, EINVAL, EIO, ELOOP, EMLINK, ENAMETOOLONG, ENODATA,
    ENOENT, ENOSPC, ENOSYS, ENOTDIR, ENOTRECOVERABLE, ESTALE,
};
use libfuzzer_sys::fuzz_target;
use udcache_ffi::attr::{udc_attr, udc_getattr, udc_setattr};
use udcache_ffi::callbacks::{udc_ops, udc_set_ops};
use udcache_ffi::handle::{
    udc_cache, udc_cache_destroy, udc_cache_new, udc_config, udc_config_init,
};
use udcache_ffi::lookup::{
    UDC_MISS, UDC_NEGATIVE, UDC_POSITIVE, UDC_WALK_DENIED, UDC_WALK_FOUND, udc_children,
    udc_lookup, udc_peek, udc_resolve, udc_walk, udc_walk_result,
};
use udcache_ffi::ops::{
    udc_add, udc_add_negative, udc_count_lookup, udc_forget, udc_invalidate, udc_rename,
    udc_shrink, udc_unlink,
};
use udcache_ffi::readdir::{
    udc_dir_changed, udc_dirent, udc_fill, udc_fill_add, udc_fill_done, udc_readdir,
};
use udcache_ffi::reval::{
    UDC_ACCESS_ALLOWED, UDC_ACCESS_DENIED, UDC_REVAL_NEEDS_BLOCK, UDC_REVAL_VALID,
    UDC_TTL_CONFIGURED, UDC_TTL_FOREVER, udc_access, udc_access_stamp, udc_acl_changed, udc_cached,
    udc_cached_access, udc_cred, udc_set_entry_timeout, udc_store_access, udc_walk_as,
};
use udcache_ffi::stats::{udc_stats, udc_stats_format, udc_stats_get};
use udcache_ffi::types::udc_entry;
use udcache_ffi::udc_version;

/// The errno the header gives a malformed name (empty, `.` or `..`, `/` or NUL in it: EINVAL;
/// longer than 255 bytes: ENAMETOOLONG), written out here rather than taken from the library.
fn name_fault(name: &[u8]) -> Option<c_int> {
    if name.len() > 255 {
        return Some(ENAMETOOLONG);
    }
    let malformed = name.is_empty() || matches!(name, b"." | b"..") || name.contains(&b'/');
    (malformed || name.contains(&0)).then_some(EINVAL)
}

const ROOT: u64 = 1;
/// The magic word of a live handle (`ffi/src/handle.rs`): garbage handles must not hold it.
const LIVE: u64 = u64::from_le_bytes(*b"udcache\x01");
/// The known names: `sentinel/f` below the root of both caches.
const SENT_DIR: u64 = 0x5e47_0000_0000_0001;
const SENT_FILE: u64 = SENT_DIR + 1;
const SENT_NAME: &[u8] = b"sentinel";
/// The name the lookup callback changes when it calls back into the cache.
const NESTED: &[u8] = b"nested-by-callback";

// ---- the input -------------------------------------------------------------------------------

/// A handle argument: mostly the live cache, sometimes NULL, garbage or misaligned.
#[derive(Arbitrary, Clone, Copy, Debug)]
struct H(u8);

/// A name argument.
#[derive(Arbitrary, Clone, Debug)]
enum NameArg {
    Pick(u8),
    Raw(Vec<u8>),
    /// NULL with this length.
    Null(u16),
    /// A one-byte buffer with a length over `NAME_MAX`: must be refused before it is read.
    Huge(u32),
}

/// An inode number argument: a few cached ones, 0, the sentinels, or anything.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum InoArg {
    Pick(u8),
    Raw(u64),
}

#[derive(Arbitrary, Clone, Copy, Debug)]
struct EntryArg {
    ino: InoArg,
    ty: u8,
    fs_data: u64,
}

/// A callback's return value: the documented ones, or any.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum Ret {
    One,
    Zero,
    Errno(u8),
    Raw(i32),
}

#[derive(Arbitrary, Clone, Debug)]
enum Nested {
    Lookup,
    Add(EntryArg),
    Unlink,
    Stats,
}

#[derive(Arbitrary, Clone, Debug)]
struct LookupReply {
    ret: Ret,
    entry: EntryArg,
    nested: Option<Nested>,
}

#[derive(Arbitrary, Clone, Debug)]
struct FillEntry {
    name: NameArg,
    ino: u8,
    ty: u8,
    cookie: u8,
    /// Which fill pointer to pass: mostly the real one, sometimes NULL or garbage.
    fill: u8,
}

#[derive(Arbitrary, Clone, Debug)]
struct FillScript {
    entries: Vec<FillEntry>,
    done: Option<(bool, u64)>,
    done_twice: bool,
    add_after_done: bool,
    ret: Ret,
}

#[derive(Arbitrary, Clone, Copy, Debug)]
enum CookieArg {
    Zero,
    Seen(u8),
    Raw(u64),
}

#[derive(Arbitrary, Clone, Debug)]
enum PathArg {
    Null(u8),
    Parts(Vec<(NameArg, u8)>),
    Raw(Vec<u8>),
}

/// A credential argument.
#[derive(Arbitrary, Clone, Debug)]
enum CredArg {
    Null,
    Good {
        uid: u8,
        gid: u8,
        groups: Vec<u32>,
    },
    /// `size` short by this much (at least 1).
    Short(u8),
    /// NULL groups with this many (at least 1).
    NullGroups(u16),
    /// More than 65536 groups on a one-element buffer: refused before it is read.
    TooMany(u16),
}

/// A revalidate callback answer: its return value and what it sets `*ttl_ns` to.
#[derive(Arbitrary, Clone, Copy, Debug)]
struct RevalReply {
    ret: i8,
    ttl: u8,
}

/// A stamp argument: one `udc_access_stamp` gave, or any word.
#[derive(Arbitrary, Clone, Copy, Debug)]
enum StampArg {
    Seen(u8),
    Raw(u64),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Lookup { h: H, parent: InoArg, name: NameArg, out_null: bool, peek: bool },
    Resolve { h: H, parent: InoArg, name: NameArg, out_null: bool },
    Walk { h: H, root: InoArg, path: PathArg, out_null: bool, size: i8 },
    Children { h: H, dir: InoArg, stop_after: Option<u8> },
    Add { h: H, parent: InoArg, name: NameArg, entry: EntryArg, e_null: bool },
    AddNegative { h: H, parent: InoArg, name: NameArg },
    Unlink { h: H, parent: InoArg, name: NameArg },
    Rename { h: H, from: InoArg, old: NameArg, to: InoArg, new: NameArg, flags: u8 },
    Forget { h: H, ino: InoArg, n: u8 },
    CountLookup { h: H, ino: InoArg },
    Invalidate { h: H, parent: InoArg, name: NameArg },
    Shrink { h: H, n: u64 },
    Getattr { h: H, ino: InoArg, out_null: bool },
    Setattr { h: H, ino: InoArg, size: u64, mode: u32, valid_ns: u64, attr_null: bool },
    Readdir { h: H, dir: InoArg, cookie: CookieArg, max: u8, buf_null: bool, count_null: bool },
    DirChanged { h: H, dir: InoArg, verifier: u64 },
    Stats { h: H, size: i8, out_null: bool },
    StatsFormat { h: H, len: u16, buf_null: bool },
    SetOps { h: H, size: i8, lookup: bool, readdir: bool, reval: bool, access: bool, null: bool },
    SetEntryTimeout { h: H, parent: InoArg, name: NameArg, ttl: u64 },
    WalkAs { h: H, root: InoArg, path: PathArg, cred: CredArg, out_null: bool, size: i8 },
    Access { h: H, ino: InoArg, cred: CredArg, mask: u32, cached: bool },
    AccessStamp { h: H, ino: InoArg, out_null: bool },
    StoreAccess { h: H, ino: InoArg, cred: CredArg, granted: u32, stamp: StampArg },
    AclChanged { h: H, ino: InoArg },
}

#[derive(Arbitrary, Debug)]
struct Cfg {
    size: i8,
    expected: u32,
    buckets: u32,
    negative_cap: u32,
    policy: u8,
    readdir_pages: u16,
    page_entries: u8,
    /// NULL config when 0 (mod 16), NULL out pointer when 1.
    nulls: u8,
    /// Entry, negative and access timeouts: forever, 0, 1 ms, 2^40 ns (mod 4).
    timeouts: [u8; 3],
}

#[derive(Arbitrary, Debug)]
struct Input {
    cfg: Cfg,
    /// Callbacks (lookup, readdir, revalidate, access) installed before the first op: a
    /// `SetOps` among the ops is rare, and without one the paths that call the filesystem
    /// are never taken.
    callbacks_first: Option<[bool; 4]>,
    garbage: [u8; 32],
    lookups: Vec<LookupReply>,
    fills: Vec<FillScript>,
    revals: Vec<RevalReply>,
    grants: Vec<Ret>,
    ops: Vec<Op>,
}

// ---- arguments made concrete ------------------------------------------------------------------

/// A name as passed to C: a buffer of exactly `len` bytes (NULL, or one byte for `Huge`).
struct CName {
    buf: Box<[u8]>,
    null: bool,
    len: usize,
}

impl CName {
    fn new(arg: &NameArg) -> Self {
        let bytes = |b: &[u8]| CName { buf: b.into(), null: false, len: b.len() };
        match arg {
            NameArg::Pick(i) => match i % 16 {
                0 | 1 => bytes(b"a"),
                2 => bytes(b"b"),
                3 => bytes(b"c"),
                4 => bytes(b"dir"),
                5 => bytes(NESTED),
                6 => bytes(&[0xff]),
                7 => bytes(b"..."),
                8 => bytes(b""),
                9 => bytes(b"."),
                10 => bytes(b".."),
                11 => bytes(b"a/b"),
                12 => bytes(b"a\0"),
                13 => bytes(&[b'm'; 255]),
                14 => bytes(&[b'n'; 256]),
                _ => bytes(SENT_NAME),
            },
            NameArg::Raw(raw) => bytes(&raw[..raw.len().min(300)]),
            NameArg::Null(len) => CName { buf: Box::new([]), null: true, len: usize::from(*len) },
            NameArg::Huge(extra) => {
                CName { buf: Box::new(*b"x"), null: false, len: 256 + *extra as usize }
            }
        }
    }

    fn ptr(&self) -> *const c_char {
        if self.null { ptr::null() } else { self.buf.as_ptr().cast() }
    }

    /// The errno the header gives this name, if it is malformed.
    fn fault(&self) -> Option<c_int> {
        if self.null || self.len == 0 {
            Some(EINVAL)
        } else if self.len > 255 {
            Some(ENAMETOOLONG)
        } else {
            name_fault(&self.buf)
        }
    }

    /// The name's bytes, if it is well-formed.
    fn valid(&self) -> Option<&[u8]> {
        self.fault().is_none().then_some(&self.buf[..])
    }
}

/// A credential as passed to C, with the buffers it points to, exactly sized.
struct CCred {
    cred: udc_cred,
    _groups: Box<[u32]>,
    null: bool,
}

impl CCred {
    fn new(arg: &CredArg) -> Self {
        let full = size_of::<udc_cred>();
        let groups: Box<[u32]> = match arg {
            CredArg::Good { groups, .. } => groups.iter().take(64).copied().collect(),
            _ => Box::new([7]),
        };
        let mut cred = udc_cred {
            size: full,
            uid: 1000,
            gid: 1000,
            groups: groups.as_ptr(),
            ngroups: groups.len(),
        };
        match *arg {
            CredArg::Null => {}
            CredArg::Good { uid, gid, .. } => {
                (cred.uid, cred.gid) = (u32::from(uid), u32::from(gid))
            }
            CredArg::Short(d) => cred.size = full.saturating_sub(usize::from(d).max(1)),
            CredArg::NullGroups(n) => {
                (cred.groups, cred.ngroups) = (ptr::null(), usize::from(n).max(1))
            }
            CredArg::TooMany(n) => cred.ngroups = 65537 + usize::from(n),
        }
        CCred { cred, _groups: groups, null: matches!(arg, CredArg::Null) }
    }

    fn ptr(&self) -> *const udc_cred {
        if self.null { ptr::null() } else { &self.cred }
    }

    /// The errno the header gives this credential where one is required, if it is malformed.
    fn fault(&self) -> Option<c_int> {
        (self.null || !self.well_formed()).then_some(EINVAL)
    }

    /// The errno where NULL is allowed (`udc_walk_as`).
    fn fault_or_null(&self) -> Option<c_int> {
        (!self.null && !self.well_formed()).then_some(EINVAL)
    }

    fn well_formed(&self) -> bool {
        let c = &self.cred;
        c.size >= size_of::<udc_cred>()
            && c.ngroups <= 65536
            && !(c.groups.is_null() && c.ngroups > 0)
    }
}

/// The errno of an access mask with bits outside `UDC_MAY_*`.
fn mask_fault(mask: u32) -> Option<c_int> {
    (mask & !7 != 0).then_some(EINVAL)
}

/// A timeout from the input: forever, 0, 1 ms, 2^40 ns.
fn timeout(t: u8) -> u64 {
    [UDC_TTL_FOREVER, 0, 1_000_000, 1 << 40][usize::from(t % 4)]
}

fn ino(arg: InoArg) -> u64 {
    match arg {
        InoArg::Pick(i) => [ROOT, 2, 3, 4, 5, 0, 2, 3, SENT_DIR, SENT_FILE][usize::from(i % 10)],
        InoArg::Raw(n) => n,
    }
}

fn entry(arg: EntryArg) -> udc_entry {
    let ty = match arg.ty % 8 {
        t @ 0..=4 => u32::from(t),
        5 => 2,
        6 => 1,
        _ => u32::from(arg.ty),
    };
    udc_entry { ino: ino(arg.ino), r#type: ty, fs_data: arg.fs_data }
}

/// Whether `udc_entry` is one `udc_add` accepts (inode not 0, a known type).
fn entry_fault(e: &udc_entry) -> Option<c_int> {
    (e.ino == 0 || !(1..=4).contains(&e.r#type)).then_some(EINVAL)
}

fn ret(r: Ret) -> c_int {
    match r {
        Ret::One => 1,
        Ret::Zero => 0,
        Ret::Errno(e) => -c_int::from(e % 140 + 1),
        Ret::Raw(r) => r,
    }
}

/// The errno `udc_resolve` / `udc_readdir` report for a callback's negative or bad return
/// (`-ENOTRECOVERABLE` is the library's own, for a panic: from a callback it is `-EIO`).
fn callback_errno(r: c_int) -> c_int {
    match r.checked_neg() {
        Some(e) if e > 0 && e != ENOTRECOVERABLE => e,
        _ => EIO,
    }
}

/// A versioned struct's `size`: its own plus `delta` (negative: too small).
fn sized<T>(delta: i8) -> usize {
    (size_of::<T>() as isize + isize::from(delta)).max(0) as usize
}

/// An exact-size output buffer of `n` copies of `v` (so an over-write is an ASan report).
fn boxed<T: Clone>(n: usize, v: T) -> Box<[T]> {
    vec![v; n].into_boxed_slice()
}

/// A path as passed to C: exactly sized (NULL with a length, parts, or raw bytes).
struct CPath {
    bytes: Box<[u8]>,
    null: bool,
    len: usize,
}

impl CPath {
    fn new(path: &PathArg) -> Self {
        let (bytes, null, len): (Vec<u8>, bool, usize) = match path {
            PathArg::Null(len) => (Vec::new(), true, usize::from(*len)),
            PathArg::Parts(parts) => {
                let mut p = Vec::new();
                for (i, (n, sep)) in parts.iter().take(8).enumerate() {
                    if i > 0 || sep % 4 == 0 {
                        p.extend(std::iter::repeat_n(b'/', usize::from(sep % 3) + 1));
                    }
                    match sep % 7 {
                        5 => p.push(b'.'),
                        6 => p.extend(b".."),
                        _ => p.extend(&CName::new(n).buf[..]),
                    }
                }
                let len = p.len();
                (p, false, len)
            }
            PathArg::Raw(raw) => (raw.clone(), false, raw.len()),
        };
        CPath { bytes: bytes.into_boxed_slice(), null, len }
    }

    fn ptr(&self) -> *const c_char {
        if self.null { ptr::null() } else { self.bytes.as_ptr().cast() }
    }

    /// The errnos of a walk's malformed arguments (besides a credential).
    fn faults(
        &self,
        hf: Option<c_int>,
        out_null: bool,
        out: &udc_walk_result,
    ) -> [Option<c_int>; 5] {
        let component = self
            .bytes
            .split(|&b| b == b'/')
            .filter(|c| !c.is_empty() && *c != b"." && *c != b"..")
            .find_map(name_fault);
        [
            hf,
            (self.null && self.len > 0).then_some(EINVAL),
            out_null.then_some(EINVAL),
            (!out_null && out.size < size_of::<udc_walk_result>()).then_some(EINVAL),
            component,
        ]
    }

    /// A walk's result struct agrees with its return value.
    fn check_result(&self, r: c_int, out: &udc_walk_result) {
        if r >= 0 {
            assert_eq!(out.kind as c_int, r, "walk kind");
            assert!(out.offset <= self.len, "walk offset {} past {}", out.offset, self.len);
        }
    }
}

/// A walk result whose `size` is its own plus `delta`.
fn walk_out(delta: i8) -> udc_walk_result {
    udc_walk_result { size: sized::<udc_walk_result>(delta), ..Default::default() }
}

// ---- the callbacks ---------------------------------------------------------------------------

/// An entry some fill accepted: `(name, ino, type, cookie)`.
type Accepted = (Vec<u8>, u64, u32, u64);

/// The filesystem behind the fuzzed cache: scripted answers, and what it saw.
struct Fs {
    live: Cell<*mut udc_cache>,
    lookups: Vec<LookupReply>,
    fills: Vec<FillScript>,
    lookup_calls: Cell<u64>,
    readdir_calls: Cell<u64>,
    /// The last lookup answer given: its return value and entry.
    last_reply: Cell<(c_int, udc_entry)>,
    /// Errnos the readdir callback returned (a `udc_readdir` may report them).
    readdir_errnos: RefCell<BTreeSet<c_int>>,
    /// Entries some fill accepted.
    accepted: RefCell<BTreeSet<Accepted>>,
    revals: Vec<RevalReply>,
    grants: Vec<Ret>,
    reval_calls: Cell<u64>,
    access_calls: Cell<u64>,
    /// The last access answer given.
    last_grant: Cell<c_int>,
    /// Errnos the lookup and access callbacks returned (a call that asked them may report
    /// them).
    callback_errnos: RefCell<BTreeSet<c_int>>,
}

impl Fs {
    fn from_ctx<'a>(ctx: *mut c_void) -> &'a Fs {
        // SAFETY: every ctx given to the library is `&Fs` of the running input, which outlives
        // the cache (destroyed before the `Fs` is dropped).
        unsafe { &*ctx.cast::<Fs>() }
    }
}

/// The lookup callback: answers from the script, counts its calls, may call back into the
/// cache (on another name).
///
/// # Safety
///
/// `ctx` is the running input's `Fs`; `name` points to `len` readable bytes and `out` to a
/// writable `udc_entry` (the library's side of the callback contract).
unsafe extern "C" fn on_lookup(
    ctx: *mut c_void,
    _parent: u64,
    name: *const c_char,
    len: usize,
    out: *mut udc_entry,
) -> c_int {
    let fs = Fs::from_ctx(ctx);
    let n = fs.lookup_calls.get();
    fs.lookup_calls.set(n + 1);
    // SAFETY: the library passes `len` readable bytes (its contract); ASan checks it.
    let name = unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) };
    assert!(name_fault(name).is_none(), "the lookup callback got a bad name {name:?}");
    assert!(!out.is_null(), "the lookup callback got a NULL out");
    let reply = fs.lookups.get(n as usize % fs.lookups.len().max(1)).cloned();
    let Some(reply) = reply else {
        fs.last_reply.set((0, udc_entry::default()));
        return 0;
    };
    let live = fs.live.get();
    let nested = CName::new(&NameArg::Pick(5));
    match reply.nested {
        Some(Nested::Lookup) => {
            let mut e = udc_entry::default();
            // SAFETY: a live handle, a name buffer of its length and a writable entry.
            let r = unsafe { udc_lookup(live, ROOT, nested.ptr(), nested.len, &mut e) };
            assert!([UDC_MISS, UDC_POSITIVE, UDC_NEGATIVE].contains(&r), "nested lookup: {r}");
        }
        Some(Nested::Add(arg)) => {
            let e = udc_entry { ino: ino(arg.ino) | 1 << 62, ..entry(arg) };
            // SAFETY: a live handle, a name buffer of its length and an entry.
            let r = unsafe { udc_add(live, ROOT, nested.ptr(), nested.len, &e) };
            assert!(r <= 0, "nested add: {r}");
        }
        Some(Nested::Unlink) => {
            // SAFETY: a live handle and a name buffer of its length.
            let r = unsafe { udc_unlink(live, ROOT, nested.ptr(), nested.len) };
            assert!(r == 0 || r == -ENOENT, "nested unlink: {r}");
        }
        Some(Nested::Stats) => {
            let mut s = udc_stats { size: size_of::<udc_stats>(), ..Default::default() };
            // SAFETY: a live handle and a writable, sized udc_stats.
            assert_eq!(unsafe { udc_stats_get(live, &mut s) }, 0);
        }
        None => {}
    }
    let e = entry(reply.entry);
    // SAFETY: `out` is a writable udc_entry for the call (the library's contract).
    unsafe { out.write(e) };
    let r = ret(reply.ret);
    fs.last_reply.set((r, e));
    if !(0..=1).contains(&r) {
        fs.callback_errnos.borrow_mut().insert(callback_errno(r));
    }
    r
}

/// The revalidate callback: checks what it is told, answers from the script (any value, any
/// ttl), never calls the library (it may run inside a lockless walk).
///
/// # Safety
///
/// `ctx` is the running input's `Fs`; `name` points to `len` readable bytes, `cached` to a
/// `udc_cached` and `ttl_ns` to a writable `uint64_t` (the library's side of the contract).
unsafe extern "C" fn on_revalidate(
    ctx: *mut c_void,
    _parent: u64,
    name: *const c_char,
    len: usize,
    cached: *const udc_cached,
    may_block: c_int,
    ttl_ns: *mut u64,
) -> c_int {
    let fs = Fs::from_ctx(ctx);
    let n = fs.reval_calls.get();
    fs.reval_calls.set(n + 1);
    // SAFETY: as documented above; ASan checks the lengths.
    let (name, cached, ttl) =
        unsafe { (std::slice::from_raw_parts(name.cast::<u8>(), len), *cached, &mut *ttl_ns) };
    assert!(name_fault(name).is_none(), "revalidate got a bad name {name:?}");
    assert_eq!(cached.size, size_of::<udc_cached>());
    assert!(may_block == 0 || may_block == 1, "may_block {may_block}");
    assert_eq!(*ttl, UDC_TTL_CONFIGURED, "*ttl_ns not preset");
    assert!([0, 1].contains(&cached.negative) && [0, 1].contains(&cached.expired));
    assert!([0, 1].contains(&cached.dir_changed));
    assert_eq!(cached.negative == 1, cached.entry.ino == 0, "{cached:?}");
    let Some(reply) = fs.revals.get(n as usize % fs.revals.len().max(1)).copied() else {
        return UDC_REVAL_VALID;
    };
    *ttl = match reply.ttl % 5 {
        0 => UDC_TTL_CONFIGURED,
        1 => 0,
        2 => UDC_TTL_FOREVER,
        3 => 1_000_000,
        _ => u64::from(reply.ttl) << 30,
    };
    match reply.ret % 8 {
        0..=3 => UDC_REVAL_VALID,
        4 => UDC_REVAL_NEEDS_BLOCK,
        _ => c_int::from(reply.ret),
    }
}

/// The access callback: checks the credential, answers from the script (masks, above 7,
/// errnos).
///
/// # Safety
///
/// `ctx` is the running input's `Fs`; `cred` points to a `udc_cred` whose groups are readable.
unsafe extern "C" fn on_access(ctx: *mut c_void, _ino: u64, cred: *const udc_cred) -> c_int {
    let fs = Fs::from_ctx(ctx);
    let n = fs.access_calls.get();
    fs.access_calls.set(n + 1);
    // SAFETY: the caller's credential, passed through (the library's contract).
    let cred = unsafe { &*cred };
    assert!(cred.size >= size_of::<udc_cred>() && cred.ngroups <= 65536);
    if cred.ngroups > 0 {
        // SAFETY: a well-formed credential's groups (checked by the library); ASan checks.
        let groups = unsafe { std::slice::from_raw_parts(cred.groups, cred.ngroups) };
        std::hint::black_box(groups.iter().sum::<u32>());
    }
    let r = fs.grants.get(n as usize % fs.grants.len().max(1)).map_or(7, |&g| match g {
        Ret::Zero => 0,
        Ret::One => 5,
        r => ret(r),
    });
    fs.last_grant.set(r);
    if r < 0 {
        fs.callback_errnos.borrow_mut().insert(callback_errno(r));
    }
    r
}

/// The readdir callback: fills from the script (well or badly) and checks each
/// `udc_fill_add` / `udc_fill_done` answer.
///
/// # Safety
///
/// `ctx` is the running input's `Fs`; `fill` is the fill lent to this call.
unsafe extern "C" fn on_readdir(
    ctx: *mut c_void,
    _dir: u64,
    _cookie: u64,
    max: usize,
    fill: *mut udc_fill,
) -> c_int {
    let fs = Fs::from_ctx(ctx);
    let n = fs.readdir_calls.get();
    fs.readdir_calls.set(n + 1);
    assert!(max > 0, "a readdir callback asked for 0 entries");
    let Some(script) = fs.fills.get(n as usize % fs.fills.len().max(1)).cloned() else {
        // SAFETY: the running callback's fill.
        assert_eq!(unsafe { udc_fill_done(fill, 1, 0) }, 0);
        return 0;
    };
    let mut garbage = [0u64; 64];
    let (mut added, mut done) = (0usize, false);
    let mut add = |e: &FillEntry, done: bool| {
        let name = CName::new(&e.name);
        let (ino, cookie) = (u64::from(e.ino), u64::from(e.cookie));
        let ty = if e.ty < 200 { u32::from(e.ty % 6) } else { u32::from(e.ty) };
        let (target, fault) = match e.fill % 8 {
            6 => (ptr::null_mut(), Some(EINVAL)),
            7 => (garbage.as_mut_ptr().cast::<udc_fill>(), Some(EBADF)),
            _ => (fill, None),
        };
        let want = fault.or(name.fault()).or({
            if ino == 0 || cookie == 0 || done || ty > 4 {
                Some(EINVAL)
            } else if added >= max {
                Some(ENOSPC)
            } else {
                None
            }
        });
        // SAFETY: the running callback's fill (or NULL, or zeroed memory larger than a fill,
        // whose magic word is wrong); a name buffer of its length.
        let r = unsafe { udc_fill_add(target, name.ptr(), name.len, ino, ty, cookie) };
        assert_eq!(r, want.map_or(0, |e| -e), "udc_fill_add({e:?}) after {added} of {max}");
        if r == 0 {
            added += 1;
            fs.accepted.borrow_mut().insert((name.buf.to_vec(), ino, ty, cookie));
        }
    };
    for e in script.entries.iter().take(40) {
        add(e, false);
    }
    if let Some((eof, verifier)) = script.done {
        // SAFETY: the running callback's fill.
        assert_eq!(unsafe { udc_fill_done(fill, c_int::from(eof), verifier) }, 0);
        done = true;
        if script.done_twice {
            // SAFETY: as above.
            assert_eq!(unsafe { udc_fill_done(fill, 0, verifier) }, -EINVAL);
        }
        if script.add_after_done
            && let Some(e) = script.entries.first()
        {
            add(e, done);
        }
    }
    // SAFETY: a NULL fill must be refused before anything is read.
    assert_eq!(unsafe { udc_fill_done(ptr::null_mut(), 0, 0) }, -EINVAL);
    let r = ret(script.ret);
    if r != 0 || !done {
        fs.readdir_errnos.borrow_mut().insert(if r == 0 { EIO } else { callback_errno(r) });
    }
    r
}

/// The `udc_children` visitor: records each child, stops after `stop_after` if set.
///
/// # Safety
///
/// `ctx` is the running call's `Visit`; `name` points to `len` readable bytes and `entry` to a
/// live `udc_entry`.
unsafe extern "C" fn on_child(
    ctx: *mut c_void,
    name: *const c_char,
    len: usize,
    entry: *const udc_entry,
) -> c_int {
    // SAFETY: ctx is the `Visit` of the running `udc_children` call.
    let visit = unsafe { &mut *ctx.cast::<Visit>() };
    // SAFETY: the library passes `len` readable bytes and a live entry (its contract).
    let (name, entry) = unsafe { (std::slice::from_raw_parts(name.cast::<u8>(), len), *entry) };
    visit.seen.push((name.to_vec(), entry));
    c_int::from(visit.stop_after.is_some_and(|s| visit.seen.len() > usize::from(s)))
}

/// What `on_child` collects.
struct Visit {
    stop_after: Option<u8>,
    seen: Vec<(Vec<u8>, udc_entry)>,
}

// ---- the handles and the checks --------------------------------------------------------------

struct World<'f> {
    live: *mut udc_cache,
    /// A second cache no operation touches.
    quiet: *mut udc_cache,
    quiet_stats: udc_stats,
    garbage: Box<[u64]>,
    fs: &'f Fs,
    ops_set: bool,
    last: udc_stats,
    /// `udc_resolve` misses answered `-ENOSYS` for want of a callback (counted by the cache).
    unanswered: u64,
    /// Whether some call may have moved or dropped `sentinel/f` of the live cache (or made
    /// it untrusted: finite entry timeouts).
    sentinel_touched: bool,
    cookies: Vec<u64>,
    /// Whether the revalidate callback is set (else its default may call the lookup callback,
    /// uncounted as a backend lookup).
    reval_set: bool,
    /// Stamps `udc_access_stamp` gave.
    stamps: Vec<u64>,
    /// The last well-formed credential used, for checks after a revocation.
    last_cred: Option<CredArg>,
    /// Access results are kept until revoked (`access_timeout_ns` forever).
    access_forever: bool,
    /// Some positive name may have a finite timeout (configured, set, or a revalidation's).
    timed: bool,
    /// `negative_timeout_ns` is finite: a complete listing never answers a miss.
    negatives_expire: bool,
}

impl World<'_> {
    fn handle(&mut self, h: H) -> (*mut udc_cache, Option<c_int>) {
        match h.0 % 16 {
            12 => (ptr::null_mut(), Some(EINVAL)),
            13 => (self.garbage.as_mut_ptr().cast(), Some(EBADF)),
            // SAFETY: one byte into a live allocation of 4 KiB: in bounds, never dereferenced
            // (the library checks alignment first).
            14 => (unsafe { self.garbage.as_mut_ptr().cast::<u8>().add(1) }.cast(), Some(EBADF)),
            _ => (self.live, None),
        }
    }

    fn stats(&self, cache: *mut udc_cache) -> udc_stats {
        let mut s = udc_stats { size: size_of::<udc_stats>(), ..Default::default() };
        // SAFETY: a live handle and a writable, sized udc_stats.
        assert_eq!(unsafe { udc_stats_get(cache, &mut s) }, 0, "stats of a live cache");
        s
    }

    /// `udc_lookup` of a well-formed name: the result and the inode if positive.
    fn lookup(&self, parent: u64, name: &[u8]) -> (c_int, u64) {
        let mut e = udc_entry::default();
        // SAFETY: a live handle, a name of its length, a writable entry.
        let r = unsafe { udc_lookup(self.live, parent, name.as_ptr().cast(), name.len(), &mut e) };
        assert!(
            [UDC_MISS, UDC_POSITIVE, UDC_NEGATIVE, -ESTALE, -ENOTDIR].contains(&r),
            "lookup({parent}, {name:?}) = {r}"
        );
        if r == UDC_POSITIVE {
            assert!(e.ino != 0 && (1..=4).contains(&e.r#type), "a positive lookup gave {e:?}");
        }
        (r, if r == UDC_POSITIVE { e.ino } else { 0 })
    }

    /// Checks what `udc_children` visited in `dir`: no child twice, each a well-formed name
    /// that a lookup answers with the visited number (or no longer trusts); if the visit ran
    /// to the end (`complete`), every positive name the input can pick in `dir` was visited.
    fn check_visited(&self, dir: u64, seen: &[(Vec<u8>, udc_entry)], complete: bool) {
        let names: BTreeSet<&[u8]> = seen.iter().map(|(n, _)| &n[..]).collect();
        assert_eq!(names.len(), seen.len(), "a child visited twice");
        for (name, e) in seen {
            assert!(name_fault(name).is_none(), "child name {name:?}");
            let found = self.lookup(dir, name);
            // An untrusted child (its timeout passed) is a miss until revalidated.
            let untrusted = self.timed && found == (UDC_MISS, 0);
            assert!(found == (UDC_POSITIVE, e.ino) || untrusted, "child {name:?}");
        }
        if !complete {
            return;
        }
        for i in 0..16 {
            let Some(name) = CName::new(&NameArg::Pick(i)).valid().map(<[u8]>::to_vec) else {
                continue;
            };
            if let (UDC_POSITIVE, ino) = self.lookup(dir, &name) {
                let visited = seen.iter().any(|(n, e)| *n == name && e.ino == ino);
                assert!(visited, "positive child {name:?} ({ino}) of {dir} not visited");
            }
        }
    }

    /// Lists `dir`'s children to the end and checks them (see [`World::check_visited`]):
    /// once per input, after its last call, so that the lookups it makes (which mark names
    /// referenced) do not steer what the input's own calls evict.
    fn check_children(&self, dir: u64) {
        let mut visit = Visit { stop_after: None, seen: Vec::new() };
        let ctx: *mut c_void = (&mut visit as *mut Visit).cast();
        // SAFETY: a live handle; `on_child` with its `Visit` context, alive for the call.
        let r = unsafe { udc_children(self.live, dir, Some(on_child), ctx) };
        assert!(r >= 0 || [-ESTALE, -ENOTDIR].contains(&r), "children({dir}) = {r}");
        if r >= 0 {
            assert_eq!(r as usize, visit.seen.len(), "children count against visits");
            self.check_visited(dir, &visit.seen, true);
        }
    }

    /// What a refused call must leave as it was: the counts and the names it mentions.
    fn snapshot(&self, keys: &[(u64, &CName)]) -> (u64, u64, u64, Vec<(c_int, u64)>) {
        let s = self.stats(self.live);
        let names = keys
            .iter()
            .filter_map(|(p, n)| n.valid().map(|n| self.lookup(*p, n)))
            .collect::<Vec<_>>();
        (s.nr_dentry, s.nr_negative, s.nr_inodes, names)
    }

    fn walk(&self, cache: *mut udc_cache, path: &[u8]) -> (c_int, udc_walk_result) {
        let mut w = udc_walk_result { size: size_of::<udc_walk_result>(), ..Default::default() };
        // SAFETY: a live handle, a path of its length and a writable, sized result.
        let r = unsafe { udc_walk(cache, ROOT, path.as_ptr().cast(), path.len(), &mut w) };
        (r, w)
    }

    /// After every call: the cache is sound through the API.
    fn check(&mut self) {
        let s = self.stats(self.live);
        assert!(s.nr_negative <= s.nr_dentry && s.nr_unused <= s.nr_dentry, "{s:?}");
        assert!(s.nr_inodes >= 1, "the root is gone: {s:?}");
        if self.negatives_expire {
            assert_eq!(s.complete_dir_negatives, 0, "a listing answered under a negative timeout");
        }
        let l = &self.last;
        for (now, before) in [
            (s.negative_evictions, l.negative_evictions),
            (s.walk_fallbacks, l.walk_fallbacks),
            (s.backend_lookups, l.backend_lookups),
            (s.coalesced_misses, l.coalesced_misses),
            (s.readdir_hits, l.readdir_hits),
            (s.readdir_misses, l.readdir_misses),
            (s.complete_dir_negatives, l.complete_dir_negatives),
            (s.revalidations, l.revalidations),
            (s.fallback_expired, l.fallback_expired),
            (s.fallback_verifier, l.fallback_verifier),
            (s.fallback_access, l.fallback_access),
            (s.fallback_needs_block, l.fallback_needs_block),
            (s.access_hits, l.access_hits),
        ] {
            assert!(now >= before, "a counter went back: {before} -> {now}");
        }
        let calls = self.fs.lookup_calls.get() + self.unanswered;
        if self.reval_set {
            assert_eq!(s.backend_lookups, calls, "backend_lookups against the callback's count");
        } else {
            // The default revalidation looks the name up again, uncounted as a backend lookup.
            assert!(s.backend_lookups <= calls, "more backend lookups than callback calls");
            assert!(calls <= s.backend_lookups + s.revalidations, "uncounted lookup calls");
        }
        if self.reval_set {
            assert_eq!(s.revalidations, self.fs.reval_calls.get(), "revalidations against calls");
        }
        assert_eq!(s.access_calls, self.fs.access_calls.get(), "access_calls against calls");
        self.last = s;
        if !self.sentinel_touched {
            let (r, w) = self.walk(self.live, b"sentinel/f");
            assert_eq!((r, w.entry.ino, w.entry.fs_data), (UDC_WALK_FOUND as c_int, SENT_FILE, 77));
        }
        let (r, w) = self.walk(self.quiet, b"/sentinel/./f");
        assert_eq!((r, w.entry.ino, w.entry.fs_data), (UDC_WALK_FOUND as c_int, SENT_FILE, 77));
        let q = self.stats(self.quiet);
        assert_eq!(
            (q.nr_dentry, q.nr_negative, q.nr_inodes, q.backend_lookups),
            (
                self.quiet_stats.nr_dentry,
                self.quiet_stats.nr_negative,
                self.quiet_stats.nr_inodes,
                self.quiet_stats.backend_lookups
            ),
            "the untouched cache changed"
        );
    }

    /// A call that may move or drop the live cache's sentinel.
    fn touches_sentinel(&mut self, inos: &[u64], names: &[&CName]) {
        if inos.iter().any(|&i| i == SENT_DIR || i == SENT_FILE)
            || names.iter().any(|n| n.valid() == Some(SENT_NAME))
        {
            self.sentinel_touched = true;
        }
    }
}

/// Checks a result: with malformed arguments, one of their errnos; else a value in `ok` or
/// one of `errs` (negated).
fn expect(
    what: &str,
    r: c_int,
    faults: &[Option<c_int>],
    ok: RangeInclusive<c_int>,
    errs: &[c_int],
) {
    let faults: Vec<c_int> = faults.iter().flatten().copied().collect();
    if faults.is_empty() {
        assert!(ok.contains(&r) || (r < 0 && errs.contains(&-r)), "{what}: {r}");
    } else {
        assert!(r < 0 && faults.contains(&-r), "{what}: {r}, malformed arguments {faults:?}");
    }
}

fn make_cache(cfg: &Cfg) -> *mut udc_cache {
    let mut c = udc_config::default();
    // SAFETY: a writable udc_config.
    unsafe { udc_config_init(&mut c) };
    assert_eq!(c.size, size_of::<udc_config>());
    // Sizes over 2^28 are refused; the others are kept small (a table is allocated whole),
    // and 0 (65536 entries) only with a NULL config.
    let size = |x: u32, small: u32| if x > 1 << 28 { x as usize } else { (x % small) as usize };
    c.size = sized::<udc_config>(cfg.size);
    c.expected_entries = 1 + size(cfg.expected, 512);
    c.buckets = size(cfg.buckets, 64);
    c.negative_cap = cfg.negative_cap;
    c.unlink_policy = match cfg.policy % 8 {
        0..=3 => 0,
        4 | 5 => 1,
        6 => 2,
        _ => u32::MAX,
    };
    c.readdir_pages = usize::from(cfg.readdir_pages);
    c.readdir_page_entries = usize::from(cfg.page_entries);
    c.entry_timeout_ns = timeout(cfg.timeouts[0]);
    c.negative_timeout_ns = timeout(cfg.timeouts[1]);
    c.access_timeout_ns = timeout(cfg.timeouts[2]);
    let (null_cfg, null_out) = (cfg.nulls.is_multiple_of(16), cfg.nulls % 16 == 1);
    let bad_cfg = !null_cfg
        && (c.size < size_of::<udc_config>()
            || c.unlink_policy > 1
            || c.expected_entries > 1 << 28
            || c.buckets > 1 << 28);
    let unset = ptr::without_provenance_mut::<udc_cache>(8);
    let mut out = unset;
    let cfg_ptr: *const udc_config = if null_cfg { ptr::null() } else { &c };
    let out_ptr: *mut *mut udc_cache = if null_out { ptr::null_mut() } else { &mut out };
    // SAFETY: NULL or a udc_config; NULL or a writable pointer.
    let r = unsafe { udc_cache_new(cfg_ptr, out_ptr) };
    if null_out || bad_cfg {
        assert_eq!((r, out), (-EINVAL, unset), "udc_cache_new with bad arguments");
        let mut fresh = ptr::null_mut();
        let small = udc_config { expected_entries: 64, ..c };
        let small = udc_config { size: size_of::<udc_config>(), unlink_policy: 0, ..small };
        let small = udc_config { buckets: small.buckets % 64, ..small };
        // SAFETY: a valid config and a writable pointer.
        assert_eq!(unsafe { udc_cache_new(&small, &mut fresh) }, 0);
        return fresh;
    }
    assert_eq!(r, 0, "udc_cache_new({c:?})");
    assert!(!out.is_null() && out != unset);
    out
}

/// The second cache: made once, with `sentinel/f`, and then only read (by every input, so
/// that what one input does to the library's shared state shows in the next), with its figures
/// as made.
fn quiet() -> &'static Quiet {
    static QUIET: OnceLock<Quiet> = OnceLock::new();
    QUIET.get_or_init(|| {
        let c = udc_config {
            size: size_of::<udc_config>(),
            expected_entries: 64,
            entry_timeout_ns: UDC_TTL_FOREVER,
            negative_timeout_ns: UDC_TTL_FOREVER,
            access_timeout_ns: UDC_TTL_FOREVER,
            ..Default::default()
        };
        let mut cache = ptr::null_mut();
        // SAFETY: a valid config and a writable pointer.
        assert_eq!(unsafe { udc_cache_new(&c, &mut cache) }, 0);
        add_sentinel(cache);
        let mut s = udc_stats { size: size_of::<udc_stats>(), ..Default::default() };
        // SAFETY: a live handle and a writable, sized udc_stats.
        assert_eq!(unsafe { udc_stats_get(cache, &mut s) }, 0);
        Quiet(cache, s)
    })
}

/// A cache handle and its figures when made.
struct Quiet(*mut udc_cache, udc_stats);

// SAFETY: every udc_ function is thread-safe on one handle (the header's rule), and this one is
// never destroyed.
unsafe impl Sync for Quiet {}
// SAFETY: as above.
unsafe impl Send for Quiet {}

/// Adds `sentinel/f` to a cache.
fn add_sentinel(cache: *mut udc_cache) {
    let dir = udc_entry { ino: SENT_DIR, r#type: 1, fs_data: 0 };
    let file = udc_entry { ino: SENT_FILE, r#type: 2, fs_data: 77 };
    // SAFETY: a live handle, names of their lengths, entries.
    unsafe {
        assert_eq!(udc_add(cache, ROOT, SENT_NAME.as_ptr().cast(), SENT_NAME.len(), &dir), 0);
        assert_eq!(udc_add(cache, SENT_DIR, b"f".as_ptr().cast(), 1, &file), 0);
    }
}

fuzz_target!(|input: Input| {
    // SAFETY: udc_version returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(udc_version()) };
    assert!(!version.to_bytes().is_empty());
    // SAFETY: NULL is ignored by both.
    unsafe {
        udc_config_init(ptr::null_mut());
        udc_cache_destroy(ptr::null_mut());
    }

    let fs = Fs {
        live: Cell::new(ptr::null_mut()),
        lookups: input.lookups.clone(),
        fills: input.fills.clone(),
        lookup_calls: Cell::new(0),
        readdir_calls: Cell::new(0),
        last_reply: Cell::new((0, udc_entry::default())),
        readdir_errnos: RefCell::new(BTreeSet::new()),
        accepted: RefCell::new(BTreeSet::new()),
        revals: input.revals.clone(),
        grants: input.grants.clone(),
        reval_calls: Cell::new(0),
        access_calls: Cell::new(0),
        last_grant: Cell::new(0),
        callback_errnos: RefCell::new(BTreeSet::new()),
    };
    let live = make_cache(&input.cfg);
    fs.live.set(live);
    add_sentinel(live);
    let quiet = quiet();
    // Garbage handles: the input's bytes, with no word equal to the live magic.
    let mut garbage: Box<[u64]> = (0..512)
        .map(|i| {
            let at = i % 4 * 8;
            u64::from_le_bytes(input.garbage[at..at + 8].try_into().expect("8 bytes"))
        })
        .map(|w| if w == LIVE { !w } else { w })
        .collect();
    let mut w = World {
        live,
        quiet: quiet.0,
        quiet_stats: quiet.1,
        garbage: std::mem::take(&mut garbage),
        fs: &fs,
        ops_set: false,
        last: udc_stats::default(),
        unanswered: 0,
        // A NULL config has the defaults (forever); any other, the input's timeouts.
        sentinel_touched: !input.cfg.nulls.is_multiple_of(16)
            && [1, 2].contains(&(input.cfg.timeouts[0] % 4)),
        cookies: Vec::new(),
        reval_set: false,
        stamps: Vec::new(),
        last_cred: None,
        access_forever: input.cfg.nulls.is_multiple_of(16)
            || [0, 3].contains(&(input.cfg.timeouts[2] % 4)),
        timed: !input.cfg.nulls.is_multiple_of(16) && !input.cfg.timeouts[0].is_multiple_of(4),
        negatives_expire: !input.cfg.nulls.is_multiple_of(16)
            && !input.cfg.timeouts[1].is_multiple_of(4),
    };
    w.last = w.stats(live);
    // The garbage handle is refused by destroy too.
    // SAFETY: aligned, readable memory whose magic word is wrong: ignored.
    unsafe { udc_cache_destroy(w.garbage.as_mut_ptr().cast()) };
    w.check();

    if let Some([lookup, readdir, reval, access]) = input.callbacks_first {
        let set = Op::SetOps { h: H(0), size: 0, lookup, readdir, reval, access, null: false };
        run(&mut w, &set);
    }
    for op in input.ops.iter().take(200) {
        run(&mut w, op);
        w.check();
    }
    for dir in [ROOT, 2, 3, 4, 5, SENT_DIR] {
        w.check_children(dir);
    }

    // SAFETY: a live handle no one else uses, destroyed once.
    unsafe { udc_cache_destroy(live) };
});

/// A call that changes one name: `udc_add_negative`, `udc_unlink`, `udc_invalidate`.
type NameCall = unsafe extern "C" fn(*mut udc_cache, u64, *const c_char, usize) -> c_int;

/// Runs a [`NameCall`] and checks it: the documented errors, no change when refused, and after
/// a success a lookup of the name answers one of `after`.
fn change_name(
    w: &mut World<'_>,
    (h, parent, name): (H, InoArg, &NameArg),
    (what, call, errs, after): (&str, NameCall, &[c_int], &[c_int]),
) {
    let (c, hf) = w.handle(h);
    let (parent, name) = (ino(parent), CName::new(name));
    let before = w.snapshot(&[(parent, &name)]);
    // SAFETY: a handle as made; a name of its length.
    let r = unsafe { call(c, parent, name.ptr(), name.len) };
    expect(what, r, &[hf, name.fault()], 0..=0, errs);
    if r == 0 {
        let (now, _) = w.lookup(parent, name.valid().expect("accepted, so well-formed"));
        assert!(after.contains(&now), "after {what}: {now}");
    } else {
        assert_eq!(w.snapshot(&[(parent, &name)]), before, "a refused {what} changed something");
    }
    w.touches_sentinel(&[parent], &[&name]);
}

fn run(w: &mut World<'_>, op: &Op) {
    let lookup_calls = w.fs.lookup_calls.get();
    let readdir_calls = w.fs.readdir_calls.get();
    let (reval_calls, access_calls) = (w.fs.reval_calls.get(), w.fs.access_calls.get());
    match op {
        Op::Lookup { h, parent, name, out_null, peek } => {
            let (c, hf) = w.handle(*h);
            let (parent, name) = (ino(*parent), CName::new(name));
            let mut e = udc_entry::default();
            let out: *mut udc_entry = if *out_null { ptr::null_mut() } else { &mut e };
            // SAFETY: a handle as `World::handle` makes it; a name of its length; NULL or an
            // entry.
            let r = unsafe { udc_lookup(c, parent, name.ptr(), name.len, out) };
            let faults = [hf, name.fault(), out_null.then_some(EINVAL)];
            expect("lookup", r, &faults, UDC_MISS..=UDC_NEGATIVE, &[ESTALE, ENOTDIR]);
            if r == UDC_POSITIVE {
                assert!(e.ino != 0 && (1..=4).contains(&e.r#type), "lookup gave {e:?}");
            }
            if *peek {
                // udc_peek answers what udc_lookup just answered, errors included.
                let mut p = udc_entry::default();
                let out: *mut udc_entry = if *out_null { ptr::null_mut() } else { &mut p };
                // SAFETY: as for lookup.
                let again = unsafe { udc_peek(c, parent, name.ptr(), name.len, out) };
                assert_eq!(again, r, "peek after lookup");
                assert_eq!((p.ino, p.r#type, p.fs_data), (e.ino, e.r#type, e.fs_data), "peek");
            }
        }
        Op::Resolve { h, parent, name, out_null } => {
            let (c, hf) = w.handle(*h);
            let (parent, name) = (ino(*parent), CName::new(name));
            let before = w.stats(w.live);
            let mut e = udc_entry::default();
            let out: *mut udc_entry = if *out_null { ptr::null_mut() } else { &mut e };
            // SAFETY: as for lookup.
            let r = unsafe { udc_resolve(c, parent, name.ptr(), name.len, out) };
            let faults = [hf, name.fault(), out_null.then_some(EINVAL)];
            let called = w.fs.lookup_calls.get() - lookup_calls;
            let after = w.stats(w.live);
            let counted = after.backend_lookups - before.backend_lookups;
            if after.revalidations > before.revalidations {
                // A stale name was revalidated first (maybe by a lookup, maybe dropped and
                // looked up again): only the documented results.
                let mut errs = vec![ESTALE, ENOTDIR, EMLINK, EIO, EEXIST, ENOSYS];
                errs.extend(w.fs.callback_errnos.borrow().iter());
                expect("resolve (revalidated)", r, &faults, UDC_POSITIVE..=UDC_NEGATIVE, &errs);
                if r == -ENOSYS {
                    w.unanswered += counted.saturating_sub(called);
                }
            } else if called == 1 {
                let (reply, given) = w.fs.last_reply.get();
                match reply {
                    // An entry the cache refuses to file is the callback's broken contract.
                    1 if entry_fault(&given).is_some() => assert_eq!(r, -EIO, "bad entry"),
                    1 => {
                        let errs = [ESTALE, ENOTDIR, EMLINK, EIO, EEXIST];
                        expect("resolve (found)", r, &[], UDC_POSITIVE..=UDC_POSITIVE, &errs);
                        if r == UDC_POSITIVE {
                            assert_eq!(e.ino, given.ino, "resolve answered another inode");
                            if name.valid() != Some(NESTED) {
                                let (now, at) = w.lookup(parent, name.valid().unwrap());
                                assert_eq!((now, at), (UDC_POSITIVE, given.ino), "not filed");
                            }
                        }
                    }
                    0 => expect(
                        "resolve (absent)",
                        r,
                        &[],
                        UDC_NEGATIVE..=UDC_NEGATIVE,
                        &[ESTALE, ENOTDIR],
                    ),
                    r0 => assert_eq!(r, -callback_errno(r0), "resolve after callback {r0}"),
                }
            } else {
                assert_eq!(called, 0);
                let ok = UDC_POSITIVE..=UDC_NEGATIVE;
                expect("resolve (no call)", r, &faults, ok, &[ESTALE, ENOTDIR, ENOSYS]);
                if r == -ENOSYS {
                    assert_eq!(counted, 1, "an unanswered miss is counted once");
                    w.unanswered += 1;
                } else {
                    assert_eq!(counted, 0, "a call counted with no callback call");
                }
                if r == UDC_POSITIVE {
                    assert!(e.ino != 0 && (1..=4).contains(&e.r#type), "resolve gave {e:?}");
                }
            }
            w.touches_sentinel(&[parent], &[&name]);
        }
        Op::Walk { h, root, path, out_null, size } => {
            let (c, hf) = w.handle(*h);
            let (p, mut out) = (CPath::new(path), walk_out(*size));
            let out_ptr: *mut udc_walk_result = if *out_null { ptr::null_mut() } else { &mut out };
            // SAFETY: a handle as made; NULL or `len` readable bytes; NULL or a writable result.
            let r = unsafe { udc_walk(c, ino(*root), p.ptr(), p.len, out_ptr) };
            let faults = p.faults(hf, *out_null, &out);
            expect("walk", r, &faults, 0..=4, &[ESTALE]);
            p.check_result(r, &out);
        }
        Op::WalkAs { h, root, path, cred, out_null, size } => {
            let (c, hf) = w.handle(*h);
            let (p, mut out, cr) = (CPath::new(path), walk_out(*size), CCred::new(cred));
            let out_ptr: *mut udc_walk_result = if *out_null { ptr::null_mut() } else { &mut out };
            let access_calls = w.fs.access_calls.get();
            // SAFETY: a handle as made; NULL or `len` readable bytes; NULL or a credential;
            // NULL or a writable result.
            let r = unsafe { udc_walk_as(c, ino(*root), p.ptr(), p.len, cr.ptr(), out_ptr) };
            let mut faults = p.faults(hf, *out_null, &out).to_vec();
            faults.push(cr.fault_or_null());
            let mut errs = vec![ESTALE, ENOTDIR, EAGAIN, EIO, EMLINK, EEXIST, ENOSYS];
            errs.extend(w.fs.callback_errnos.borrow().iter());
            expect("walk_as", r, &faults, 0..=5, &errs);
            p.check_result(r, &out);
            if cr.null {
                assert_eq!(w.fs.access_calls.get(), access_calls, "access asked with no cred");
                assert_ne!(r, UDC_WALK_DENIED as c_int, "denied with no credential");
            }
            // A revalidation may drop or refresh any name, the sentinel's too.
            w.sentinel_touched |= r >= 0 || r == -EAGAIN;
        }
        Op::Children { h, dir, stop_after } => {
            let (c, hf) = w.handle(*h);
            let dir = ino(*dir);
            let mut visit = Visit { stop_after: *stop_after, seen: Vec::new() };
            let ctx: *mut c_void = (&mut visit as *mut Visit).cast();
            // SAFETY: a handle as made; `on_child` with its `Visit` context, alive for the call.
            let r = unsafe { udc_children(c, dir, Some(on_child), ctx) };
            expect("children", r, &[hf], 0..=c_int::MAX, &[ESTALE, ENOTDIR]);
            if r >= 0 {
                assert_eq!(r as usize, visit.seen.len(), "children count against visits");
                // SAFETY: a live handle; no visitor.
                let all = unsafe { udc_children(c, dir, None, ptr::null_mut()) };
                assert!(all >= r, "children without a visitor: {all} < {r}");
                if stop_after.is_none() {
                    assert_eq!(all, r);
                }
                w.check_visited(dir, &visit.seen, stop_after.is_none());
            }
        }
        Op::Add { h, parent, name, entry: arg, e_null } => {
            let (c, hf) = w.handle(*h);
            let (parent, name, e) = (ino(*parent), CName::new(name), entry(*arg));
            let before = w.snapshot(&[(parent, &name)]);
            let e_ptr: *const udc_entry = if *e_null { ptr::null() } else { &e };
            // SAFETY: a handle as made; a name of its length; NULL or an entry.
            let r = unsafe { udc_add(c, parent, name.ptr(), name.len, e_ptr) };
            let e_fault = if *e_null { Some(EINVAL) } else { entry_fault(&e) };
            let faults = [hf, name.fault(), e_fault];
            // A type other than the cached inode's is -EINVAL, as the header says.
            let errs = [EINVAL, ESTALE, ENOTDIR, EEXIST, EMLINK];
            expect("add", r, &faults, 0..=0, &errs);
            if r == 0 {
                let found = w.lookup(parent, name.valid().unwrap());
                // A finite entry timeout shorter than a tick (2^24 ns) rounds down: the new
                // name may be untrusted at once, a miss until revalidated.
                let untrusted = w.timed && found == (UDC_MISS, 0);
                assert!(found == (UDC_POSITIVE, e.ino) || untrusted, "an added name is not found");
            } else {
                assert_eq!(w.snapshot(&[(parent, &name)]), before, "a refused add changed");
            }
            w.touches_sentinel(&[parent, e.ino], &[&name]);
        }
        Op::AddNegative { h, parent, name } => {
            let after = [UDC_NEGATIVE, UDC_MISS];
            let errs = [ESTALE, ENOTDIR, EEXIST];
            change_name(w, (*h, *parent, name), ("add_negative", udc_add_negative, &errs, &after));
        }
        Op::Unlink { h, parent, name } => {
            let after = [UDC_NEGATIVE, UDC_MISS];
            change_name(
                w,
                (*h, *parent, name),
                ("unlink", udc_unlink, &[ESTALE, ENOTDIR, ENOENT], &after),
            );
        }
        Op::Rename { h, from, old, to, new, flags } => {
            let (c, hf) = w.handle(*h);
            let (from, old, to, new) = (ino(*from), CName::new(old), ino(*to), CName::new(new));
            let flags = match flags % 8 {
                f @ 0..=3 => u32::from(f),
                f => 1 << f,
            };
            let keys = [(from, &old), (to, &new)];
            let before = w.snapshot(&keys);
            // SAFETY: a handle as made; names of their lengths.
            let r =
                unsafe { udc_rename(c, from, old.ptr(), old.len, to, new.ptr(), new.len, flags) };
            let faults = [hf, old.fault(), new.fault(), (flags > 2).then_some(EINVAL)];
            let errs = [ESTALE, ENOTDIR, ENOENT, EEXIST];
            expect("rename", r, &faults, 0..=0, &errs);
            if r == 0 {
                let (o, n) = (old.valid().unwrap(), new.valid().unwrap());
                let (was_old, was_new) = (before.3[0], before.3[1]);
                let (now_old, now_new) = (w.lookup(from, o), w.lookup(to, n));
                assert_eq!(now_new, (UDC_POSITIVE, was_old.1), "rename: the target");
                if flags == 2 {
                    assert_eq!(now_old, (UDC_POSITIVE, was_new.1), "exchange: the source");
                } else if was_new.1 != was_old.1 {
                    assert!(now_old.0 == UDC_NEGATIVE || now_old.0 == UDC_MISS, "rename source");
                }
            } else {
                assert_eq!(w.snapshot(&keys), before, "a refused rename changed something");
            }
            w.touches_sentinel(&[from, to], &[&old, &new]);
        }
        Op::Forget { h, ino: i, n } => {
            let (c, hf) = w.handle(*h);
            let i = ino(*i);
            let n = match n % 8 {
                5 => u64::MAX,
                6 => 1 << 40,
                n => u64::from(n % 3),
            };
            let before = w.snapshot(&[]);
            // SAFETY: a handle as made.
            let r = unsafe { udc_forget(c, i, n) };
            expect("forget", r, &[hf], 0..=0, &[ESTALE, EINVAL]);
            if r < 0 {
                assert_eq!(w.snapshot(&[]), before, "a refused forget changed something");
            }
            w.touches_sentinel(&[i], &[]);
        }
        Op::CountLookup { h, ino: i } => {
            let (c, hf) = w.handle(*h);
            let i = ino(*i);
            // SAFETY: a handle as made.
            let r = unsafe { udc_count_lookup(c, i) };
            expect("count_lookup", r, &[hf], 0..=0, &[ESTALE]);
            let mut a = udc_attr::default();
            // SAFETY: a live handle and a writable attr.
            let g = unsafe { udc_getattr(w.live, i, &mut a) };
            if hf.is_none() {
                assert_eq!(r == 0, g != -ESTALE, "count_lookup and getattr disagree on {i}");
            }
        }
        Op::Invalidate { h, parent, name } => {
            let errs = [ENOENT, ESTALE, ENOTDIR];
            change_name(w, (*h, *parent, name), ("invalidate", udc_invalidate, &errs, &[UDC_MISS]));
        }
        Op::Shrink { h, n } => {
            let (c, hf) = w.handle(*h);
            let n = *n as usize;
            let before = w.stats(w.live).nr_dentry;
            // SAFETY: a handle as made.
            let r = unsafe { udc_shrink(c, n) };
            expect("shrink", r, &[hf], 0..=c_int::MAX, &[]);
            if r >= 0 {
                assert!(r as usize <= n.min(c_int::MAX as usize), "shrink({n}) = {r}");
                let after = w.stats(w.live).nr_dentry;
                assert_eq!(before - after, r as u64, "shrink reported {r}, {before} -> {after}");
                w.sentinel_touched |= r > 0;
            }
        }
        Op::Getattr { h, ino: i, out_null } => {
            let (c, hf) = w.handle(*h);
            let mut a = udc_attr::default();
            let out: *mut udc_attr = if *out_null { ptr::null_mut() } else { &mut a };
            // SAFETY: a handle as made; NULL or a writable attr.
            let r = unsafe { udc_getattr(c, ino(*i), out) };
            expect("getattr", r, &[hf, out_null.then_some(EINVAL)], 0..=0, &[ENODATA, ESTALE]);
            if r == 0 {
                assert_eq!(a.ino, ino(*i));
            }
        }
        Op::Setattr { h, ino: i, size, mode, valid_ns, attr_null } => {
            let (c, hf) = w.handle(*h);
            let i = ino(*i);
            let attr = udc_attr { size: *size, mode: *mode, nlink: 1, ..Default::default() };
            let a: *const udc_attr = if *attr_null { ptr::null() } else { &attr };
            // SAFETY: a handle as made; NULL or an attr.
            let r = unsafe { udc_setattr(c, i, a, *valid_ns) };
            expect("setattr", r, &[hf, attr_null.then_some(EINVAL)], 0..=0, &[ESTALE, EINVAL]);
            let mut got = udc_attr::default();
            // SAFETY: a live handle and a writable attr.
            let g = unsafe { udc_getattr(w.live, i, &mut got) };
            if r == 0 && *valid_ns >= 1 << 40 {
                assert_eq!((g, got), (0, udc_attr { ino: i, ..attr }), "setattr then getattr");
            } else if r == 0 && *valid_ns == 0 {
                assert_eq!(g, -ENODATA, "an attr valid for 0 ns was kept");
            }
        }
        Op::Readdir { h, dir, cookie, max, buf_null, count_null } => {
            let (c, hf) = w.handle(*h);
            let dir = ino(*dir);
            let cookie = match *cookie {
                CookieArg::Zero => 0,
                CookieArg::Seen(i) if !w.cookies.is_empty() => {
                    w.cookies[usize::from(i) % w.cookies.len()]
                }
                CookieArg::Seen(i) => u64::from(i),
                CookieArg::Raw(r) => r,
            };
            let max = usize::from(*max % 40);
            let blank = udc_dirent { ino: 0, cookie: 0, r#type: 0, namelen: 0, name: [0; 256] };
            let mut buf = boxed(max, blank);
            let mut count = usize::MAX;
            let buf_ptr = if *buf_null { ptr::null_mut() } else { buf.as_mut_ptr() };
            let count_ptr: *mut usize = if *count_null { ptr::null_mut() } else { &mut count };
            // SAFETY: a handle as made; NULL or `max` writable dirents; NULL or a size_t.
            let r = unsafe { udc_readdir(c, dir, cookie, buf_ptr, max, count_ptr) };
            let faults = [
                hf,
                (*buf_null && max > 0).then_some(EINVAL),
                count_null.then_some(EINVAL),
                (max == 0).then_some(EINVAL),
            ];
            let mut errs = vec![EINVAL, ESTALE, ENOTDIR, ENOSYS, ELOOP, EIO];
            errs.extend(w.fs.readdir_errnos.borrow().iter());
            expect("readdir", r, &faults, 0..=1, &errs);
            if r >= 0 {
                assert!(count <= max, "readdir count {count} of {max}");
                for d in &buf[..count] {
                    let len = d.namelen as usize;
                    assert!(len <= 255 && d.name[len] == 0, "dirent name not terminated");
                    let name: Vec<u8> = d.name[..len].iter().map(|&b| b as u8).collect();
                    let key = (name, d.ino, d.r#type, d.cookie);
                    assert!(
                        w.fs.accepted.borrow().contains(&key),
                        "a dirent no fill gave: {key:?}"
                    );
                    w.cookies.push(d.cookie);
                }
                w.cookies.truncate(64);
            } else {
                assert_eq!(count, usize::MAX, "a failed readdir set *count");
            }
        }
        Op::DirChanged { h, dir, verifier } => {
            let (c, hf) = w.handle(*h);
            // SAFETY: a handle as made.
            let r = unsafe { udc_dir_changed(c, ino(*dir), *verifier) };
            expect("dir_changed", r, &[hf], 0..=0, &[ESTALE, ENOTDIR]);
        }
        Op::Stats { h, size, out_null } => {
            let (c, hf) = w.handle(*h);
            let mut s = udc_stats { size: sized::<udc_stats>(*size), ..Default::default() };
            let want = s.size;
            let out: *mut udc_stats = if *out_null { ptr::null_mut() } else { &mut s };
            // SAFETY: a handle as made; NULL or a writable udc_stats.
            let r = unsafe { udc_stats_get(c, out) };
            let small = (!*out_null && want < size_of::<udc_stats>()).then_some(EINVAL);
            expect("stats", r, &[hf, out_null.then_some(EINVAL), small], 0..=0, &[]);
            if r < 0 && !*out_null {
                assert_eq!(s.size, want, "a refused stats call wrote its output");
                assert_eq!(s.nr_dentry, 0, "a refused stats call wrote its output");
            }
        }
        Op::StatsFormat { h, len, buf_null } => {
            let (c, hf) = w.handle(*h);
            let len = usize::from(*len % 1024);
            let mut buf = boxed(len, 0u8);
            let b: *mut c_char = if *buf_null { ptr::null_mut() } else { buf.as_mut_ptr().cast() };
            // SAFETY: a handle as made; NULL or `len` writable bytes.
            let r = unsafe { udc_stats_format(c, b, len) };
            expect(
                "stats_format",
                r,
                &[hf, (*buf_null && len > 0).then_some(EINVAL)],
                0..=c_int::MAX,
                &[],
            );
            if r >= 0 && len > 0 {
                let n = (r as usize).min(len - 1);
                assert_eq!(buf[n], 0, "stats text not terminated");
                assert!(!buf[..n].contains(&0), "a NUL inside the stats text");
            }
        }
        Op::SetOps { h, size, lookup, readdir, reval, access, null } => {
            let (c, hf) = w.handle(*h);
            let ops = udc_ops {
                size: sized::<udc_ops>(*size),
                lookup: lookup.then_some(on_lookup as _),
                readdir: readdir.then_some(on_readdir as _),
                ctx: (w.fs as *const Fs).cast_mut().cast(),
                revalidate: reval.then_some(on_revalidate as _),
                access: access.then_some(on_access as _),
            };
            let p: *const udc_ops = if *null { ptr::null() } else { &ops };
            let small = (!*null && ops.size < size_of::<udc_ops>()).then_some(EINVAL);
            // SAFETY: a handle as made; NULL or a udc_ops whose callbacks follow the rules (one
            // thread; the context outlives the cache).
            let r = unsafe { udc_set_ops(c, p) };
            if w.ops_set && hf.is_none() && !*null && small.is_none() {
                assert_eq!(r, -EBUSY, "udc_set_ops twice");
            } else {
                expect("set_ops", r, &[hf, null.then_some(EINVAL), small], 0..=0, &[]);
            }
            w.reval_set |= r == 0 && *reval;
            w.timed |= w.reval_set;
            w.ops_set |= r == 0;
        }
        Op::SetEntryTimeout { h, parent, name, ttl } => {
            let (c, hf) = w.handle(*h);
            let (parent, name) = (ino(*parent), CName::new(name));
            let before = w.snapshot(&[(parent, &name)]);
            // SAFETY: a handle as made; a name of its length.
            let r = unsafe { udc_set_entry_timeout(c, parent, name.ptr(), name.len, *ttl) };
            // "As configured" is not a timeout to set (refused whatever else is wrong).
            let configured = (*ttl == UDC_TTL_CONFIGURED).then_some(EINVAL);
            let faults = [hf, name.fault(), configured];
            expect("set_entry_timeout", r, &faults, 0..=0, &[ESTALE, ENOTDIR, ENOENT]);
            w.timed |= r == 0 && *ttl != UDC_TTL_FOREVER;
            if r != 0 || *ttl == UDC_TTL_FOREVER {
                // Refused, or trusted for ever: a fresh name stays as it was.
                let after = w.snapshot(&[(parent, &name)]);
                assert_eq!((after.0, after.1, after.2), (before.0, before.1, before.2));
                if r != 0 || before.3.first().is_some_and(|&(k, _)| k != UDC_MISS) {
                    assert_eq!(after.3, before.3, "set_entry_timeout changed the answer");
                }
            }
            w.touches_sentinel(&[parent], &[&name]);
        }
        Op::Access { h, ino: i, cred, mask, cached } => {
            let (c, hf) = w.handle(*h);
            let (i, cr) = (ino(*i), CCred::new(cred));
            let calls = w.fs.access_calls.get();
            let faults = [hf, cr.fault(), mask_fault(*mask)];
            if *cached {
                // SAFETY: a handle as made; NULL or a credential.
                let r = unsafe { udc_cached_access(c, i, cr.ptr(), *mask) };
                let ok = UDC_MISS..=UDC_ACCESS_DENIED;
                expect("cached_access", r, &faults, ok, &[ESTALE]);
                assert_eq!(w.fs.access_calls.get(), calls, "cached_access asked the callback");
            } else {
                // SAFETY: as above.
                let r = unsafe { udc_access(c, i, cr.ptr(), *mask) };
                let mut errs = vec![EACCES, ESTALE, EIO];
                errs.extend(w.fs.callback_errnos.borrow().iter());
                expect("access", r, &faults, 0..=0, &errs);
                if w.fs.access_calls.get() > calls {
                    assert_eq!(w.fs.access_calls.get(), calls + 1, "one access call per miss");
                    let g = w.fs.last_grant.get();
                    let want = match g {
                        0..=7 if g as u32 & *mask == *mask => 0,
                        0..=7 => -EACCES,
                        g if g < 0 => -callback_errno(g),
                        _ => -EIO,
                    };
                    assert_eq!(r, want, "access after the callback answered {g}");
                }
            }
            if cr.fault().is_none() {
                w.last_cred = Some(cred.clone());
            }
            if faults.iter().any(Option::is_some) {
                assert_eq!(w.fs.access_calls.get(), calls, "a refused access asked the callback");
            }
        }
        Op::AccessStamp { h, ino: i, out_null } => {
            let (c, hf) = w.handle(*h);
            let mut stamp = 0x5eed_u64;
            let out: *mut u64 = if *out_null { ptr::null_mut() } else { &mut stamp };
            // SAFETY: a handle as made; NULL or a writable uint64_t.
            let r = unsafe { udc_access_stamp(c, ino(*i), out) };
            expect("access_stamp", r, &[hf, out_null.then_some(EINVAL)], 0..=0, &[ESTALE]);
            if r == 0 {
                w.stamps.push(stamp);
                w.stamps.truncate(32);
            } else {
                assert_eq!(stamp, 0x5eed, "a refused access_stamp wrote its output");
            }
        }
        Op::StoreAccess { h, ino: i, cred, granted, stamp } => {
            let (c, hf) = w.handle(*h);
            let (i, cr) = (ino(*i), CCred::new(cred));
            let stamp = match *stamp {
                StampArg::Seen(k) if !w.stamps.is_empty() => {
                    w.stamps[usize::from(k) % w.stamps.len()]
                }
                StampArg::Seen(k) => u64::from(k),
                StampArg::Raw(r) => r,
            };
            let faults = [hf, cr.fault(), mask_fault(*granted)];
            // SAFETY: a handle as made; NULL or a credential.
            let r = unsafe { udc_store_access(c, i, cr.ptr(), *granted, stamp) };
            expect("store_access", r, &faults, 0..=1, &[ESTALE]);
            if r == 1 && w.access_forever {
                // SAFETY: a live handle and a well-formed credential.
                let now = unsafe { udc_cached_access(w.live, i, cr.ptr(), *granted) };
                assert_eq!(now, UDC_ACCESS_ALLOWED, "a stored result is not found");
            }
            if cr.fault().is_none() {
                w.last_cred = Some(cred.clone());
            }
        }
        Op::AclChanged { h, ino: i } => {
            let (c, hf) = w.handle(*h);
            let i = ino(*i);
            // SAFETY: a handle as made.
            let r = unsafe { udc_acl_changed(c, i) };
            expect("acl_changed", r, &[hf], 0..=0, &[ESTALE]);
            if let (0, Some(cred)) = (r, &w.last_cred) {
                let cr = CCred::new(cred);
                // SAFETY: a live handle and a well-formed credential.
                let now = unsafe { udc_cached_access(w.live, i, cr.ptr(), 0) };
                assert_eq!(now, UDC_MISS, "an access result survived its revocation");
            }
        }
    }
    let faulty = match op {
        Op::Lookup { h, .. }
        | Op::Resolve { h, .. }
        | Op::Readdir { h, .. }
        | Op::Children { h, .. }
        | Op::WalkAs { h, .. }
        | Op::Access { h, .. } => w.handle(*h).1.is_some(),
        _ => false,
    };
    if faulty {
        assert_eq!(w.fs.reval_calls.get(), reval_calls, "a callback ran for a bad handle");
        assert_eq!(w.fs.access_calls.get(), access_calls, "a callback ran for a bad handle");
        assert_eq!(w.fs.lookup_calls.get(), lookup_calls, "a callback ran for a bad handle");
        assert_eq!(w.fs.readdir_calls.get(), readdir_calls, "a callback ran for a bad handle");
    }
}
