//! Fuzzes `udcache-readdir` two ways.
//!
//! 1. Against the reference backend: random changes (announced or not), reads through a cursor,
//!    seekdir to a saved position, reads at arbitrary cookies, lookups; a tiny shared budget
//!    forces evictions. Every finished pass must keep the listing guarantee; every entry the
//!    cache returns (from a cursor, a read at a cookie, a lookup) must be the backend's entry
//!    of that name, field by field; a lookup must say `Unknown` unless the directory is
//!    complete, and on a complete directory with nothing pending must match the backend; a
//!    read at a cookie the backend does not know must fail with `BadCookie` and change nothing.
//! 2. Against a hostile backend that answers from a fuzzer-chosen script (any cookies, any eof
//!    flags, changing verifiers): the cache must never panic and a cursor must stop — at the
//!    end or with an error — within a bounded number of reads.
#![no_main]

use std::collections::BTreeSet;
use std::num::NonZeroUsize;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use udcache_readdir::reference::{CookieStyle, MemDir, PassCheck};
use udcache_readdir::{
    Backend, Config, DType, Entry, Error, Fill, FillError, Lookup, ReaddirCache, Verifier,
};

const UNIVERSE: u64 = 48;

#[derive(Arbitrary, Debug)]
enum Op {
    Toggle { id: u8, announce: bool },
    Invalidate,
    Read { max: u8 },
    Save,
    Restore,
    ReadAt { cookie: u64, max: u8 },
    Lookup { id: u8 },
    Other { max: u8 },
}

#[derive(Arbitrary, Debug)]
struct Script {
    fills: Vec<(Vec<u64>, bool, u8)>,
    reads: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    hashed: bool,
    budget: u8,
    page: u8,
    initial: u64,
    ops: Vec<Op>,
    hostile: Option<Script>,
}

fn nz(x: u8, cap: u8) -> NonZeroUsize {
    NonZeroUsize::new(usize::from(x % cap) + 1).unwrap()
}

/// Checks that `e` is the entry the reference backend gives its name (its number, type and the
/// cookie after it), whether or not the name is still present.
fn is_backend_entry(backend: &MemDir, e: &Entry) {
    let id = MemDir::id_of(&e.name).expect("a name the backend made");
    let want = Entry::new(MemDir::name(id), id + 1000, DType::REG, backend.cookie(id));
    assert_eq!(e, &want);
}

fn model(input: &Input) {
    let style = if input.hashed { CookieStyle::Hashed } else { CookieStyle::Ordered };
    let cache = ReaddirCache::with_config(
        Config::default()
            .with_budget_pages(nz(input.budget, 6).get())
            .with_page_entries(nz(input.page, 6).get()),
    );
    let ids = (0..UNIVERSE).filter(|i| input.initial >> (i % 64) & 1 == 1);
    let dir = cache.dir(MemDir::with_entries(style, UNIVERSE, ids));
    let other = cache.dir(MemDir::with_entries(CookieStyle::Ordered, UNIVERSE, 0..UNIVERSE));
    let mut pending = BTreeSet::new();
    let begin = |pending: &BTreeSet<u64>| {
        let mut p = PassCheck::new(UNIVERSE, dir.backend().ids());
        pending.iter().for_each(|&id| p.changed(id));
        p
    };
    let mut pass = begin(&pending);
    let mut cursor = dir.cursor();
    let mut saved = None;
    for op in &input.ops {
        match *op {
            Op::Toggle { id, announce } => {
                let id = u64::from(id) % UNIVERSE;
                let b = dir.backend();
                let v = if b.contains(id) { b.remove(id) } else { b.insert(id) }.unwrap();
                pass.changed(id);
                if announce {
                    dir.set_verifier(v);
                    pending.clear();
                } else {
                    pending.insert(id);
                }
            }
            Op::Invalidate => {
                dir.invalidate();
                pending.clear();
            }
            Op::Read { max } => {
                let got = cursor.read(nz(max, 9).get()).expect("a sane backend gives no error");
                for e in &got {
                    is_backend_entry(dir.backend(), e);
                    pass.saw(&e.name);
                }
                if cursor.is_eof() {
                    let v = pass.verdict();
                    assert!(v.ok(), "{v:?}");
                    cursor.seek(0);
                    saved = None;
                    pass = begin(&pending);
                }
            }
            Op::Save => saved = Some((pass.mark(), cursor.tell())),
            Op::Restore => {
                if let Some((mark, cookie)) = saved {
                    cursor.seek(cookie);
                    pass.rewind(mark);
                }
            }
            Op::ReadAt { cookie, max } => {
                let pages = dir.cached_pages();
                match dir.read(cookie, nz(max, 9).get()) {
                    Ok(b) => {
                        assert!(b.entries.len() <= nz(max, 9).get());
                        b.entries.iter().for_each(|e| is_backend_entry(dir.backend(), e));
                    }
                    Err(e) => {
                        assert_eq!(e, Error::BadCookie { cookie });
                        assert_eq!(dir.cached_pages(), pages);
                    }
                }
            }
            Op::Lookup { id } => {
                let id = u64::from(id) % UNIVERSE;
                let complete = dir.is_complete();
                let got = dir.lookup(MemDir::name(id).as_bytes());
                match &got {
                    Lookup::Present(e) => is_backend_entry(dir.backend(), e),
                    Lookup::Absent => assert!(complete, "absent in an incomplete listing"),
                    Lookup::Unknown => {}
                }
                if complete && pending.is_empty() {
                    let want = dir.backend().contains(id);
                    assert!(matches!(
                        (&got, want),
                        (Lookup::Present(_), true) | (Lookup::Absent, false)
                    ));
                }
            }
            Op::Other { max } => {
                other.read(0, nz(max, 9).get()).unwrap();
            }
        }
    }
    let s = cache.stats();
    assert!(s.pages <= s.budget_pages);
    assert_eq!(s.backend_calls, dir.backend().calls() + other.backend().calls());
}

/// Answers fill `cookie % len` of the script; `steady` fixes the verifier.
struct Hostile {
    fills: Vec<(Vec<u64>, bool, u8)>,
    steady: bool,
}

impl Backend for Hostile {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        if self.fills.is_empty() {
            return Err(FillError::UnknownCookie);
        }
        let (cookies, eof, v) = &self.fills[(cookie % self.fills.len() as u64) as usize];
        let entries = cookies
            .iter()
            .take(max)
            .map(|&c| Entry::new(c.to_string(), c, DType::UNKNOWN, c))
            .collect();
        let verifier = Verifier::new(if self.steady { 0 } else { u64::from(*v % 3) });
        Ok(Fill { entries, eof: *eof, verifier })
    }
}

fn hostile(input: &Input, script: &Script) {
    let cookies: BTreeSet<u64> = script.fills.iter().flat_map(|f| f.0.iter().copied()).collect();
    // Changing verifiers, invalidations and a tiny budget: no panic, only the documented errors.
    let cache = ReaddirCache::with_config(
        Config::default()
            .with_budget_pages(nz(input.budget, 6).get())
            .with_page_entries(nz(input.page, 6).get()),
    );
    let dir = cache.dir(Hostile { fills: script.fills.clone(), steady: false });
    let mut cursor = dir.cursor();
    for (i, &max) in script.reads.iter().cycle().take(64).enumerate() {
        match cursor.read(nz(max, 9).get()) {
            Ok(got) => assert!(got.len() <= nz(max, 9).get()),
            Err(e) => assert!(matches!(e, Error::Loop { .. } | Error::BadCookie { .. }), "{e}"),
        }
        if i % 7 == 3 {
            dir.invalidate();
        }
    }
    // One verifier and room for every page: each cookie's continuation settles after at most
    // two fills, so a pass that does not end must repeat itself, and the cursor must say so.
    let room = NonZeroUsize::new(cookies.len() + 2).unwrap();
    let cache = ReaddirCache::with_config(
        Config::default().with_budget_pages(room.get()).with_page_entries(nz(input.page, 6).get()),
    );
    let dir = cache.dir(Hostile { fills: script.fills.clone(), steady: true });
    let mut cursor = dir.cursor();
    let bound = 16 * (cookies.len() + 4);
    for (i, &max) in script.reads.iter().chain([&1]).cycle().take(bound + 1).enumerate() {
        match cursor.read(nz(max, 9).get()) {
            Ok(got) if got.is_empty() => return,
            Ok(_) => assert!(i < bound, "a pass over a finite script did not stop"),
            Err(_) => return,
        }
    }
}

fuzz_target!(|input: Input| {
    model(&input);
    if let Some(script) = &input.hostile {
        hostile(&input, script);
    }
});
