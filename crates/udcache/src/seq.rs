//! A sequence count over atomic words: one consistent snapshot of `N` words, read without locks
//! while a writer replaces them. The cached attributes (`attr.rs`) and the access cache's
//! most recent result (`access.rs`) are two of these.
//!
//! # Rules
//!
//! - `seq` is even when the words are stable and odd while a writer replaces them. A writer takes
//!   it from even to odd with a compare-exchange (that is the writers' lock: no mutex), stores
//!   the words, and releases it to the next even value.
//! - Every word is an `AtomicU64`, written and read with `Relaxed`; the two fences below order
//!   them. A reader may observe a half-written set of words, but then its validation fails: it
//!   never *returns* a torn snapshot. [`SeqWords::read`] retries; [`SeqWords::try_read`] gives
//!   up at once (a lockless caller with a slower path to fall back on).
//! - Writers publish; nothing is retired (the words live as long as their owner).
//!
//! This is the fence-based sequence lock of H.-J. Boehm, "Can seqlocks get along with
//! programming language memory models?" (2012): every racing read is of an atomic, so it is
//! defined, and the caller decodes its typed value only from a validated snapshot.

use crate::sync::{AtomicU64, Ordering, fence, spin};

/// `N` words under one sequence count.
pub(crate) struct SeqWords<const N: usize> {
    seq: AtomicU64,
    words: [AtomicU64; N],
}

impl<const N: usize> SeqWords<N> {
    /// All words zero.
    pub(crate) fn new() -> Self {
        SeqWords { seq: AtomicU64::new(0), words: std::array::from_fn(|_| AtomicU64::new(0)) }
    }

    /// A consistent snapshot, without locks or shared writes; waits out a writer.
    pub(crate) fn read(&self) -> [u64; N] {
        loop {
            match self.try_read() {
                Some(w) => return w,
                None => spin(),
            }
        }
    }

    /// A consistent snapshot, or `None` if a writer was replacing the words meanwhile.
    pub(crate) fn try_read(&self) -> Option<[u64; N]> {
        // Acquire: pairs with the writer's closing Release store, so a reader that sees an
        // even value sees every word that writer stored.
        let s1 = self.seq.load(Ordering::Acquire);
        if s1 & 1 == 1 {
            return None;
        }
        let mut w = [0u64; N];
        for (dst, src) in w.iter_mut().zip(&self.words) {
            // Relaxed: validated by the fence and the second load below.
            *dst = src.load(Ordering::Relaxed);
        }
        // Acquire fence: if any word read above was stored by a writer that started after
        // `s1`, that writer's Release fence (after its odd store) synchronises with this
        // fence, so the load below sees the odd value or a later one and we give up.
        fence(Ordering::Acquire);
        (self.seq.load(Ordering::Relaxed) == s1).then_some(w)
    }

    /// Replaces the snapshot; returns the one it replaced (read inside the write, so two
    /// writers never both replace the same snapshot). Writers exclude each other through `seq`
    /// itself.
    pub(crate) fn write(&self, words: [u64; N]) -> [u64; N] {
        let mut s = self.seq.load(Ordering::Relaxed);
        loop {
            if s & 1 == 1 {
                spin();
                s = self.seq.load(Ordering::Relaxed);
                continue;
            }
            // Acquire on success: pairs with the previous writer's Release store, so our
            // words are stored after (and overwrite) theirs.
            match self.seq.compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        // Release fence: orders the odd `seq` above before the word stores below, for any
        // reader whose Acquire fence follows a load of one of those words (see `try_read`).
        fence(Ordering::Release);
        let replaced = std::array::from_fn(|i| {
            // Relaxed: the previous writer's stores happen before our CAS (its Release store
            // of `seq`, our Acquire), and no other writer runs until our store below.
            let old = self.words[i].load(Ordering::Relaxed);
            // Relaxed: published by the Release store of `seq` below.
            self.words[i].store(words[i], Ordering::Relaxed);
            old
        });
        // Release: pairs with the Acquire first load in `try_read`.
        self.seq.store(s + 2, Ordering::Release);
        replaced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_writers_each_replace_a_snapshot_no_other_writer_replaced() {
        let c = SeqWords::<2>::new();
        let replaced = std::thread::scope(|s| {
            let writers: Vec<_> = (1..=4u64)
                .map(|t| {
                    let c = &c;
                    s.spawn(move || {
                        let writes = (0..2000).map(|i| t << 32 | i);
                        writes.map(|v| c.write([v, !v])).collect::<Vec<_>>()
                    })
                })
                .collect();
            writers.into_iter().flat_map(|w| w.join().unwrap()).collect::<Vec<_>>()
        });
        // Every snapshot written (and the first) is replaced exactly once, except the last.
        let mut seen: Vec<u64> = replaced.iter().map(|w| w[0]).collect();
        assert!(replaced.iter().all(|w| w[1] == !w[0] || w == &[0, 0]), "torn");
        seen.push(c.read()[0]);
        seen.sort_unstable();
        let mut all: Vec<u64> =
            (1..=4u64).flat_map(|t| (0..2000).map(move |i| t << 32 | i)).collect();
        all.push(0);
        all.sort_unstable();
        assert_eq!(seen, all);
    }

    #[test]
    fn try_read_returns_whole_snapshots_or_nothing() {
        let c = SeqWords::<3>::new();
        c.write([0, !0, 0]);
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..20_000u64 {
                    c.write([i, !i, i.rotate_left(7)]);
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some([a, b, d]) = c.try_read() {
                    assert!(b == !a && d == a.rotate_left(7), "torn: {a} {b} {d}");
                }
            }
        });
        // Quiet: a try never gives up.
        assert_eq!(c.try_read(), Some([19_999, !19_999, 19_999u64.rotate_left(7)]));
    }
}
