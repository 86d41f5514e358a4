//! Hostile backends: fills chosen by proptest — any small cookies (repeated, zero, the asked
//! one), any eof flags, empty fills, errors, and verifiers that change from fill to fill (also
//! back to an older value). The cache may refuse with the documented errors, but it must
//! never panic, never return more than `max` entries or an entry with cookie 0, never keep
//! anything from a failed read, keep its budget and its page count, and a cursor must stop —
//! at the end or with an error — within a bounded number of reads. Bounded: a few hundred
//! cases, well under a second.
//! `MODEL_CASES=N` in the environment runs N cases instead of 400.

use std::sync::Mutex;

use proptest::prelude::*;
use udcache_readdir::{
    Backend, Config, DType, Entry, Error, Fill, FillError, ReaddirCache, Verifier,
};

#[derive(Clone, Debug)]
enum Answer {
    Fill(Vec<u64>, bool, u64),
    Io,
    Unknown,
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        8 => (proptest::collection::vec(0..10u64, 0..5), any::<bool>(), 1..4u64)
            .prop_map(|(c, e, v)| Answer::Fill(c, e, v)),
        1 => Just(Answer::Io),
        1 => Just(Answer::Unknown),
    ]
}

/// Answers either as a function of the cookie asked (`by_cookie`) or call after call.
struct Script {
    answers: Vec<Answer>,
    by_cookie: bool,
    calls: Mutex<usize>,
}

impl Backend for Script {
    fn fill(&self, cookie: u64, _max: usize) -> Result<Fill, FillError> {
        let mut calls = self.calls.lock().unwrap();
        let i = if self.by_cookie { cookie as usize } else { *calls };
        *calls += 1;
        match &self.answers[i % self.answers.len()] {
            Answer::Fill(cookies, eof, v) => Ok(Fill {
                entries: cookies
                    .iter()
                    .map(|&c| Entry::new(format!("e{c}"), c, DType::REG, c))
                    .collect(),
                eof: *eof,
                verifier: Verifier::new(*v),
            }),
            Answer::Io => Err(FillError::Io(libc::EIO)),
            Answer::Unknown => Err(FillError::UnknownCookie),
        }
    }
}

/// The case count: `MODEL_CASES` from the environment, or 400.
fn cases() -> u32 {
    std::env::var("MODEL_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(400)
}

/// A batch size of 1 to 5, or no limit.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![1..6usize, Just(usize::MAX)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn a_hostile_backend_never_hangs_or_corrupts_the_cache(
        answers in proptest::collection::vec(answer(), 1..12),
        by_cookie in any::<bool>(),
        budget in 1..5usize,
        page in 1..5usize,
        sizes in proptest::collection::vec(0..6usize, 1..8),
        raw in proptest::collection::vec((0..10u64, size()), 0..20),
    ) {
        let cache = ReaddirCache::with_config(Config::default().with_budget_pages(budget).with_page_entries(page));
        let dir = cache.dir(Script { answers, by_cookie, calls: Mutex::new(0) });
        for round in 0..3 {
            let mut c = dir.cursor();
            let mut stopped = false;
            let mut failed = false;
            for i in 0..400 {
                let max = match sizes[i % sizes.len()] { 0 => usize::MAX, m => m };
                let pages = dir.cached_pages();
                let at = c.tell();
                let eof = c.is_eof();
                match c.read(max) {
                    Ok(b) => {
                        prop_assert!(b.len() <= max);
                        prop_assert!(b.iter().all(|e| e.cookie != 0));
                        if eof {
                            prop_assert!(b.is_empty(), "an entry after eof");
                            stopped = true;
                            break;
                        }
                    }
                    Err(e) => {
                        failed = true;
                        prop_assert!(
                            matches!(e, Error::Loop { .. } | Error::Backend(libc::EIO))
                                || e == (Error::BadCookie { cookie: at }),
                            "{:?}", e
                        );
                        // (A loop the cursor finds in what `DirCache::read` returned may come
                        // with a page that read kept: that read did not fail.)
                        prop_assert!(
                            matches!(e, Error::Loop { .. }) || dir.cached_pages() <= pages,
                            "a failed read kept a page"
                        );
                        if matches!(e, Error::Loop { .. }) {
                            stopped = true;
                            break;
                        }
                    }
                }
                let s = cache.stats();
                prop_assert!(s.pages <= budget);
                prop_assert_eq!(s.pages, dir.cached_pages());
            }
            // Errors other than loops may repeat forever (the backend keeps failing there).
            prop_assert!(stopped || failed, "round {}: 400 reads, no end, no error", round);
            for &(cookie, max) in &raw {
                let pages = dir.cached_pages();
                match dir.read(cookie, max) {
                    Ok(b) => {
                        prop_assert!(b.entries.len() <= max);
                        prop_assert!(!b.entries.is_empty() || b.eof, "empty, not at the end");
                    }
                    Err(e) => {
                        prop_assert!(
                            matches!(e, Error::Loop { .. } | Error::Backend(libc::EIO))
                                || e == (Error::BadCookie { cookie }),
                            "{:?}", e
                        );
                        prop_assert!(dir.cached_pages() <= pages, "a failed read kept a page");
                    }
                }
            }
        }
    }
}
