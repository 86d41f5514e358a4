//! Time for entry, access and attribute expiry: a monotonic [`Clock`] of the caller's choice,
//! read by the cache as coarse 32-bit ticks (entries, access results) or as nanoseconds
//! (attributes, whose expiry has a 64-bit word of its own: see `Ticks::expiry_ns`).
//!
//! # Ticks
//!
//! An expiry is stored in 32 bits so that it packs with a verifier generation into one word
//! beside a dentry's inode pointer (see `valid.rs`). A tick is 2^24 ns (about 16.8 ms), counted
//! from the cache's creation: 2^32 ticks cover 2.28 years.
//!
//! - Expiries round *down* to a tick, so an entry is never trusted past the instant its
//!   timeout gave it; a timeout shorter than a tick may expire at the next tick boundary
//!   (a timeout of zero is "revalidate at every use", as FUSE's `entry_valid = 0`).
//! - The current tick saturates at `u32::MAX - 1`, and `u32::MAX` is "never expires"
//!   (`Duration::MAX`). So after 2.28 years a cache trusts no timed entry without asking the
//!   filesystem: every use of one revalidates. That is slower, never wrong (a wrapping count
//!   would, after 1.14 years, make long-expired entries look fresh again).
//! - A walk reads the clock at most once to check expiries, and only if it meets an entry or
//!   access result with a finite expiry: a cache whose timeouts are all `Duration::MAX` (the
//!   default) never reads it. A dentry that a revalidation refreshes costs a few reads more
//!   (its new expiry is dated from the moment of the refresh).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A monotonic clock: the time since an origin of its own choosing, never decreasing.
///
/// The cache's default is [`CoarseClock`]; tests and simulations use a [`ManualClock`].
pub trait Clock: Send + Sync {
    /// The time since this clock's origin.
    fn now(&self) -> Duration;
}

/// The system's coarse monotonic clock: `CLOCK_MONOTONIC_COARSE` on Linux (a few nanoseconds
/// to read, advancing once per scheduler tick — fine for expiries measured in 16.8 ms ticks),
/// `std::time::Instant` elsewhere.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoarseClock;

impl Clock for CoarseClock {
    #[cfg(target_os = "linux")]
    fn now(&self) -> Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC_COARSE exists on every
        // Linux since 2.6.32 and the call only writes `ts`.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        debug_assert_eq!(rc, 0, "clock_gettime(CLOCK_MONOTONIC_COARSE) failed");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    #[cfg(not(target_os = "linux"))]
    fn now(&self) -> Duration {
        static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        ORIGIN.get_or_init(std::time::Instant::now).elapsed()
    }
}

/// A clock that moves only when told: simulated time for tests and benchmarks.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use udcache::{Clock, ManualClock};
/// let clock = Arc::new(ManualClock::new());
/// clock.advance(Duration::from_millis(1500));
/// assert_eq!(clock.now(), Duration::from_millis(1500));
/// ```
#[derive(Debug, Default)]
pub struct ManualClock {
    ns: AtomicU64,
}

impl ManualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        ManualClock::default()
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Relaxed: a time value; it publishes nothing (std atomics even under loom: time is
        // not part of any modelled race).
        let _ = self
            .ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| Some(t.saturating_add(by)));
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        // Relaxed: see `advance`.
        Duration::from_nanos(self.ns.load(Ordering::Relaxed))
    }
}

/// `log2` of a tick in nanoseconds.
const TICK_SHIFT: u32 = 24;

/// The expiry that never comes.
pub(crate) const NEVER: u32 = u32::MAX;

/// The nanosecond expiry that never comes (see [`Ticks::expiry_ns`]).
pub(crate) const NEVER_NS: u64 = u64::MAX;

/// The last tick the clock reads as (it saturates there).
const LAST: u32 = u32::MAX - 1;

/// The cache's clock, read in ticks since the cache was made.
#[derive(Clone)]
pub(crate) struct Ticks {
    clock: Arc<dyn Clock>,
    origin: Duration,
}

impl Ticks {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        let origin = clock.now();
        Ticks { clock, origin }
    }

    fn elapsed(&self) -> u128 {
        self.clock.now().saturating_sub(self.origin).as_nanos()
    }

    /// Nanoseconds since the cache was made, saturating at `u64::MAX - 1` (584 years), so that
    /// `u64::MAX` stays free for "never" (see [`Ticks::expiry_ns`]).
    pub(crate) fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.elapsed()).map_or(NEVER_NS - 1, |ns| ns.min(NEVER_NS - 1))
    }

    /// The expiry, in [`Ticks::elapsed_ns`]'s nanoseconds, of something trusted for `ttl` from
    /// now: [`NEVER_NS`] for `Duration::MAX`. Nanosecond precision, for attributes (whose
    /// expiry has a word of its own); saturates at `u64::MAX - 1`.
    pub(crate) fn expiry_ns(&self, ttl: Duration) -> u64 {
        if ttl == Duration::MAX {
            return NEVER_NS;
        }
        let ttl = u64::try_from(ttl.as_nanos()).unwrap_or(u64::MAX);
        self.elapsed_ns().saturating_add(ttl).min(NEVER_NS - 1)
    }

    /// The current tick.
    pub(crate) fn now(&self) -> u32 {
        to_tick(self.elapsed())
    }

    /// The expiry of something trusted for `ttl` from now: [`NEVER`] for `Duration::MAX`.
    pub(crate) fn expiry(&self, ttl: Duration) -> u32 {
        if ttl == Duration::MAX {
            return NEVER;
        }
        to_tick(self.elapsed().saturating_add(ttl.as_nanos()))
    }
}

/// Nanoseconds to a tick, rounding down, saturating at [`LAST`].
fn to_tick(ns: u128) -> u32 {
    u32::try_from(ns >> TICK_SHIFT).map_or(LAST, |t| t.min(LAST))
}

impl fmt::Debug for Ticks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticks").field("origin", &self.origin).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_round_down_and_saturate() {
        let clock = Arc::new(ManualClock::new());
        clock.advance(Duration::from_secs(5)); // the origin is wherever the clock stood
        let t = Ticks::new(clock.clone());
        assert_eq!(t.now(), 0);
        let tick = Duration::from_nanos(1 << TICK_SHIFT);
        // Never trusted past the instant asked for: 1.5 ticks expire at tick 1.
        assert_eq!(t.expiry(tick * 3 / 2), 1);
        assert_eq!(t.expiry(Duration::ZERO), 0); // expired at once: now (0) is not before 0
        assert_eq!(t.expiry(Duration::MAX), NEVER);
        assert_eq!(t.expiry(Duration::from_secs(u64::MAX)), LAST);
        clock.advance(tick * 7);
        assert_eq!(t.now(), 7);
        clock.advance(Duration::from_secs(3 * 365 * 86_400)); // past the horizon
        assert_eq!(t.now(), LAST);
        assert_eq!(t.expiry(Duration::from_secs(1)), LAST); // expired: LAST is not before LAST
    }

    #[test]
    fn nanosecond_expiries_are_exact_and_saturate() {
        let clock = Arc::new(ManualClock::new());
        clock.advance(Duration::from_secs(5));
        let t = Ticks::new(clock.clone());
        assert_eq!(t.elapsed_ns(), 0);
        assert_eq!(t.expiry_ns(Duration::from_nanos(7)), 7);
        assert_eq!(t.expiry_ns(Duration::MAX), NEVER_NS);
        assert_eq!(t.expiry_ns(Duration::from_secs(u64::MAX)), NEVER_NS - 1);
        clock.advance(Duration::from_nanos(3));
        assert_eq!(t.elapsed_ns(), 3);
        assert_eq!(t.expiry_ns(Duration::ZERO), 3);
    }

    #[test]
    fn coarse_clock_moves_forward() {
        let c = CoarseClock;
        let a = c.now();
        std::thread::sleep(Duration::from_millis(30));
        assert!(c.now() > a);
    }
}
