//! A pass over a directory: position, seek/tell, and loop detection across calls.
//!
//! A single fill is checked for loops by the cache, but a backend can also loop across calls
//! (fill at `a` ends at `b`, fill at `b` ends at `a`). A cursor detects that with Brent's cycle
//! detection over the cookies it returns: it remembers one cookie and compares every later one
//! with it, moving the remembered cookie forward at powers of two. The cookies a pass follows
//! are a function of the previous cookie (resume at `c` gives what follows `c`), so a pass that
//! revisits a cookie repeats itself forever; Brent's method catches such a cycle within twice
//! its length plus the distance to it, with O(1) memory, and never fires on a pass whose
//! cookies are all distinct.

use crate::{Backend, DirCache, Entry, Error};

/// Brent's cycle detection over a stream of cookies.
#[derive(Clone, Copy, Debug)]
struct LoopCheck {
    saved: u64,
    power: u64,
    steps: u64,
}

impl LoopCheck {
    fn new(start: u64) -> Self {
        LoopCheck { saved: start, power: 1, steps: 0 }
    }

    /// Feeds the next cookie; true if it closes a cycle.
    fn see(&mut self, cookie: u64) -> bool {
        if cookie == self.saved {
            return true;
        }
        self.steps += 1;
        if self.steps == self.power {
            self.saved = cookie;
            self.power *= 2;
            self.steps = 0;
        }
        false
    }
}

/// One reader's pass over a directory: what an open directory handle keeps (the position,
/// like `telldir`), plus loop detection.
///
/// ```
/// use udcache_readdir::reference::{CookieStyle, MemDir};
/// use udcache_readdir::{Config, ReaddirCache};
///
/// let cache = ReaddirCache::with_config(Config::default().with_budget_pages(64).with_page_entries(8));
/// let dir = cache.dir(MemDir::with_entries(CookieStyle::Hashed, 100, 0..20));
/// let mut c = dir.cursor();
/// let first = c.read(5).unwrap();
/// let mark = c.tell(); // telldir
/// let mut rest = Vec::new();
/// loop {
///     let batch = c.read(5).unwrap();
///     if batch.is_empty() { break; }
///     rest.extend(batch);
/// }
/// assert_eq!(first.len() + rest.len(), 20);
/// c.seek(mark); // seekdir
/// assert_eq!(c.read(5).unwrap(), rest[..5]);
/// ```
pub struct Cursor<B: Backend + 'static> {
    dir: DirCache<B>,
    cookie: u64,
    eof: bool,
    check: LoopCheck,
    failed: Option<Error>,
}

impl<B: Backend + 'static> Cursor<B> {
    pub(crate) fn new(dir: DirCache<B>) -> Self {
        Cursor { dir, cookie: 0, eof: false, check: LoopCheck::new(0), failed: None }
    }

    /// The next up to `max` entries; empty at the end of the directory.
    ///
    /// # Errors
    ///
    /// Those of [`DirCache::read`], and [`Error::Loop`] when the pass returns to a cookie it
    /// already returned. A loop error is sticky until [`Cursor::seek`]; other errors leave the
    /// position unchanged, so the read can be retried.
    pub fn read(&mut self, max: usize) -> Result<Vec<Entry>, Error> {
        // `DirCache::read`'s check, made here too: at the end, or stopped by a loop, the cursor
        // answers without calling it.
        if max == 0 {
            return Err(Error::InvalidArgument("max must be at least 1"));
        }
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.eof {
            return Ok(Vec::new());
        }
        let batch = self.dir.read(self.cookie, max)?;
        for e in &batch.entries {
            if self.check.see(e.cookie) {
                let err = Error::Loop { cookie: e.cookie };
                self.failed = Some(err);
                return Err(err);
            }
        }
        if let Some(last) = batch.entries.last() {
            self.cookie = last.cookie;
        }
        self.eof = batch.eof;
        Ok(batch.entries)
    }

    /// The position: the cookie to resume at (`telldir`).
    pub fn tell(&self) -> u64 {
        self.cookie
    }

    /// Moves to `cookie` (`seekdir`; 0 rewinds) and starts a new pass for loop detection.
    pub fn seek(&mut self, cookie: u64) {
        self.cookie = cookie;
        self.eof = false;
        self.check = LoopCheck::new(cookie);
        self.failed = None;
    }

    /// Whether the pass reached the end.
    pub fn is_eof(&self) -> bool {
        self.eof
    }

    /// The directory this cursor reads.
    pub fn dir(&self) -> &DirCache<B> {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::LoopCheck;

    #[test]
    fn brent_finds_every_cycle_and_never_fires_on_distinct_cookies() {
        let mut c = LoopCheck::new(0);
        assert!((1..10_000).all(|k| !c.see(k)));
        for (tail, cycle) in [(0u64, 1u64), (0, 7), (5, 1), (3, 64), (100, 3)] {
            let mut c = LoopCheck::new(0);
            let seq = (1..=tail).chain((0..).map(|i| 1000 + i % cycle));
            let found = seq.take(((tail + cycle) * 4 + 8) as usize).any(|k| c.see(k));
            assert!(found, "tail {tail} cycle {cycle}");
        }
    }
}
