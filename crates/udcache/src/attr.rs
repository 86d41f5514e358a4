//! Cached attributes: one consistent snapshot, read without locks while a writer updates it.
//!
//! # Rules
//!
//! - The words are a `SeqWords` (see `seq.rs` for the sequence-count protocol): a
//!   reader copies them without locks and retries if a writer was in the middle; every word is
//!   atomic, and [`Attr`] is decoded only from a validated copy.
//! - Writers publish; nothing is retired (the words live as long as the inode).
//!
//! # Why not the `seqlock` crate
//!
//! `seqlock::SeqLock<T: Copy>` reads `T` with a volatile read of memory a writer may be
//! writing at the same moment. In Rust's memory model that is a data race, undefined behaviour
//! even if the value is discarded afterwards (its open soundness issue says as much), and a
//! torn `T` may not even be a valid value of its type. Here every word is atomic, so a racing
//! read is defined (it returns some value each word held), and [`Attr`] is decoded from plain
//! integers only after validation, so no invalid value ever exists. This is the
//! fence-based sequence lock of H.-J. Boehm, "Can seqlocks get along with programming language
//! memory models?" (2012); it costs the same loads as the crate's version.

use crate::seq::SeqWords;

/// The stat fields a filesystem caches. Times are (seconds, nanoseconds) since the epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    /// Size in bytes.
    pub size: u64,
    /// 512-byte blocks allocated.
    pub blocks: u64,
    /// Last access.
    pub atime: (i64, u32),
    /// Last modification.
    pub mtime: (i64, u32),
    /// Last status change.
    pub ctime: (i64, u32),
    /// Type and permission bits.
    pub mode: u32,
    /// Hard links.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device number, for device files.
    pub rdev: u32,
    /// Preferred I/O block size.
    pub blksize: u32,
}

/// Ten attribute words, then the expiry word.
pub(crate) const WORDS: usize = 11;

impl Attr {
    fn encode(&self, valid_until: u64) -> [u64; WORDS] {
        let pair = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
        [
            self.size,
            self.blocks,
            self.atime.0 as u64,
            self.mtime.0 as u64,
            self.ctime.0 as u64,
            pair(self.atime.1, self.mtime.1),
            pair(self.ctime.1, self.mode),
            pair(self.nlink, self.uid),
            pair(self.gid, self.rdev),
            u64::from(self.blksize),
            valid_until,
        ]
    }

    /// Inverse of `encode`: `(attributes, valid_until)`.
    fn decode(w: &[u64; WORDS]) -> (Attr, u64) {
        let lo = |x: u64| x as u32;
        let hi = |x: u64| (x >> 32) as u32;
        let attr = Attr {
            size: w[0],
            blocks: w[1],
            atime: (w[2] as i64, lo(w[5])),
            mtime: (w[3] as i64, hi(w[5])),
            ctime: (w[4] as i64, lo(w[6])),
            mode: hi(w[6]),
            nlink: lo(w[7]),
            uid: hi(w[7]),
            gid: lo(w[8]),
            rdev: hi(w[8]),
            blksize: lo(w[9]),
        };
        (attr, w[10])
    }
}

/// An inode's attributes under a sequence count. `valid_until` is in the cache's clock
/// (nanoseconds since the cache was made, `Ticks::elapsed_ns`); 0 means never set, `u64::MAX`
/// never expires.
pub(crate) struct AttrCell(SeqWords<WORDS>);

impl AttrCell {
    pub(crate) fn new() -> Self {
        AttrCell(SeqWords::new())
    }

    /// A consistent snapshot `(attributes, valid_until)`, without locks or shared writes.
    pub(crate) fn read(&self) -> (Attr, u64) {
        Attr::decode(&self.0.read())
    }

    /// Replaces the snapshot; returns the attributes it replaced. Writers exclude each other
    /// through the sequence count.
    pub(crate) fn write(&self, attr: &Attr, valid_until: u64) -> Attr {
        Attr::decode(&self.0.write(attr.encode(valid_until))).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trips_every_field() {
        let a = Attr {
            size: u64::MAX - 1,
            blocks: 7,
            atime: (-5, 999_999_999),
            mtime: (i64::MAX, 1),
            ctime: (i64::MIN, 2),
            mode: 0o100644,
            nlink: 3,
            uid: u32::MAX,
            gid: 4,
            rdev: 5,
            blksize: 4096,
        };
        assert_eq!(Attr::decode(&a.encode(42)), (a, 42));
        let c = AttrCell::new();
        assert_eq!(c.read(), (Attr::default(), 0));
        c.write(&a, 9);
        assert_eq!(c.read(), (a, 9));
    }

    #[test]
    fn readers_never_see_a_torn_snapshot() {
        let c = AttrCell::new();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 1..20_000u64 {
                    let a = Attr { size: i, blocks: i, nlink: i as u32, ..Attr::default() };
                    c.write(&a, i);
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (a, until) = c.read();
                assert!(a.size == a.blocks && a.size == u64::from(a.nlink) && a.size == until);
            }
        });
    }
}
