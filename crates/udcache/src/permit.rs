//! Access checks of the cache: the lockless check, the locked lookup and fill, and
//! revocation, on each inode's access results (rules in `access.rs`).

use udcache_neghash::epoch::{self, Guard};

use crate::access::{AccessStamp, Cred, Granted, Mask, Permission};
use crate::cache::Dcache;
use crate::error::Error;
use crate::stats::Event;

/// Access checks: the cached permission results of each inode and credential.
impl Dcache {
    /// The lockless access check: whether `cred` has every right of `mask` on `ino`, if the
    /// inode's most recent access result answers it ([`Permission::Unknown`], also for an
    /// inode not cached: take [`Dcache::access`]). No lock, no shared write but a statistics
    /// stripe. [`Mask::NONE`] is [`Permission::Allowed`] for a cached inode, as in
    /// [`access`](Self::access).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use udcache::{Config, Cred, Dcache, Errno, Filesystem, InodeSpec, Mask, Permission, ROOT_INO, epoch};
    /// struct ReadOnly;
    /// impl Filesystem for ReadOnly {
    ///     fn lookup(&self, _: u64, _: &[u8]) -> Result<Option<InodeSpec>, Errno> { Ok(None) }
    ///     fn access(&self, _ino: u64, _cred: &Cred) -> Result<Mask, Errno> {
    ///         Ok(Mask::READ | Mask::EXEC)
    ///     }
    /// }
    /// let cache = Dcache::new(Config::for_entries(64).with_filesystem(Arc::new(ReadOnly)));
    /// let me = Cred::new(1000, 1000, &[]);
    /// let guard = epoch::pin();
    /// assert_eq!(cache.may_access(&guard, ROOT_INO, &me, Mask::EXEC), Permission::Unknown);
    /// drop(guard);
    /// assert_eq!(cache.access(ROOT_INO, &me, Mask::WRITE), Ok(false)); // asks
    /// let guard = epoch::pin();
    /// assert_eq!(cache.may_access(&guard, ROOT_INO, &me, Mask::EXEC), Permission::Allowed);
    /// ```
    pub fn may_access(&self, guard: &Guard, ino: u64, cred: &Cred, mask: Mask) -> Permission {
        let Some(inode) = self.inode(guard, ino) else { return Permission::Unknown };
        if mask == Mask::NONE {
            return Permission::Allowed;
        }
        let answer = inode.access.check(cred, mask, || self.ticks.now());
        if answer.is_some() {
            self.events.bump(Event::AccessHit);
        }
        Permission::of(answer)
    }

    /// Whether `cred` has every right of `mask` on `ino`: the most recent result, then the
    /// inode's other results (under its lock), then the filesystem's
    /// [`access`](crate::Filesystem::access) (no lock held, no guard pinned), whose answer is cached
    /// for [`Timeouts::access`](crate::Timeouts::access).
    ///
    /// [`Mask::NONE`] asks only that `ino` is cached (as `access(2)`'s `F_OK` asks that the
    /// file exists): `true`, with no filesystem call.
    ///
    /// Errors: [`Error::UnknownInode`]; the filesystem's errno ([`Error::Backend`], not
    /// cached); [`Error::NoFilesystem`] if it must ask and the cache has none.
    pub fn access(&self, ino: u64, cred: &Cred, mask: Mask) -> Result<bool, Error> {
        match self.cached_access(ino, cred, mask)? {
            Permission::Allowed => return Ok(true),
            Permission::Denied => return Ok(false),
            Permission::Unknown => {}
        }
        let fs = self.filesystem()?;
        let stamp = self.access_stamp(ino)?;
        self.events.bump(Event::AccessCall);
        let allowed = fs.access(ino, cred).map_err(Error::Backend)?;
        self.store_access(ino, cred, allowed, stamp)?;
        Ok(allowed.contains(mask))
    }

    /// The cached answer (the most recent result, then the inode's others, under its lock),
    /// without asking anyone: [`Permission::Unknown`] if no trusted result for `cred` is
    /// cached.
    ///
    /// [`Mask::NONE`] is [`Permission::Allowed`] for a cached inode, as in
    /// [`access`](Self::access).
    ///
    /// Errors: [`Error::UnknownInode`].
    pub fn cached_access(&self, ino: u64, cred: &Cred, mask: Mask) -> Result<Permission, Error> {
        let inode = self.inode_arc(ino).ok_or(Error::UnknownInode(ino))?;
        if mask == Mask::NONE {
            return Ok(Permission::Allowed);
        }
        let cache = &inode.access;
        let answer = cache
            .check(cred, mask, || self.ticks.now())
            .or_else(|| cache.lookup(cred, &self.ticks).map(|allowed| allowed.contains(mask)));
        if answer.is_some() {
            self.events.bump(Event::AccessHit);
        }
        Ok(Permission::of(answer))
    }

    /// Marks the state of `ino`'s access results before its permissions are computed by the
    /// caller (instead of [`Filesystem::access`](crate::Filesystem::access)): [`Dcache::store_access`] files the answer
    /// only if no revocation (and no other file under the number) came between.
    ///
    /// Errors: [`Error::UnknownInode`].
    pub fn access_stamp(&self, ino: u64) -> Result<AccessStamp, Error> {
        let guard = epoch::pin();
        Ok(AccessStamp::of(self.inode(&guard, ino).ok_or(Error::UnknownInode(ino))?))
    }

    /// Files the rights `allowed` of `cred` on `ino`, computed after `stamp` was taken, for
    /// [`Timeouts::access`](crate::Timeouts::access); they become the most recent result.
    /// Returns whether they were filed: not if a revocation, or a new file under the number,
    /// came after the stamp (the answer may be out of date: compute it again).
    ///
    /// Errors: [`Error::UnknownInode`].
    ///
    /// ```
    /// use udcache::{Config, Cred, Dcache, Mask, Permission, ROOT_INO, epoch};
    /// let cache = Dcache::new(Config::for_entries(16));
    /// let me = Cred::new(1000, 1000, &[]);
    /// assert_eq!(cache.cached_access(ROOT_INO, &me, Mask::READ), Ok(Permission::Unknown));
    /// let stamp = cache.access_stamp(ROOT_INO).unwrap();
    /// let rights = Mask::READ | Mask::EXEC; // computed by the caller from its own permissions
    /// assert_eq!(cache.store_access(ROOT_INO, &me, rights, stamp), Ok(true));
    /// assert_eq!(cache.may_access(&epoch::pin(), ROOT_INO, &me, Mask::READ), Permission::Allowed);
    /// cache.acl_changed(ROOT_INO).unwrap();
    /// assert_eq!(cache.store_access(ROOT_INO, &me, rights, stamp), Ok(false)); // out of date
    /// ```
    pub fn store_access(
        &self,
        ino: u64,
        cred: &Cred,
        allowed: Mask,
        stamp: AccessStamp,
    ) -> Result<bool, Error> {
        let inode = self.inode_arc(ino).ok_or(Error::UnknownInode(ino))?;
        if AccessStamp::of(&inode).object != stamp.object {
            return Ok(false);
        }
        let expiry = self.ticks.expiry(self.timeouts.access);
        let generation = stamp.generation;
        Ok(inode.access.store(Granted {
            cred: *cred,
            allowed: Mask(allowed.0 & 7),
            expiry,
            generation,
        }))
    }

    /// The filesystem says `ino`'s permissions changed in a way the cached attributes do not
    /// show (an ACL): every cached access result of it is forgotten. Mode, owner and group
    /// changes through [`Dcache::setattr`](crate::Dcache::setattr) do this by themselves.
    ///
    /// Errors: [`Error::UnknownInode`].
    pub fn acl_changed(&self, ino: u64) -> Result<(), Error> {
        let guard = epoch::pin();
        self.inode(&guard, ino).ok_or(Error::UnknownInode(ino))?.access.revoke();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw stamp round-trips; a forged one is refused unless it matches the inode's current
    /// state, and then (the worst it can do) files a result computed before a revocation.
    #[test]
    fn forged_raw_stamps_are_refused_or_stale_never_worse() {
        use crate::{Config, ROOT_INO};
        let cache = Dcache::new(Config::for_entries(16));
        let me = Cred::new(1000, 1000, &[]);
        let stamp = cache.access_stamp(ROOT_INO).unwrap();
        assert_eq!(AccessStamp::from_raw(stamp.to_raw()), stamp);
        for forged in [0, u64::MAX, stamp.to_raw() ^ 1 << 40, stamp.to_raw() + 1] {
            let forged = AccessStamp::from_raw(forged);
            assert_eq!(cache.store_access(ROOT_INO, &me, Mask::ALL, forged), Ok(false));
        }
        assert_eq!(
            cache.cached_access(ROOT_INO, &me, Mask::READ),
            Ok(Permission::Unknown),
            "nothing filed"
        );
        cache.acl_changed(ROOT_INO).unwrap();
        // The generation a stamp would have now: accepted, though computed before the change.
        let next = AccessStamp::from_raw(stamp.to_raw() + 1);
        assert_eq!(next, cache.access_stamp(ROOT_INO).unwrap());
        assert_eq!(cache.store_access(ROOT_INO, &me, Mask::READ, next), Ok(true));
        assert_eq!(cache.cached_access(ROOT_INO, &me, Mask::READ), Ok(Permission::Allowed));
    }
}
