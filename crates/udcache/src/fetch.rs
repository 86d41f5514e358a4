//! Misses: asking the filesystem, once per name however many threads miss it together.
//!
//! # Rules
//!
//! - One mutex guards the map of calls in flight, keyed `(parent, name)`. A thread that misses
//!   looks the name up in the cache again *under* that mutex: a caller files its answer in the
//!   cache before it takes its key off the map, so a name is either cached, or in flight, or
//!   neither (and this thread becomes its caller).
//! - The filesystem is called with no lock held and no epoch guard pinned (a slow call must not
//!   hold back grace periods).
//! - Waiters sleep on the call's condition variable and take the caller's answer as their own
//!   (they do not look again: the negative the caller filed may already have been evicted by
//!   the bounding rules). Each waiter is counted in
//!   [`Stats::coalesced_misses`](crate::Stats::coalesced_misses).
//! - Errors are not cached: the caller and its waiters all get the errno; the next miss calls
//!   again.
//! - Lock order: the in-flight mutex, then a call's mutex; neither is held while any cache lock
//!   is taken (filing the answer happens before the map lock).

use std::collections::HashMap;
use std::sync::Arc;

use udcache_neghash::epoch;
use udcache_readdir::{Fill, FillError};

use crate::cache::{Dcache, Lookup};
use crate::error::Error;
use crate::inode::InodeSpec;
use crate::name::validate_name;
use crate::stats::Events;
use crate::sync::{Condvar, Mutex, lock};

/// The filesystem behind the cache: asked on a miss, and for directory listings.
pub trait Filesystem: Send + Sync {
    /// Looks `name` up in directory `parent`: `Ok(Some(inode))` if it exists, `Ok(None)` if it
    /// does not (the cache remembers that as a negative dentry), `Err(errno)` on failure
    /// (not cached).
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, i32>;

    /// Lists directory `dir`: up to `max` entries after `cookie` (`0`: from the start), as
    /// [`udcache_readdir::Backend::fill`] describes. Called by
    /// [`Dcache::readdir`](crate::Dcache::readdir) with no cache lock held. The default
    /// refuses with `ENOSYS`.
    fn readdir(&self, dir: u64, cookie: u64, max: usize) -> Result<Fill, FillError> {
        let _ = (dir, cookie, max);
        Err(FillError::Io(libc::ENOSYS))
    }
}

/// What [`Dcache::resolve`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The name exists: this inode (one lookup of it has been counted).
    Found(InodeSpec),
    /// The name does not exist.
    Negative,
}

type Answer = Result<Resolved, Error>;

/// One filesystem call in flight: its answer, once there is one.
struct Call {
    answer: Mutex<Option<Answer>>,
    done: Condvar,
}

/// A name: `(parent, name bytes)`.
type Key = (u64, Box<[u8]>);

/// The calls in flight.
pub(crate) struct Inflight {
    calls: Mutex<HashMap<Key, Arc<Call>>>,
}

impl Inflight {
    pub(crate) fn new() -> Self {
        Inflight { calls: Mutex::new(HashMap::new()) }
    }
}

/// Who handles a miss.
enum Role {
    Cached(Resolved),
    Caller(Arc<Call>),
    Waiter(Arc<Call>),
}

impl Dcache {
    /// The FUSE lookup handler: the cached answer, or the filesystem's (filed in the cache),
    /// with concurrent misses of one name coalesced into one `fs.lookup` call. Every
    /// [`Resolved::Found`] counts one lookup of its inode (the caller replies to the kernel
    /// with it; balance it with [`forget`](Self::forget)).
    ///
    /// Errors: a bad name; the filesystem's errno ([`Error::Backend`]), or an error filing its
    /// answer (e.g. a parent that is not a cached directory).
    ///
    /// ```
    /// use udcache::{Config, Dcache, FileType, Filesystem, InodeSpec, Resolved, ROOT_INO};
    /// struct OneFile;
    /// impl Filesystem for OneFile {
    ///     fn lookup(&self, _parent: u64, name: &[u8]) -> Result<Option<InodeSpec>, i32> {
    ///         Ok((name == b"hello").then_some(InodeSpec { ino: 5, kind: FileType::Regular, fs_data: 0 }))
    ///     }
    /// }
    /// let cache = Dcache::new(Config::for_entries(64));
    /// assert!(matches!(cache.resolve(&OneFile, ROOT_INO, b"hello"), Ok(Resolved::Found(s)) if s.ino == 5));
    /// assert_eq!(cache.resolve(&OneFile, ROOT_INO, b"other"), Ok(Resolved::Negative));
    /// assert_eq!(cache.stats().backend_lookups, 2);
    /// cache.resolve(&OneFile, ROOT_INO, b"hello").unwrap(); // cached now
    /// assert_eq!(cache.stats().backend_lookups, 2);
    /// ```
    pub fn resolve(&self, fs: &dyn Filesystem, parent: u64, name: &[u8]) -> Answer {
        validate_name(name)?;
        loop {
            let answer = match self.role(parent, name) {
                Role::Cached(r) => Ok(r),
                Role::Caller(call) => return self.call(fs, parent, name, &call),
                Role::Waiter(call) => {
                    Events::bump(&self.events.coalesced_misses);
                    let mut answer = lock(&call.answer);
                    while answer.is_none() {
                        answer = call.done.wait(answer).unwrap_or_else(|e| e.into_inner());
                    }
                    answer.clone().expect("woken with an answer")
                }
            };
            match answer {
                Ok(Resolved::Found(spec)) => match self.count_lookup(spec.ino) {
                    Ok(()) => return Ok(Resolved::Found(spec)),
                    // Forgotten in between: resolve again.
                    Err(Error::UnknownInode(_)) => continue,
                    Err(e) => return Err(e),
                },
                other => return other,
            }
        }
    }

    fn cached(&self, parent: u64, name: &[u8]) -> Option<Resolved> {
        let guard = epoch::pin();
        match self.step(&guard, parent, name) {
            Lookup::Hit(inode) => Some(Resolved::Found(inode.spec())),
            Lookup::Negative => Some(Resolved::Negative),
            Lookup::Miss => None,
        }
    }

    fn role(&self, parent: u64, name: &[u8]) -> Role {
        if let Some(r) = self.cached(parent, name) {
            return Role::Cached(r);
        }
        if self.listed_absent(parent, name) {
            return Role::Cached(Resolved::Negative);
        }
        let mut calls = lock(&self.inflight.calls);
        if let Some(call) = calls.get(&(parent, Box::from(name))) {
            return Role::Waiter(call.clone());
        }
        // Filed before its key left the map (see the rules): look again under the map lock.
        if let Some(r) = self.cached(parent, name) {
            return Role::Cached(r);
        }
        let call = Arc::new(Call { answer: Mutex::new(None), done: Condvar::new() });
        calls.insert((parent, name.into()), call.clone());
        Role::Caller(call)
    }

    /// Calls the filesystem, files the answer, wakes the waiters.
    fn call(&self, fs: &dyn Filesystem, parent: u64, name: &[u8], call: &Call) -> Answer {
        Events::bump(&self.events.backend_lookups);
        let answer = match fs.lookup(parent, name) {
            Err(errno) => Err(Error::Backend(errno)),
            Ok(None) => self.add_negative(parent, name).map(|()| Resolved::Negative),
            // Added (counting one lookup, ours), or added by a racing `add` meanwhile.
            Ok(Some(spec)) => match self.add(parent, name, spec) {
                Ok(()) => Ok(Resolved::Found(spec)),
                Err(Error::Exists) => self.count_lookup(spec.ino).map(|()| Resolved::Found(spec)),
                Err(e) => Err(e),
            },
        };
        lock(&self.inflight.calls).remove(&(parent, Box::from(name)));
        *lock(&call.answer) = Some(answer.clone());
        call.done.notify_all();
        answer
    }
}
