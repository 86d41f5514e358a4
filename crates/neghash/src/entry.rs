//! Entries: the key (parent, name), the state bits, the holder count, the caller's value, and
//! the two links that put an entry on its hash chain and on an LRU.
//!
//! # State
//!
//! - `refs`: how many [`Held`](crate::Held) handles exist. 0 means *unused*. [`DEAD`] means an
//!   evictor claimed the entry (compare-exchange from 0, under the bucket lock): it can no
//!   longer be held and is being taken off its lists.
//! - `state` bits:
//!   - `NEGATIVE`: a remembered miss. Flipped by writers under the bucket lock.
//!   - `REFERENCED`: set by a lookup hit (only if clear: a hit writes nothing when it is set);
//!     cleared by the trimming rules and by `shrink` (second chance), under the bucket lock.
//!   - `ON_LRU`: the entry sits on an LRU list of its shard; `ON_NEGATIVE_LRU`: that list is
//!     the shard's negative one. Changed together, under that list's lock (see [`crate::lru`]).
//!   - `UNHASHED`: taken off its chain (evicted or removed). Set under the bucket lock.
//!   - `WORKINGSET`: a negative re-created soon after its predecessor was evicted (see
//!     [`crate::trim`]'s ghosts). Set at creation, cleared with `REFERENCED` when a rule spends
//!     the entry's second chance.
//!   - Above the flags (bits 8 to 31), the **value's sequence count**: odd while
//!     [`Entry::write_value`] is changing the value, bumped twice per write (wrapping). Every
//!     other change of `state` is a masked RMW of flag bits, so the count and the flags never
//!     disturb each other; a 24-bit count wraps after 8,388,608 writes, which a reader would
//!     have to sleep through between its two loads to be fooled (the kernel's dentry count is
//!     32 bits for the same reason).
//!
//! # Reading a value consistently
//!
//! A value whose words a writer changes together (udcache's dentry: an inode pointer and a
//! validity word) is read with [`Entry::read_value`] and written with
//! [`Entry::write_value`], a sequence lock on the entry's own count. Writers of one entry are
//! serialised by the caller (udcache: its name lock); readers take no lock and retry.
//! Orderings: the writer's odd add, a Release fence, the value's stores, then the even add
//! with Release; the reader's Acquire load of the count, the value's loads, an Acquire fence,
//! then the count again. A reader that saw any store of a write sees (through the fence pair)
//! at least that write's odd count on its second load, so it retries; a reader that saw the
//! even count of a write (Acquire, paired with its Release) sees all of that write's stores.
//!
//! An entry is *settled* — a possible victim — when it is unused, hashed and on the LRU.

use std::fmt;

use udcache_rculist::head::TAG_BITS;
use udcache_rculist::{BareLink, HLink};

use crate::home::Home;
use crate::name::{NameBuf, same_name};
use crate::sync::{AtomicU32, Ordering, fence, spin};

pub(crate) const NEGATIVE: u32 = 1;
pub(crate) const REFERENCED: u32 = 2;
pub(crate) const ON_LRU: u32 = 4;
pub(crate) const UNHASHED: u32 = 8;
/// A negative entry re-created for a name whose negative was evicted recently (a refault, found
/// in the bucket's ghost slots): part of a working set, like a page refaulting from a shadow
/// entry. Protects it like `REFERENCED` until a rule spends its chance.
pub(crate) const WORKINGSET: u32 = 16;
/// With `ON_LRU`: the LRU list the entry is on is its shard's negative one (the kind it had
/// when it was put there; `NEGATIVE` may have flipped since, until the entry is refiled).
pub(crate) const ON_NEGATIVE_LRU: u32 = 32;
/// `refs` value of an entry claimed by an evictor.
pub(crate) const DEAD: u32 = u32::MAX;
/// One step of the value's sequence count, which lives above the flag bits of `state`.
const SEQ_ONE: u32 = 1 << 8;
/// The bits of `state` that hold the count.
const SEQ_MASK: u32 = !(SEQ_ONE - 1);

/// Whether an entry stands for a name that exists or for a remembered miss.
///
/// ```
/// use udcache_neghash::{Config, NegHash, Polarity, epoch};
/// let table = NegHash::new(Config::for_entries(16));
/// drop(table.insert(1, b"missing", Polarity::Negative, ()));
/// let guard = epoch::pin();
/// assert_eq!(table.lookup(&guard, 1, b"missing").unwrap().polarity(), Polarity::Negative);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Polarity {
    /// The name exists; the entry's value says what it is.
    Positive,
    /// The name does not exist: a remembered miss (a negative entry).
    Negative,
}

impl Polarity {
    /// Whether this is [`Polarity::Negative`].
    pub fn is_negative(self) -> bool {
        self == Polarity::Negative
    }

    /// The polarity of an entry whose state bits are `state`.
    pub(crate) fn of_state(state: u32) -> Self {
        if state & NEGATIVE != 0 { Polarity::Negative } else { Polarity::Positive }
    }
}

/// The tag bit of an entry with key word `key` in its chain's head word (see `table.rs`,
/// Tags): one of `TAG_BITS`, chosen by the low 32 bits of its hash (the key word's high
/// half), mapped onto `0..TAG_BITS` by a multiply and a shift (fairly, like a modulo, without
/// the division: it is on every lookup's chain of dependent steps).
pub(crate) fn tag_bit(key: u64) -> u16 {
    1 << (((key >> 32) * u64::from(TAG_BITS)) >> 32)
}

/// One cached name: positive (it exists, `value` says what it is) or negative (it does not).
///
/// `repr(C)` keeps what a lookup touches together at the front — the chain link it follows,
/// the key word, parent and state it compares and marks, the value a hit reads, then the name
/// (a short name ends early in its 32 bytes) — and what only writers and holders touch (the
/// LRU link, the count of references and the pool the entry came from) behind it.
#[repr(C)]
pub struct Entry<V> {
    pub(crate) chain: HLink,
    /// Hash (high 32 bits) and name length (low 32 bits): compared as one word before bytes.
    pub(crate) key: u64,
    parent: u64,
    pub(crate) state: AtomicU32,
    pub(crate) refs: AtomicU32,
    value: V,
    name: NameBuf,
    pub(crate) lru: BareLink,
    /// How many [`EntryRef`](crate::pooled::EntryRef)s exist (see `pooled.rs`); only holders touch it. 32 bits, like an
    /// `Arc`'s on a 32-bit target, and guarded the same way: handles may be leaked
    /// (`mem::forget` of a `Held`), so a reference taken past `i32::MAX` aborts rather than wrap.
    pub(crate) strong: AtomicU32,
    /// The number of the pool the entry goes back to (see `home.rs`).
    pub(crate) home: Home,
}

// Links 24 bytes, key and parent 16, state, counts and home 16, the name 32: 88 beside the
// value.
#[cfg(all(target_pointer_width = "64", not(loom)))]
const _: () = assert!(size_of::<Entry<()>>() == 88, "an entry grew");

impl<V> Entry<V> {
    pub(crate) fn new(
        (key, parent, name): (u64, u64, &[u8]),
        state: u32,
        value: V,
        home: Home,
    ) -> Self {
        Entry {
            strong: AtomicU32::new(1),
            home,
            chain: HLink::new(),
            lru: BareLink::new(),
            key,
            parent,
            name: NameBuf::new(name),
            refs: AtomicU32::new(1),
            state: AtomicU32::new(state),
            value,
        }
    }

    /// The parent id this entry is keyed under.
    pub fn parent(&self) -> u64 {
        self.parent
    }

    /// The name this entry is keyed under.
    pub fn name(&self) -> &[u8] {
        // SAFETY: the buffer was made with the length kept in the low half of `key`.
        unsafe { self.name.get(self.key as u32 as usize) }
    }

    /// The caller's value.
    pub fn value(&self) -> &V {
        &self.value
    }

    /// The value as one snapshot of what [`write_value`](Self::write_value) writes: `read`
    /// runs again until no write overlapped it (a sequence count in the entry's state word,
    /// bumped to odd before a write and to even after it). It may
    /// run more than once and while a write is half done, so it should only load: `V`'s
    /// changing parts are atomics, and what `read` returns from a torn pass is dropped.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    /// use udcache_neghash::{Config, NegHash, Polarity, epoch};
    /// // Two words a writer keeps equal.
    /// let table = NegHash::new(Config::for_entries(16));
    /// drop(table.insert(1, b"pair", Polarity::Positive, (AtomicU64::new(0), AtomicU64::new(0))));
    /// let entry = table.get(1, b"pair").unwrap();
    /// entry.write_value(|(a, b)| {
    ///     a.store(7, Relaxed);
    ///     b.store(7, Relaxed);
    /// });
    /// let guard = epoch::pin();
    /// let seen = table.lookup(&guard, 1, b"pair").unwrap();
    /// assert_eq!(seen.read_value(|(a, b)| (a.load(Relaxed), b.load(Relaxed))), (7, 7));
    /// ```
    pub fn read_value<'a, R>(&'a self, read: impl Fn(&'a V) -> R) -> R {
        loop {
            // Acquire: pairs with the Release of `write_value`'s closing add, so a pass that
            // starts after a write ended sees all of it.
            let before = self.state.load(Ordering::Acquire) & SEQ_MASK;
            if before & SEQ_ONE == 0 {
                let seen = read(&self.value);
                // Acquire fence: keeps `read`'s loads before the check; pairs with the Release
                // fence after `write_value`'s opening add (a pass that saw any store of a write
                // sees that write's odd count, or a later one, below).
                fence(Ordering::Acquire);
                if self.state.load(Ordering::Relaxed) & SEQ_MASK == before {
                    return seen;
                }
            }
            spin();
        }
    }

    /// Changes the value so that [`read_value`](Self::read_value) never returns it half
    /// changed. The caller serialises the writers of one entry (a lock of its own): two writes
    /// at once would let a reader pass between them. Plain reads of the value (without
    /// `read_value`) see each store as it lands.
    pub fn write_value<R>(&self, write: impl FnOnce(&V) -> R) -> R {
        // Relaxed: the fence below orders the odd count before the value's stores.
        let was = self.state.fetch_add(SEQ_ONE, Ordering::Relaxed);
        debug_assert_eq!(was & SEQ_ONE, 0, "write_value: two writers of one entry at once");
        // Release fence: pairs with the Acquire fence of `read_value`.
        fence(Ordering::Release);
        let done = write(&self.value);
        // Release: pairs with the Acquire load that opens a `read_value` pass.
        self.state.fetch_add(SEQ_ONE, Ordering::Release);
        done
    }

    /// Whether this is a negative entry (a remembered miss). A reader may see it change when a
    /// writer instantiates or unlinks the name.
    pub fn is_negative(&self) -> bool {
        self.polarity().is_negative()
    }

    /// The entry's polarity (see [`is_negative`](Self::is_negative)).
    pub fn polarity(&self) -> Polarity {
        // Acquire: pairs with the Release RMWs that flip NEGATIVE, so a reader that sees a
        // positive entry also sees what the writer stored before instantiating it.
        Polarity::of_state(self.state.load(Ordering::Acquire))
    }

    /// Whether a lookup hit this entry since the trimming rules last cleared the bit.
    pub fn is_referenced(&self) -> bool {
        self.state.load(Ordering::Relaxed) & REFERENCED != 0
    }

    /// Whether the entry is still on its hash chain (not evicted or removed).
    pub fn is_hashed(&self) -> bool {
        // Acquire: pairs with the Release of `mark_unhashed`: a caller that sees
        // the entry gone also sees what its remover did before it.
        self.state.load(Ordering::Acquire) & UNHASHED == 0
    }

    /// Whether the entry is keyed `(parent, name)` (`key`: that key's word). Inlined into the
    /// chain walk: as a call, the walk's loads would wait for the call and the register saves
    /// around it.
    #[inline]
    pub(crate) fn matches(&self, key: u64, parent: u64, name: &[u8]) -> bool {
        self.key == key && self.parent == parent && same_name(self.name(), name)
    }

    /// A lookup hit: set the referenced bit, writing nothing if it is already set.
    pub(crate) fn touch(&self) {
        // Relaxed: the bit is a hint to the trimming rules, which read it under the bucket lock
        // and tolerate a stale value (the worst case is one eviction or one reprieve too many).
        if self.state.load(Ordering::Relaxed) & REFERENCED == 0 {
            self.state.fetch_or(REFERENCED, Ordering::Relaxed);
        }
    }

    /// Referenced, or in the working set: rules give it a second chance.
    pub(crate) fn is_protected(&self) -> bool {
        self.state.load(Ordering::Relaxed) & (REFERENCED | WORKINGSET) != 0
    }

    /// Clears `REFERENCED` (under its bucket lock).
    pub(crate) fn clear_referenced(&self) {
        self.state.fetch_and(!REFERENCED, Ordering::Relaxed);
    }

    /// Marks the entry unhashed (under its bucket lock).
    pub(crate) fn mark_unhashed(&self) {
        // Release: pairs with the Acquire in `is_hashed`.
        self.state.fetch_or(UNHASHED, Ordering::Release);
    }

    /// Spends the entry's second chance (under its bucket lock).
    pub(crate) fn spend_chance(&self) {
        self.state.fetch_and(!(REFERENCED | WORKINGSET), Ordering::Relaxed);
    }

    pub(crate) fn has(&self, bits: u32) -> bool {
        self.state.load(Ordering::Relaxed) & bits == bits
    }

    /// Unused, hashed, on the LRU: an entry the trimming rules and `shrink` may evict.
    pub(crate) fn is_settled(&self) -> bool {
        self.refs.load(Ordering::Relaxed) == 0
            && self.state.load(Ordering::Relaxed) & (ON_LRU | UNHASHED) == ON_LRU
    }

    /// Claims an unused entry for eviction; fails if someone holds it.
    pub(crate) fn claim(&self) -> bool {
        // Acquire: pairs with the Release decrement in `release`, so the evictor sees the last
        // holder's writes before the entry goes away.
        self.refs.compare_exchange(0, DEAD, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Takes a holder reference unless the entry was claimed; returns whether it was unused.
    pub(crate) fn try_hold(&self) -> Option<bool> {
        let mut cur = self.refs.load(Ordering::Relaxed);
        loop {
            if cur == DEAD || cur == DEAD - 1 {
                return None;
            }
            // Relaxed: holding grants no access beyond what the guard that found the entry
            // already gives; the claim/release pair orders the entry's end of life.
            match self.refs.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(cur == 0),
                Err(now) => cur = now,
            }
        }
    }
}

impl<V> Drop for Entry<V> {
    fn drop(&mut self) {
        let len = self.key as u32 as usize;
        // SAFETY: the buffer was made with this length; this is its only drop.
        unsafe { self.name.drop_with(len) };
    }
}

impl<V: fmt::Debug> fmt::Debug for Entry<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("parent", &self.parent)
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("negative", &self.is_negative())
            .field("refs", &self.refs.load(Ordering::Relaxed))
            .field("value", &self.value)
            .finish()
    }
}
