//! Polled grace-period cookies, built on crossbeam-epoch's deferred functions.
//!
//! # The rules
//!
//! **State.** Two global words:
//! - `seq`: the grace-period sequence. Bit 0 set means a grace period is in flight; `seq` only
//!   grows, by exactly 1 at each transition: `s` (idle, even) → `s + 1` (started) → `s + 2`
//!   (completed). A cookie is the value `seq` must reach for it to be complete, so
//!   `poll(c) == (seq >= c)` and cookies are totally ordered.
//! - `needed`: the largest cookie anyone asked to complete (a hint; only grows).
//!
//! **Taking a cookie** (`get_state`): after a SeqCst fence, read `seq = s`. If idle, the next
//! grace period to start (at `s`) is entirely in our future and completes at `s + 2`. If one is in
//! flight it may have started before our caller unpublished its object, so it does not count:
//! the cookie is the end of the next one, `s + 3`. Both are `(s + 3) & !1`.
//!
//! **Starting** (`try_start`, from `start_poll` and from polls that drive): only while idle and
//! `needed > seq`, and only by the thread whose SeqCst CAS moves `seq` from `s` to `s + 1`. That
//! thread pins, `defer`s a closure that stores `s + 2` into `seq`, and flushes its bag to the
//! global queue. At most one grace period is in flight, so the closure is the only writer of its
//! completion.
//!
//! **Completing.** crossbeam runs the closure only once the global epoch has advanced twice past
//! the epoch the bag was sealed with, which needs every participant pinned at sealing time to
//! have unpinned (or re-pinned later). Advancing and collecting happen when any thread pins (every
//! 128th pin collects) or flushes; a failed [`poll`] on a thread flushes every
//! [`DRIVE_EVERY`]th time, so completion never depends on other threads' activity.
//!
//! # Ordering argument
//!
//! Let a reader pin (crossbeam: store of its epoch, then a SeqCst fence) and load a pointer `p`;
//! let a writer unpublish `p`, then take a cookie `c` (SeqCst fence, then a SeqCst load of `seq`).
//! 1. If the reader's load saw `p`, its fence precedes the writer's fence in the single SeqCst
//!    order S (the load read a value overwritten by the unpublish). The writer's load of `seq`
//!    precedes, in S, the SeqCst CAS that starts the grace period ending at `c` (the load read
//!    a value that CAS overwrote, or an earlier one). That starter then pins and crossbeam seals
//!    the bag after its own SeqCst fence, and `try_advance` reads every participant's epoch after a
//!    SeqCst fence: so it sees the reader still pinned, at an epoch no later than the bag's, and
//!    cannot advance twice past it until the reader unpins.
//! 2. The reader's unpin is a Release store of its epoch, which `try_advance` reads before its
//!    Acquire fence and its Release store of the new global epoch; the collector that runs the
//!    closure read that epoch. The closure's `seq` store is Release and `poll` loads `seq` with
//!    Acquire, so everything the reader did while pinned happens-before `poll(c)` returning
//!    true, and so before the object is reused.
//!
//! # Wrap-around
//!
//! `seq` grows by 2 per grace period. Even at one grace period per microsecond (far faster than
//! crossbeam can advance) 2^63 grace periods take 290,000 years: cookies never wrap in practice,
//! so they compare as plain integers.

use crate::sync::atomic::{AtomicU64, Ordering, fence};
use std::cell::Cell;

/// A grace-period cookie: completes once every reader pinned when it was taken has unpinned.
///
/// Cookies are totally ordered (a later cookie completes no sooner) and 64-bit; equal cookies
/// complete together, so objects with equal cookies can share one list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpCookie(u64);

impl GpCookie {
    /// A cookie that is always complete.
    pub const COMPLETED: GpCookie = GpCookie(0);

    /// The raw sequence value this cookie waits for (for logs and statistics).
    pub fn value(self) -> u64 {
        self.0
    }
}

/// A failed [`poll`] drives grace-period machinery on every `DRIVE_EVERY`th failure on a thread:
/// a drive costs a pin and a flush (hundreds of ns when a reader is pinning on another core),
/// so it is rationed; 16 keeps a spinning poller's completion latency within a few µs of the
/// readers unpinning while costing a busy allocator a few ns per failed poll.
#[cfg(not(loom))]
pub const DRIVE_EVERY: u32 = 16;
/// Under loom every failed poll drives, so models stay short.
#[cfg(loom)]
pub const DRIVE_EVERY: u32 = 1;

const IN_FLIGHT: u64 = 1;

struct GpState {
    seq: AtomicU64,
    needed: AtomicU64,
}

#[cfg(not(loom))]
fn state() -> &'static GpState {
    static STATE: GpState = GpState { seq: AtomicU64::new(0), needed: AtomicU64::new(0) };
    &STATE
}

/// Under loom the state lives per model execution. It is leaked rather than owned by the
/// `lazy_static`, because the completion closure may run while loom tears the execution down
/// (a thread's epoch handle flushes its bag at exit), when lazy statics may no longer be
/// touched; the closure holds the `&'static` it was given instead.
#[cfg(loom)]
fn state() -> &'static GpState {
    crate::sync::lazy_static! {
        static ref STATE: &'static GpState = Box::leak(Box::new(GpState {
            seq: AtomicU64::new(0),
            needed: AtomicU64::new(0),
        }));
    }
    *STATE
}

crate::sync::thread_local! {
    #[allow(clippy::missing_const_for_thread_local)] // loom's thread_local! has no const form
    static FAILED_POLLS: Cell<u32> = Cell::new(0);
}

/// A cookie that completes after one full grace period from now. Cheap: starts nothing.
///
/// Call it after unpublishing the object the cookie protects.
///
/// ```
/// let c = udcache_gp::get_state();
/// udcache_gp::cond_synchronize(c); // some poller must start the grace period; this one does
/// assert!(udcache_gp::poll(&c));
/// ```
pub fn get_state() -> GpCookie {
    // SeqCst fence: orders the caller's unpublish (any store) before the read of `seq`; with the
    // starter's SeqCst CAS and crossbeam's pin/advance fences this is step 1 of the ordering
    // argument in the module docs.
    fence(Ordering::SeqCst);
    let s = state().seq.load(Ordering::SeqCst);
    GpCookie((s + 3) & !IN_FLIGHT)
}

/// Like [`get_state`], and makes sure a grace period is under way, so the cookie completes
/// without anyone having to block (given readers unpin and someone polls or pins).
pub fn start_poll() -> GpCookie {
    let c = get_state();
    request(c);
    c
}

/// Has `cookie` completed? A load and a compare when it has.
///
/// When it has not, the failure is counted; every [`DRIVE_EVERY`]th failure on this thread
/// requests the cookie's grace period and drives crossbeam's collector (a pin and a flush), so
/// polling alone completes a cookie once its readers have unpinned.
pub fn poll(cookie: &GpCookie) -> bool {
    if completed(cookie) {
        return true;
    }
    poll_slow(cookie)
}

#[cold]
fn poll_slow(cookie: &GpCookie) -> bool {
    let due = FAILED_POLLS.with(|n| {
        let v = n.get() + 1;
        n.set(if v >= DRIVE_EVERY { 0 } else { v });
        v >= DRIVE_EVERY
    });
    if due {
        request(*cookie);
        drive();
    }
    completed(cookie)
}

/// Blocks until `cookie` has completed; returns at once if it already has.
///
/// # Panics
///
/// If the calling thread is pinned and the cookie is not complete: it would wait for itself.
pub fn cond_synchronize(cookie: GpCookie) {
    if completed(&cookie) {
        return;
    }
    assert!(
        !crossbeam_epoch::is_pinned(),
        "udcache_gp: waiting for a grace period while pinned would wait forever"
    );
    request(cookie);
    let mut spins = 0u32;
    while !completed(&cookie) {
        drive();
        spins += 1;
        if spins > 64 {
            std::thread::yield_now();
        }
    }
}

/// Waits for a full grace period: every reader pinned now has unpinned when this returns.
pub fn synchronize() {
    cond_synchronize(start_poll());
}

/// The pure check, with no driving.
pub(crate) fn completed(cookie: &GpCookie) -> bool {
    // Acquire: pairs with the Release store in the completion closure (step 2 of the argument).
    state().seq.load(Ordering::Acquire) >= cookie.0
}

/// Records that `cookie` is wanted and starts its grace period if none is in flight.
pub(crate) fn request(cookie: GpCookie) {
    let st = state();
    // Relaxed: `needed` only tells a future starter that a grace period is wanted; the ordering
    // that makes the grace period cover our readers comes from `seq` (see `try_start`).
    if st.needed.load(Ordering::Relaxed) < cookie.0 {
        st.needed.fetch_max(cookie.0, Ordering::Relaxed);
    }
    try_start(st);
}

/// Starts a grace period if none is in flight and one is needed.
fn try_start(st: &'static GpState) {
    // SeqCst load and CAS: the CAS must follow, in the SeqCst order, every `get_state` load that
    // read the value it replaces (step 1 of the argument).
    let s = st.seq.load(Ordering::SeqCst);
    if s & IN_FLIGHT != 0 || st.needed.load(Ordering::Relaxed) <= s {
        return;
    }
    if st.seq.compare_exchange(s, s + 1, Ordering::SeqCst, Ordering::Relaxed).is_err() {
        return;
    }
    let guard = crossbeam_epoch::pin();
    guard.defer(move || {
        // Release: pairs with the Acquire in `completed`. Only this closure writes `seq` while
        // the grace period started above is in flight.
        let prev = st.seq.swap(s + 2, Ordering::Release);
        debug_assert_eq!(prev, s + 1, "two grace periods in flight");
    });
    guard.flush();
}

/// Pushes the machinery one step: starts a needed grace period, then flushes this thread's
/// deferred functions and lets crossbeam try to advance the epoch and run expired bags.
fn drive() {
    try_start(state());
    crossbeam_epoch::pin().flush();
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn completed_cookie_is_complete() {
        assert!(poll(&GpCookie::COMPLETED));
        assert!(GpCookie::COMPLETED < get_state());
    }

    #[test]
    fn cookies_are_ordered_and_complete_by_polling_alone() {
        let a = start_poll();
        let b = get_state();
        assert!(a <= b);
        let mut polls = 0u64;
        while !poll(&b) {
            polls += 1;
            assert!(polls < 100_000_000, "cookie never completed");
        }
        assert!(poll(&a), "an earlier cookie completes no later");
    }

    #[test]
    fn synchronize_waits_for_a_pinned_reader() {
        use std::sync::atomic::AtomicBool;
        use std::sync::{Arc, Barrier};
        let pinned = Arc::new(Barrier::new(2));
        let released = Arc::new(AtomicBool::new(false));
        let (p, r) = (pinned.clone(), released.clone());
        let reader = std::thread::spawn(move || {
            let guard = crossbeam_epoch::pin();
            p.wait();
            std::thread::sleep(std::time::Duration::from_millis(50));
            r.store(true, Ordering::SeqCst);
            drop(guard);
        });
        pinned.wait();
        let c = start_poll();
        cond_synchronize(c);
        assert!(released.load(Ordering::SeqCst), "completed while the reader was still pinned");
        reader.join().unwrap();
    }

    #[test]
    #[should_panic(expected = "while pinned")]
    fn synchronize_while_pinned_panics() {
        let _g = crossbeam_epoch::pin();
        synchronize();
    }
}
