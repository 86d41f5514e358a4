//! Fuzz the C ABI (`ffi/`, libudcache): raw bytes as names, paths, inode numbers, cookies,
//! flags, struct sizes and pointers (NULL, garbage handles, misaligned handles, lengths over
//! `NAME_MAX` on one-byte buffers) through every `udc_*` function, with a lookup callback and
//! a readdir callback that answer from a script (well or badly: bad entries, bad return
//! values, a missing or repeated `udc_fill_done`, entries past `max`, calls back into the
//! cache).
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
//!   found by `udc_lookup`, and a second cache that no call touches is unchanged.
#![no_main]

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::ops::RangeInclusive;
use std::ptr;
use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libc::{
    EBADF, EBUSY, EEXIST, EINVAL, EIO, ELOOP, EMLINK, ENAMETOOLONG, ENODATA, ENOENT, ENOSPC,
    ENOSYS, ENOTDIR, ESTALE,
};
use libfuzzer_sys::fuzz_target;
use udcache_ffi::attr::{udc_attr, udc_getattr, udc_setattr};
use udcache_ffi::callbacks::{udc_ops, udc_set_ops};
use udcache_ffi::handle::{
    udc_cache, udc_cache_destroy, udc_cache_new, udc_config, udc_config_init,
};
use udcache_ffi::lookup::{
    UDC_MISS, UDC_NEGATIVE, UDC_POSITIVE, UDC_WALK_FOUND, udc_children, udc_lookup, udc_resolve,
    udc_walk, udc_walk_result,
};
use udcache_ffi::ops::{
    udc_add, udc_add_negative, udc_count_lookup, udc_forget, udc_invalidate, udc_rename,
    udc_shrink, udc_unlink,
};
use udcache_ffi::readdir::{
    udc_dir_changed, udc_dirent, udc_fill, udc_fill_add, udc_fill_done, udc_readdir,
};
use udcache_ffi::stats::{udc_stats, udc_stats_format, udc_stats_get};
use udcache_ffi::types::udc_entry;
use udcache_ffi::udc_version;

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

#[derive(Arbitrary, Debug)]
enum Op {
    Lookup { h: H, parent: InoArg, name: NameArg, out_null: bool },
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
    SetOps { h: H, size: i8, lookup: bool, readdir: bool, null: bool },
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
}

#[derive(Arbitrary, Debug)]
struct Input {
    cfg: Cfg,
    garbage: [u8; 32],
    lookups: Vec<LookupReply>,
    fills: Vec<FillScript>,
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
                CName { buf: Box::new([b'x']), null: false, len: 256 + *extra as usize }
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
            udcache::validate_name(&self.buf).err().map(|e| e.errno())
        }
    }

    /// The name's bytes, if it is well-formed.
    fn valid(&self) -> Option<&[u8]> {
        self.fault().is_none().then_some(&self.buf[..])
    }
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

/// The errno `udc_resolve` / `udc_readdir` report for a callback's negative or bad return.
fn callback_errno(r: c_int) -> c_int {
    match r.checked_neg() {
        Some(e) if e > 0 => e,
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

// ---- the callbacks ---------------------------------------------------------------------------

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
    /// Entries some fill accepted: `(name, ino, type, cookie)`.
    accepted: RefCell<BTreeSet<(Vec<u8>, u64, u32, u64)>>,
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
    assert!(udcache::validate_name(name).is_ok(), "the lookup callback got a bad name {name:?}");
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
        let want = fault.or(name.fault()).or_else(|| {
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
    /// Whether some call may have moved or dropped `sentinel/f` of the live cache.
    sentinel_touched: bool,
    cookies: Vec<u64>,
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
        let l = &self.last;
        for (now, before) in [
            (s.negative_evictions, l.negative_evictions),
            (s.walk_fallbacks, l.walk_fallbacks),
            (s.backend_lookups, l.backend_lookups),
            (s.coalesced_misses, l.coalesced_misses),
            (s.readdir_hits, l.readdir_hits),
            (s.readdir_misses, l.readdir_misses),
            (s.complete_dir_negatives, l.complete_dir_negatives),
        ] {
            assert!(now >= before, "a counter went back: {before} -> {now}");
        }
        assert_eq!(
            s.backend_lookups,
            self.fs.lookup_calls.get() + self.unanswered,
            "backend_lookups against the callback's own count"
        );
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
    let (null_cfg, null_out) = (cfg.nulls % 16 == 0, cfg.nulls % 16 == 1);
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
        sentinel_touched: false,
        cookies: Vec::new(),
    };
    w.last = w.stats(live);
    // The garbage handle is refused by destroy too.
    // SAFETY: aligned, readable memory whose magic word is wrong: ignored.
    unsafe { udc_cache_destroy(w.garbage.as_mut_ptr().cast()) };
    w.check();

    for op in input.ops.iter().take(200) {
        run(&mut w, op);
        w.check();
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
    match op {
        Op::Lookup { h, parent, name, out_null } => {
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
        }
        Op::Resolve { h, parent, name, out_null } => {
            let (c, hf) = w.handle(*h);
            let (parent, name) = (ino(*parent), CName::new(name));
            let before = w.stats(w.live).backend_lookups;
            let mut e = udc_entry::default();
            let out: *mut udc_entry = if *out_null { ptr::null_mut() } else { &mut e };
            // SAFETY: as for lookup.
            let r = unsafe { udc_resolve(c, parent, name.ptr(), name.len, out) };
            let faults = [hf, name.fault(), out_null.then_some(EINVAL)];
            let called = w.fs.lookup_calls.get() - lookup_calls;
            let counted = w.stats(w.live).backend_lookups - before;
            if called == 1 {
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
            let root = ino(*root);
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
            let bytes = bytes.into_boxed_slice();
            let path_ptr: *const c_char = if null { ptr::null() } else { bytes.as_ptr().cast() };
            let mut out =
                udc_walk_result { size: sized::<udc_walk_result>(*size), ..Default::default() };
            let out_ptr: *mut udc_walk_result = if *out_null { ptr::null_mut() } else { &mut out };
            // SAFETY: a handle as made; NULL or `len` readable bytes; NULL or a writable result.
            let r = unsafe { udc_walk(c, root, path_ptr, len, out_ptr) };
            let component = bytes
                .split(|&b| b == b'/')
                .filter(|c| !c.is_empty() && *c != b"." && *c != b"..")
                .find_map(|c| udcache::validate_name(c).err().map(|e| e.errno()));
            let faults = [
                hf,
                (null && len > 0).then_some(EINVAL),
                out_null.then_some(EINVAL),
                (!*out_null && out.size < size_of::<udc_walk_result>()).then_some(EINVAL),
                component,
            ];
            expect("walk", r, &faults, 0..=4, &[ESTALE]);
            if r >= 0 {
                assert_eq!(out.kind as c_int, r, "walk kind");
                assert!(out.offset <= len, "walk offset {} past {len}", out.offset);
            }
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
                let names: BTreeSet<&[u8]> = visit.seen.iter().map(|(n, _)| &n[..]).collect();
                assert_eq!(names.len(), visit.seen.len(), "a child visited twice");
                for (name, e) in &visit.seen {
                    assert!(udcache::validate_name(name).is_ok(), "child name {name:?}");
                    assert_eq!(w.lookup(dir, name), (UDC_POSITIVE, e.ino), "child {name:?}");
                }
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
                let (now, at) = w.lookup(parent, name.valid().unwrap());
                assert_eq!((now, at), (UDC_POSITIVE, e.ino), "an added name is not found");
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
                assert!(before - after >= r as u64, "shrink reported {r}, {before} -> {after}");
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
        Op::SetOps { h, size, lookup, readdir, null } => {
            let (c, hf) = w.handle(*h);
            let ops = udc_ops {
                size: sized::<udc_ops>(*size),
                lookup: lookup.then_some(on_lookup as _),
                readdir: readdir.then_some(on_readdir as _),
                ctx: (w.fs as *const Fs).cast_mut().cast(),
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
            w.ops_set |= r == 0;
        }
    }
    let faulty = match op {
        Op::Lookup { h, .. }
        | Op::Resolve { h, .. }
        | Op::Readdir { h, .. }
        | Op::Children { h, .. } => w.handle(*h).1.is_some(),
        _ => false,
    };
    if faulty {
        assert_eq!(w.fs.lookup_calls.get(), lookup_calls, "a callback ran for a bad handle");
        assert_eq!(w.fs.readdir_calls.get(), readdir_calls, "a callback ran for a bad handle");
    }
}
