//! `readdir-modified`: listing a large directory while it changes (Linux's "NFS: Improve
//! performance of listing directories being modified" thread).
//!
//! A backend directory of n entries (ids `0, 2, 4, ...` of a universe of 2n names, listed in id
//! order, ordered cookies) counts its calls; there is no artificial latency. Every `K` backend
//! calls, a writer adds or removes a random entry (a random id of the universe: an odd one is
//! added, an even one removed), which moves the directory's verifier; models learn of it from
//! the verifier of their next fill, as an NFS client learns from the change attribute. One
//! reader lists the directory `GETDENTS` = 128 entries per call; each backend call returns up to
//! `PAGE` = 512 entries (one cached page).
//!
//! Variants, each run on a fresh backend with the same writer sequence:
//! - `restart`: the unpatched kernel's model. Pages indexed 0, 1, 2, ...; every call searches from
//!   page 0 (filling missing pages), scanning each page for the cookie; a fill that reveals a
//!   new verifier drops every page and the search starts again from page 0.
//! - `cursor`: that thread's posted patch. The same pages, but a reader keeps the index of the page it
//!   last read and searches from there; after an invalidation it fills that page at its own
//!   cookie. A cookie not found before the end is read uncached.
//! - `index`: this workspace's `udcache-readdir` (exact cookie index, lazy invalidation,
//!   resume from the reader's own cookie).
//!
//! Each variant runs at n and 2n, with the writer and without it (`writer_every` 0), bounded in
//! backend calls (`CALL_BOUND` x n/page) and in time; a run stopped by a bound reports
//! `did not finish`. Rows: backend calls, changes made during the pass, entries returned, wall
//! time, calls over the ideal (n/page + changes), stable entries missing or repeated.
//!
//! Summary fields: `calls_over_ideal` (index, the worse of n and 2n), `linearity` (index,
//! median T(2n) / median T(n) over interleaved rounds), `restart_calls_over_ideal` (restart at
//! n with the writer, counting calls until it finished or was stopped),
//! `missing_or_duplicated` (index, n and 2n, every round; must be 0).
//!
//! Sizes: n = 1,000,000 (full), 100,000 (`--quick`); `UDCACHE_BENCH_TINY=1` (used by the
//! harness test) runs n = 5,000 with short bounds.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use udcache_readdir::reference::{CookieStyle, MemDir, PassCheck};
use udcache_readdir::{Backend, Config, Entry, Fill, FillError, ReaddirCache, Verifier};

use crate::Options;
use crate::measure::interleaved;
use crate::report::{Report, Row};

/// Entries per backend call (one cached page).
const PAGE: usize = 512;
/// Entries per reader call, as getdents asks.
const GETDENTS: usize = 128;
/// The writer changes the directory every `K` backend calls.
const K: u64 = 8;
/// A run may make at most this many times n/page backend calls.
const CALL_BOUND: u64 = 20;
/// The errno a bounded backend fails with once a bound is reached (not a real errno).
const STOPPED: i32 = -1;

/// Sizes and bounds for one invocation.
struct Plan {
    n: u64,
    time_bound: Duration,
    rounds: usize,
}

fn plan(opts: &Options) -> Plan {
    if std::env::var_os("UDCACHE_BENCH_TINY").is_some_and(|v| v == "1") {
        Plan { n: 5_000, time_bound: Duration::from_millis(500), rounds: 3 }
    } else if opts.quick {
        Plan { n: 100_000, time_bound: Duration::from_secs(3), rounds: 5 }
    } else {
        Plan { n: 1_000_000, time_bound: Duration::from_secs(20), rounds: 3 }
    }
}

/// The backend directory with its writer and its bounds.
struct Modified {
    dir: MemDir,
    every: u64,
    calls: AtomicU64,
    rng: AtomicU64,
    changed: Mutex<Vec<u64>>,
    max_calls: u64,
    deadline: Instant,
}

impl Modified {
    fn new(n: u64, every: u64, time_bound: Duration) -> Self {
        Modified {
            dir: MemDir::with_entries(CookieStyle::Ordered, 2 * n, (0..n).map(|i| 2 * i)),
            every,
            calls: AtomicU64::new(0),
            rng: AtomicU64::new(0x9E37_79B9_7F4A_7C15),
            changed: Mutex::new(Vec::new()),
            max_calls: CALL_BOUND * n.div_ceil(PAGE as u64) + 100,
            deadline: Instant::now() + time_bound,
        }
    }

    fn change(&self) {
        // Relaxed: one reader thread calls the backend; the atomics only make `Modified` Sync.
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        let id = x % self.dir.universe();
        let changed = if self.dir.contains(id) { self.dir.remove(id) } else { self.dir.insert(id) };
        if changed.is_some() {
            self.changed.lock().unwrap().push(id);
        }
    }

    fn calls(&self) -> u64 {
        // Relaxed: read after the pass, on the thread that made the calls.
        self.calls.load(Ordering::Relaxed)
    }
}

impl Backend for Modified {
    fn fill(&self, cookie: u64, max: usize) -> Result<Fill, FillError> {
        // Relaxed: see `change`.
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if n > self.max_calls || Instant::now() > self.deadline {
            return Err(FillError::Io(STOPPED));
        }
        if self.every > 0 && n.is_multiple_of(self.every) {
            self.change();
        }
        self.dir.fill(cookie, max)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    Restart,
    Cursor,
    Index,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Restart => "restart",
            Variant::Cursor => "cursor",
            Variant::Index => "index",
        }
    }
}

/// One listing pass and what it cost.
struct Run {
    variant: Variant,
    n: u64,
    every: u64,
    finished: bool,
    calls: u64,
    changes: u64,
    entries: u64,
    secs: f64,
    bad: u64,
}

impl Run {
    fn ideal(&self) -> f64 {
        self.n.div_ceil(PAGE as u64) as f64 + self.changes as f64
    }

    fn over_ideal(&self) -> f64 {
        self.calls as f64 / self.ideal()
    }

    fn row(&self) -> Row {
        Row::new()
            .with("variant", self.variant.name())
            .with("n", self.n)
            .with("writer_every", self.every)
            .with("finished", if self.finished { "yes" } else { "did not finish" })
            .with("backend_calls", self.calls)
            .with("changes", self.changes)
            .with("entries", self.entries)
            .with("wall_ms", self.secs * 1e3)
            .with("calls_over_ideal", self.over_ideal())
            .with(
                "missing_or_duplicated",
                // Only a finished pass can be judged: a stopped one misses what it did not reach.
                if self.finished { self.bad as f64 } else { f64::NAN },
            )
    }
}

/// Lists the whole directory once with `variant`; stops at the first backend error.
fn list(variant: Variant, backend: &Arc<Modified>) -> (Vec<Entry>, bool) {
    let mut out = Vec::new();
    let finished = match variant {
        Variant::Index => {
            let budget = 2 * backend.dir.universe().div_ceil(PAGE as u64) as usize + 64;
            let config = Config::default().with_budget_pages(budget).with_page_entries(PAGE);
            let cache = ReaddirCache::with_config(config);
            let mut cursor = cache.dir(backend.clone()).cursor();
            loop {
                match cursor.read(GETDENTS) {
                    Ok(batch) if batch.is_empty() => break true,
                    Ok(batch) => out.extend(batch),
                    Err(_) => break false,
                }
            }
        }
        Variant::Restart | Variant::Cursor => {
            let mut model = PageArray::new(backend, variant == Variant::Restart);
            let (mut cookie, mut hint) = (0, 0);
            loop {
                match model.read(cookie, &mut hint) {
                    Ok((batch, eof)) => {
                        let empty = batch.is_empty();
                        if let Some(last) = batch.last() {
                            cookie = last.cookie;
                        }
                        out.extend(batch);
                        if eof || empty {
                            break true;
                        }
                    }
                    Err(_) => break false,
                }
            }
        }
    };
    (out, finished)
}

fn pass_once(variant: Variant, n: u64, every: u64, bound: Duration) -> Run {
    let backend = Arc::new(Modified::new(n, every, bound));
    let start = Instant::now();
    let (entries, finished) = list(variant, &backend);
    let secs = start.elapsed().as_secs_f64();
    let mut pass = PassCheck::new(2 * n, (0..n).map(|i| 2 * i));
    for &id in backend.changed.lock().unwrap().iter() {
        pass.changed(id);
    }
    for e in &entries {
        pass.saw(&e.name);
    }
    let v = pass.verdict();
    Run {
        variant,
        n,
        every,
        finished,
        calls: backend.calls(),
        changes: backend.changed.lock().unwrap().len() as u64,
        entries: entries.len() as u64,
        secs,
        bad: (v.missing + v.duplicated + v.phantom + v.changed_repeated) as u64,
    }
}

/// The unpatched kernel's page-array cache: pages by index, searched for the cookie.
struct PageArray<'a> {
    backend: &'a Modified,
    pages: Vec<Option<CachedPage>>,
    verifier: Option<Verifier>,
    restart: bool,
}

struct CachedPage {
    start: u64,
    entries: Vec<Entry>,
    eof: bool,
}

impl<'a> PageArray<'a> {
    fn new(backend: &'a Modified, restart: bool) -> Self {
        PageArray { backend, pages: Vec::new(), verifier: None, restart }
    }

    /// Up to `GETDENTS` entries after `cookie`, and whether they end the directory. `hint` is
    /// the cursor's page index (ignored by `restart`).
    fn read(&mut self, cookie: u64, hint: &mut usize) -> Result<(Vec<Entry>, bool), FillError> {
        let mut i = if self.restart { 0 } else { *hint };
        let mut fill_at = if i == 0 { 0 } else { cookie };
        loop {
            if self.pages.get(i).is_none_or(Option::is_none) {
                let f = self.backend.fill(fill_at, PAGE)?;
                if self.verifier.is_some_and(|v| v != f.verifier) {
                    self.pages.clear();
                    if self.restart {
                        // Unpatched: the cache is gone, search again from cookie 0.
                        self.verifier = Some(f.verifier);
                        (i, fill_at) = (0, 0);
                        continue;
                    }
                }
                self.verifier = Some(f.verifier);
                if self.pages.len() <= i {
                    self.pages.resize_with(i + 1, || None);
                }
                self.pages[i] = Some(CachedPage { start: fill_at, entries: f.entries, eof: f.eof });
            }
            let page = self.pages[i].as_ref().expect("filled above");
            let pos = if page.start == cookie {
                Some(0)
            } else {
                page.entries.iter().position(|e| e.cookie == cookie).map(|j| j + 1)
            };
            match pos {
                Some(j) if j < page.entries.len() => {
                    let to = page.entries.len().min(j + GETDENTS);
                    *hint = i;
                    return Ok((
                        page.entries[j..to].to_vec(),
                        page.eof && to == page.entries.len(),
                    ));
                }
                _ if !page.eof => {
                    fill_at = page.entries.last().map_or(fill_at, |e| e.cookie);
                    i += 1;
                }
                Some(_) => return Ok((Vec::new(), true)),
                None => {
                    // Not found before the end: read uncached at the cookie.
                    let f = self.backend.fill(cookie, GETDENTS)?;
                    return Ok((f.entries, f.eof));
                }
            }
        }
    }
}

/// Runs the scenario.
pub fn run(opts: &Options) -> Report {
    let p = plan(opts);
    let mut report = Report::new("readdir-modified");
    let sizes = [p.n, 2 * p.n];
    let mut runs = Vec::new();
    for every in [K, 0] {
        for variant in [Variant::Restart, Variant::Cursor] {
            for n in sizes {
                runs.push(pass_once(variant, n, every, p.time_bound));
            }
        }
    }
    // The index variant, n and 2n interleaved: the linearity figure is their median ratio.
    let (mut at_n_runs, mut at_2n_runs) = (Vec::new(), Vec::new());
    let medians = interleaved(
        &mut [
            &mut || {
                let r = pass_once(Variant::Index, sizes[0], K, p.time_bound);
                let secs = r.secs;
                at_n_runs.push(r);
                secs
            },
            &mut || {
                let r = pass_once(Variant::Index, sizes[1], K, p.time_bound);
                let secs = r.secs;
                at_2n_runs.push(r);
                secs
            },
        ],
        p.rounds,
    );
    // Every round's check counts, not only the reported run's.
    let bad: u64 = at_n_runs.iter().chain(&at_2n_runs).map(|r| r.bad).sum();
    for mut rs in [at_n_runs, at_2n_runs] {
        // Report the median round's run.
        rs.sort_by(|a, b| a.secs.total_cmp(&b.secs));
        let mid = rs.len() / 2;
        runs.push(rs.swap_remove(mid));
    }
    runs.push(pass_once(Variant::Index, p.n, 0, p.time_bound));
    runs.push(pass_once(Variant::Index, 2 * p.n, 0, p.time_bound));
    for r in &runs {
        report.row(r.row());
    }
    let find = |v: Variant, n: u64, every: u64| {
        runs.iter().find(|r| r.variant == v && r.n == n && r.every == every).expect("run made")
    };
    let (ix_n, ix_2n) = (find(Variant::Index, p.n, K), find(Variant::Index, 2 * p.n, K));
    report.summary(
        Row::new()
            .with("calls_over_ideal", ix_n.over_ideal().max(ix_2n.over_ideal()))
            .with("linearity", medians[1] / medians[0])
            .with("restart_calls_over_ideal", find(Variant::Restart, p.n, K).over_ideal())
            .with("missing_or_duplicated", bad),
    );
    report
}
