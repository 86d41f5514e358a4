//! Keeping negative entries bounded: the run rule, the per-bucket cap, the global share, and
//! `shrink`. Every function here that changes a chain takes the `BucketLock` (the proof that the chain is locked).
//!
//! # Victims
//!
//! Only *settled* entries are ever evicted by the rules: unused, hashed, on the LRU; and an
//! eviction first claims the entry (`refs` 0 → `DEAD`), which fails if anyone holds it. So a
//! positive entry is never evicted by a rule (they only look at negatives), and no held entry
//! is evicted by anything.
//!
//! # Rule 1 — the run rule (as proposed for Linux's dentry cache)
//!
//! When a negative entry becomes unused, its referenced bit is cleared and the entries that
//! follow it in its chain are examined: in a run of negative, settled, unreferenced entries
//! starting with it, the two after it are kept and the next is evicted — at most three in a row
//! ([`MAX_RUN`]). Here every run of the chain is checked, not only the released entry's (see
//! `trim_runs`), so the bound also holds after rule 2 or `shrink` spend second chances, and
//! after any entry leaves the middle of a chain (the two runs around it become one: `retrim`).
//! A new negative goes in front of its chain's other negatives (behind the positives that
//! lead it: see `table.rs`, Chain order), so a flood of single-use misses keeps about three
//! negatives per bucket. Lookups that
//! hit set the referenced bit, which ends a run: negatives that real workloads reuse survive —
//! and so does a flood that touches every name twice, which is why rule 2 exists.
//!
//! # Rule 2 — the cap
//!
//! A bucket holds at most `cap` negative entries whatever their bits say (held ones excepted:
//! they cannot be evicted, so they can exceed it while held). Over the cap, the victim is the
//! oldest settled negative that is not referenced; if all are referenced, all lose the bit
//! (their second chance is spent) and the oldest goes.
//!
//! # Admission (on by default; [`Config::with_admission`](crate::Config::with_admission))
//!
//! The run rule as proposed for Linux evicts the *oldest* of a run (the third after the released entry). Under a
//! scan of unique names that pushes out every negative a workload made before the scan, even
//! ones it will reuse. With admission on, a first-time negative (not referenced, not a refault)
//! whose release would make its run longer than [`MAX_RUN`] is evicted itself instead: a
//! negative must be missed twice (the second time as a refault, below) to displace settled
//! ones. The bound is the same — at most three in a row — only the victim differs.
//!
//! # Ghosts: keeping the negatives a workload reuses
//!
//! A compile probes the same missing headers in every include directory, every time; a flood
//! of unique names looks like it only between two compiles: both are unreferenced negatives
//! then. To tell them apart each bucket keeps a ghost slot holding the 32-bit hash of the
//! negative it last evicted (a shadow entry, as Linux's page cache keeps for refaults).
//! Under the include-path load (`udcache-bench include-path`) the header negatives are made
//! before the flood, so admission alone keeps them (its figure is the same with the ghost
//! check turned off); the slot is for a negative that a workload reuses but that was refused
//! or evicted anyway, which it lets back in on its second miss (`tests/admission.rs`), as long
//! as no other negative of the bucket was evicted in between (one slot remembers the last).
//! A negative inserted whose hash is in a ghost slot is a *refault*: it is born with the
//! `WORKINGSET` bit, which protects it like `REFERENCED` (it does not count in runs, and rule 2
//! passes it over once). Unique names never refault, so a flood gains nothing; the bounds do not
//! depend on any bit, so nothing can defeat them. Cost: 4 bytes per bucket, none in a table
//! built without admission (see [`Config::with_admission`](crate::Config::with_admission)).
//!
//! # Shrink
//!
//! Pops the oldest entries of the LRU (negatives first when asked), giving a referenced entry
//! a second chance (bit cleared, back to the LRU's tail) and evicting the rest if still
//! unused. It pops with only the LRU lock, then takes the bucket lock: the lock order holds.
//!
//! A shrink's count is exact and never exceeds what was asked. Its own changes can make rule 1
//! evict: a spent chance can join the runs on either side of the entry into one longer than
//! [`MAX_RUN`], and so can the eviction of an entry that separated two runs (a positive among
//! negatives, where a polarity flip left it). Those evictions are the shrink's: before each
//! change it counts what rule 1 would take after it (`rule1_cost`), makes the change only if
//! the count still fits in what is left to evict, and counts them. A change that does not fit
//! is not made: the entry goes back to the LRU's tail as it was (the entries rule 1 would have
//! taken are settled negatives of the same shard, so the scan reaches them on its own).

use std::sync::atomic::AtomicUsize;

use udcache_rculist::epoch::{self, Guard};

use crate::bucket::BucketLock;
use crate::entry::{Entry, NEGATIVE, ON_LRU, Polarity, tag_bit};
use crate::pooled::EntryRef;
use crate::stats::C;
use crate::store::Store;

/// Takes `entry` off its chain and its LRU, fixing the counters. The entry stays valid for
/// readers and holders until they let go.
pub(crate) fn unhash<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &mut BucketLock<'_, V>,
    entry: &Entry<V>,
    guard: &Guard,
) {
    let unlinked = lock.chain.remove(entry).expect("a hashed entry is on its bucket's chain");
    // After the unlinking store (see `table.rs`, Tags): the bits of the entries left.
    let left = t.chain(lock).iter(guard).fold(0, |bits, e| bits | tag_bit(e.key));
    lock.chain.set_tags(left);
    entry.mark_unhashed();
    t.lru.remove(lock, entry, &t.counters);
    t.counters.add(lock.index(), C::Entries, -1);
    if entry.has(NEGATIVE) {
        t.counters.add(lock.index(), C::Negative, -1);
    }
    drop(unlinked);
}

/// Claims and unhashes an unused entry; false if it is held (nothing changes then).
fn evict<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &mut BucketLock<'_, V>,
    entry: &Entry<V>,
    why: C,
    guard: &Guard,
) -> bool {
    if !entry.is_hashed() || !entry.claim() {
        return false;
    }
    if entry.has(NEGATIVE) && t.config.admission() {
        t.remember_evicted(lock, entry);
    }
    unhash(t, lock, entry, guard);
    t.counters.add(lock.index(), why, 1);
    true
}

fn settled_negative<V>(e: &Entry<V>) -> bool {
    e.has(NEGATIVE) && e.is_settled()
}

/// Rule 1, run when `released` (negative) has just become unused and been put on the LRU.
pub(crate) fn run_rule<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &mut BucketLock<'_, V>,
    released: &EntryRef<V>,
    guard: &Guard,
) {
    released.clear_referenced();
    if t.config.admission() && !released.is_protected() {
        // Admission: a first-time negative joining a full run is the one that goes, so the
        // entries that were there first (and may be reused) are not pushed out by a scan.
        let run = t
            .chain(lock)
            .iter(guard)
            .skip_while(|e| !std::ptr::eq(*e, &**released))
            .take_while(|e| settled_negative(e) && !e.is_protected())
            .count();
        if run > MAX_RUN {
            // The released entry may sit between two runs (one before it, this one after it):
            // its going joins them, so the chain is checked again as after any unhash.
            if evict(t, lock, released, C::EvictRule1, guard) {
                trim_runs(t, lock, guard, usize::MAX);
            }
            return;
        }
    }
    trim_runs(t, lock, guard, usize::MAX);
}

/// Evicts the fourth entry of every run of settled, unreferenced negatives in this chain.
///
/// The run rule as proposed for Linux looks only at the run that starts with the entry being released; this looks
/// at every run, so the bound ("at most three in a row") also holds after rule 2 or `shrink`
/// clear referenced bits elsewhere in the chain. On a chain where only releases clear bits the
/// two are the same: only the released entry's run can have grown.
///
/// Evicts at most `limit` entries and returns how many. Only `shrink` passes a limit (what it
/// has left to evict), after counting with [`rule1_cost`] under this same lock what the trim
/// will take; more can be due only if an entry of the chain became settled in between, its
/// last holder's count dropped to 0 without the lock (`NegHash::release` takes it after):
/// that release trims the chain itself once it has the lock.
fn trim_runs<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &mut BucketLock<'_, V>,
    guard: &Guard,
    limit: usize,
) -> usize {
    let mut evicted = 0;
    while evicted < limit {
        let mut run = 0;
        let victim = t.chain(lock).iter(guard).find(|e| {
            run = if in_run(e) { run + 1 } else { 0 };
            run > MAX_RUN
        });
        match victim {
            Some(v) if evict(t, lock, v, C::EvictRule1, guard) => evicted += 1,
            _ => break,
        }
    }
    evicted
}

/// Whether `e` counts in a run of rule 1: a settled negative without a second chance.
fn in_run<V>(e: &Entry<V>) -> bool {
    settled_negative(e) && !e.is_protected()
}

/// A change `shrink` may make to an entry it popped off the LRU (so not settled now: off the
/// LRU, but unused and hashed).
#[derive(Clone, Copy)]
enum Change {
    /// Spend its second chance and put it back on the LRU.
    Spend,
    /// Evict it.
    Evict,
}

/// How many entries rule 1 (if on) would evict from `popped`'s chain after `change`: a run of
/// `L` entries loses `L - MAX_RUN` of them (`trim_runs` evicts the fourth until three are
/// left). Counted before the change, without making it.
fn rule1_cost<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &BucketLock<'_, V>,
    popped: &Entry<V>,
    change: Change,
    guard: &Guard,
) -> usize {
    if !t.config.rule1() {
        return 0;
    }
    let (mut run, mut cost) = (0, 0);
    for e in t.chain(lock).iter(guard) {
        let member = if !std::ptr::eq(e, popped) {
            in_run(e)
        } else {
            match change {
                // Back on the LRU, unused and unprotected: a member if negative.
                Change::Spend => e.has(NEGATIVE),
                // Off the chain: the entries on either side of it are neighbours.
                Change::Evict => continue,
            }
        };
        run = if member { run + 1 } else { 0 };
        cost += usize::from(run > MAX_RUN);
    }
    cost
}

/// Re-applies rule 1 (if on) after an entry left the middle of a chain: the runs on either side
/// of it are one run now. Called after every unhash that is not itself rule 1's. Evicts at
/// most `limit` (see `trim_runs`: `usize::MAX` but in `shrink`) and returns how many.
pub(crate) fn retrim<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &mut BucketLock<'_, V>,
    guard: &Guard,
    limit: usize,
) -> usize {
    if t.config.rule1() { trim_runs(t, lock, guard, limit) } else { 0 }
}

/// Rule 1 keeps at most this many settled, unreferenced negatives in a row.
pub const MAX_RUN: usize = 3;

/// Rule 2: evicts settled negatives of this bucket while there are more than the cap.
pub(crate) fn enforce_cap<V: Send + Sync + 'static>(
    t: &Store<V>,
    lock: &mut BucketLock<'_, V>,
    guard: &Guard,
) {
    let Some(cap) = t.config.cap() else { return };
    // A chain no longer than the cap cannot hold too many negatives: no walk.
    if lock.chain.short_len().is_some_and(|len| len <= cap) {
        return;
    }
    loop {
        let (mut negatives, mut oldest_unreferenced, mut oldest) = (0, None, None);
        for e in t.chain(lock).iter(guard) {
            if !e.has(NEGATIVE) {
                continue;
            }
            negatives += 1;
            if e.is_settled() {
                oldest = Some(e);
                if !e.is_protected() {
                    oldest_unreferenced = Some(e);
                }
            }
        }
        if negatives <= cap {
            return;
        }
        let victim = match oldest_unreferenced {
            Some(v) => v,
            None => {
                // Every settled negative was protected: their second chance (a reference, or
                // a refault's working-set mark) is spent.
                t.chain(lock)
                    .iter(guard)
                    .filter(|e| settled_negative(e))
                    .for_each(|e| e.spend_chance());
                match oldest {
                    Some(v) => v,
                    None => return, // all negatives are held
                }
            }
        };
        if !evict(t, lock, victim, C::EvictRule2, guard) {
            return;
        }
        // The victim may have separated two runs, or spent chances made new ones.
        retrim(t, lock, guard, usize::MAX);
    }
}

/// The global share: if negatives exceed `share` of all entries, evict one old negative.
pub(crate) fn enforce_share<V: Send + Sync + 'static>(t: &Store<V>, share: f64) {
    let c = &t.counters;
    if c.sum(C::Negative) as f64 > share * c.sum(C::Entries) as f64 {
        let _ = evict_from_lru(t, 1, Polarity::Negative, C::EvictGlobal);
    }
}

/// `shrink(n)` for one kind of entry: how many it evicted (at most `n`), and whether it
/// stopped because that kind's LRU lists were empty.
pub(crate) fn shrink<V: Send + Sync + 'static>(
    t: &Store<V>,
    n: usize,
    polarity: Polarity,
) -> (usize, bool) {
    evict_from_lru(t, n, polarity, C::EvictShrink)
}

fn evict_from_lru<V: Send + Sync + 'static>(
    t: &Store<V>,
    n: usize,
    polarity: Polarity,
    why: C,
) -> (usize, bool) {
    scan_lru(t, n, polarity, |lock, e, guard, room| {
        if 1 + rule1_cost(t, lock, e, Change::Evict, guard) > room {
            return None;
        }
        Some(if evict(t, lock, e, why, guard) { 1 + retrim(t, lock, guard, room - 1) } else { 0 })
    })
}

/// Holds up to `n` of the oldest unused entries of polarity `polarity`, second chances given
/// as by `shrink`, for a caller that does its own bookkeeping before removing them; each with
/// its bucket, for the caller to wrap in a [`Held`](crate::Held) (the hold is taken). An
/// entry whose removal would make rule 1 evict (it separates two runs of negatives) is passed
/// over: the caller could not count those evictions.
pub(crate) fn oldest_unused<V: Send + Sync + 'static>(
    t: &Store<V>,
    n: usize,
    polarity: Polarity,
) -> Vec<(EntryRef<V>, usize)> {
    let mut held = Vec::new();
    scan_lru(t, n, polarity, |lock, e, guard, _room| {
        if rule1_cost(t, lock, e, Change::Evict, guard) > 0 {
            return None;
        }
        // Popped off the LRU, so releasing the hold puts it back there.
        let got = e.try_hold().is_some();
        if got {
            held.push((e.clone(), lock.index()));
        }
        Some(usize::from(got))
    });
    held
}

/// Takes every negative whose parent `doomed` accepts out of the table, bucket by bucket: a
/// settled one is evicted, a held one unhashed (as [`Held::remove`](crate::Held::remove)
/// does: it stays valid for its holders). Returns how many left.
pub(crate) fn purge_negatives<V: Send + Sync + 'static>(
    t: &Store<V>,
    doomed: &dyn Fn(u64) -> bool,
) -> usize {
    let mut gone = 0;
    for b in 0..t.buckets.len() {
        let guard = epoch::pin();
        let mut lock = t.lock_bucket(b);
        let victims: Vec<_> =
            t.chain(&lock).iter(&guard).filter(|e| e.has(NEGATIVE) && doomed(e.parent())).collect();
        let before = gone;
        for e in victims {
            // On the chain under its lock: hashed, and not claimed (an evictor unhashes what it
            // claims under the same lock). An unsettled one is in use: its release finds it
            // unhashed and drops its count, as after `Held::remove`.
            if settled_negative(e) {
                gone += usize::from(evict(t, &mut lock, e, C::EvictShrink, &guard));
            } else {
                unhash(t, &mut lock, e, &guard);
                gone += 1;
            }
        }
        if gone > before {
            retrim(t, &mut lock, &guard, usize::MAX);
        }
    }
    gone
}

/// Where the next LRU scan starts, so repeated small shrinks visit every shard.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

/// Pops the oldest entries of one kind off the LRU until `take` has accepted `n` of them (or
/// about `2n` were looked at): a referenced entry gets its second chance instead (bit cleared,
/// back to the LRU's tail); a held or removed one is skipped (its last release re-files it).
/// `take` runs under the entry's bucket lock and is told how many more may go: it answers how
/// many went (the entry and what rule 1 evicted after it; 0 if it could not be had), or
/// `None` to leave it (it goes back to the LRU's tail as it was). A second chance whose
/// spending would make rule 1 evict more than may go is not spent now (see the module docs,
/// Shrink). Returns how many went, and whether the scan stopped because every shard's list of
/// that kind was empty.
fn scan_lru<V: Send + Sync + 'static>(
    t: &Store<V>,
    n: usize,
    polarity: Polarity,
    mut take: impl FnMut(&mut BucketLock<'_, V>, &EntryRef<V>, &Guard, usize) -> Option<usize>,
) -> (usize, bool) {
    let shards = t.lru.shards();
    // Relaxed: only spreads scans over shards.
    let mut shard = NEXT_SHARD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % shards;
    let (mut taken, mut scanned, mut empty) = (0, 0, 0);
    // `n` may be "everything" (`usize::MAX`): the bound saturates rather than wraps.
    let budget = n.saturating_mul(2).saturating_add(shards);
    while taken < n && scanned < budget && empty < shards {
        let Some(e) = t.lru.pop(shard, polarity, &t.counters) else {
            empty += 1;
            shard = (shard + 1) % shards;
            continue;
        };
        empty = 0;
        scanned += 1;
        let guard = epoch::pin();
        let mut lock = t.lock_bucket(t.bucket_of(e.parent(), e.name()));
        let held = e.refs.load(crate::sync::Ordering::Relaxed) != 0;
        if !e.is_hashed() || held || e.has(ON_LRU) || e.has(NEGATIVE) != polarity.is_negative() {
            // Gone; or held again (its last release puts it back on the LRU); or held and
            // released since the pop: back on the LRU already, or about to be (a release
            // drops its count before it takes this lock), maybe flipped to the other kind by
            // its holder. Not ours to judge any more.
            continue;
        }
        if e.is_protected() {
            let spend = rule1_cost(t, &lock, &e, Change::Spend, &guard) <= n - taken;
            if spend {
                e.spend_chance();
            }
            t.lru.add(&lock, &e, &t.counters);
            if spend {
                taken += retrim(t, &mut lock, &guard, n - taken);
            }
            continue;
        }
        match take(&mut lock, &e, &guard, n - taken) {
            Some(went) => taken += went,
            None => t.lru.add(&lock, &e, &t.counters),
        }
        drop(guard);
        shard = (shard + 1) % shards;
    }
    (taken, empty >= shards)
}
