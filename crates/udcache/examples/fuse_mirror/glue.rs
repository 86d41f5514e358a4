//! The glue between FUSE (the `fuser` crate) and udcache: a read-only mirror of a [`Dir`].
//!
//! # Rules
//!
//! - Every udcache call is in [`Cache`]'s methods; the FUSE operations ([`Mirror`]) only
//!   translate between fuser's types and those, and read file data and link targets straight
//!   from the backing store (udcache caches names and attributes, not contents).
//! - One time to live (`ttl`, given to [`Cache::new`]) for names, misses and attributes, in
//!   the cache and in the kernel, so that the kernel asks again about as often as the cache
//!   asks the backing store.
//! - A FUSE lookup resolves the name in the cache (asking the backing store on a miss, or when
//!   the cached answer is older than the ttl) and counts one lookup of the inode; FUSE's
//!   forget gives them back, and the last one takes the inode out of the cache and the
//!   backing store's path table. A name that does not exist is answered `ENOENT` from a
//!   negative dentry for up to the ttl.
//! - Attributes are udcache's copy while it is younger than the ttl, else read again.
//!   Permissions are checked by the kernel on those attributes (`default_permissions`), so
//!   udcache's access cache is not used.
//! - One session thread: a forget and a lookup of one inode never overlap, which is what lets
//!   [`Cache::forget`] drop a path once the cache no longer holds its inode.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Generation, INodeNo, LockOwner, MountOption, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEntry, Request,
};
use udcache::readdir::Batch;
use udcache::{Attr, Config, Dcache, Resolved, Stats, Timeouts, epoch};

use crate::backing::Dir;

/// Directory entries asked of the cache at a time.
const BATCH: usize = 64;

/// The dentry cache in front of the backing store: every udcache call of the mirror.
pub struct Cache {
    dcache: Dcache,
    dir: Arc<Dir>,
    ttl: Duration,
    /// FUSE lookups answered.
    lookups: AtomicU64,
}

impl Cache {
    /// A cache in front of `dir`, trusting what it learns for `ttl`.
    pub fn new(dir: Dir, ttl: Duration) -> Cache {
        let timeouts = Timeouts { entry: ttl, negative: ttl, ..Timeouts::FOREVER };
        let dir = Arc::new(dir);
        let config = Config::for_entries(1 << 16).with_timeouts(timeouts);
        let dcache = Dcache::new(config.with_filesystem(dir.clone()));
        Cache { dcache, dir, ttl, lookups: AtomicU64::new(0) }
    }

    /// `name` in directory `parent`: its inode number and attributes, with one lookup of it
    /// counted; `ENOENT` if it does not exist.
    fn lookup(&self, parent: u64, name: &[u8]) -> Result<(u64, Attr), i32> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let ino = match self.dcache.resolve(parent, name) {
            Ok(Resolved::Found(spec)) => spec.ino,
            Ok(Resolved::Negative) => return Err(libc::ENOENT),
            Err(e) => return Err(e.errno()),
        };
        self.attr(ino).inspect_err(|_| self.forget(ino, 1)).map(|attr| (ino, attr))
    }

    /// The attributes of `ino`: the cached ones while fresh, else the backing file's.
    fn attr(&self, ino: u64) -> Result<Attr, i32> {
        if let Some(attr) = self.dcache.getattr(ino).map_err(|e| e.errno())? {
            return Ok(attr);
        }
        let attr = self.dir.attr(ino)?;
        self.dcache.setattr(ino, &attr, self.ttl).map_err(|e| e.errno())?;
        Ok(attr)
    }

    /// Up to [`BATCH`] entries of directory `ino` after `cookie`.
    fn list(&self, ino: u64, cookie: u64) -> Result<Batch, i32> {
        self.dcache.readdir(ino, cookie, BATCH).map_err(|e| e.errno())
    }

    /// The kernel dropped `n` lookups of `ino`.
    fn forget(&self, ino: u64, n: u64) {
        // An error is a forget of the root or of more than was looked up: nothing to undo.
        let _ = self.dcache.forget(ino, n);
        if self.dcache.inode(&epoch::pin(), ino).is_none() {
            self.dir.forget(ino);
        }
    }

    /// The FUSE lookups answered, and the cache's figures.
    pub fn stats(&self) -> (u64, Stats) {
        (self.lookups.load(Ordering::Relaxed), self.dcache.stats())
    }
}

/// The mirror as fuser serves it.
struct Mirror(Arc<Cache>);

/// fuser's error for an errno value.
fn error(errno: i32) -> Errno {
    Errno::from_i32(errno)
}

/// fuser's file type for a `d_type` (the mode's type bits shifted down).
fn kind(dtype: u32) -> FileType {
    match dtype << 12 {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        libc::S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

/// fuser's attributes of inode `ino`.
fn file_attr(ino: u64, attr: &Attr) -> FileAttr {
    let time = |(secs, nsecs): (i64, u32)| {
        let whole = Duration::from_secs(secs.unsigned_abs());
        let epoch = if secs < 0 { UNIX_EPOCH - whole } else { UNIX_EPOCH + whole };
        epoch + Duration::from_nanos(nsecs.into())
    };
    let ctime = time(attr.ctime);
    FileAttr {
        ino: INodeNo(ino),
        size: attr.size,
        blocks: attr.blocks,
        atime: time(attr.atime),
        mtime: time(attr.mtime),
        ctime,
        crtime: ctime,
        kind: kind(attr.mode >> 12),
        perm: (attr.mode & 0o7777) as u16,
        nlink: attr.nlink,
        uid: attr.uid,
        gid: attr.gid,
        rdev: attr.rdev,
        blksize: attr.blksize,
        flags: 0,
    }
}

impl fuser::Filesystem for Mirror {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.0.lookup(parent.0, name.as_bytes()) {
            Ok((ino, attr)) => reply.entry(&self.0.ttl, &file_attr(ino, &attr), Generation(0)),
            Err(e) => reply.error(error(e)),
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.0.forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.0.attr(ino.0) {
            Ok(attr) => reply.attr(&self.0.ttl, &file_attr(ino.0, &attr)),
            Err(e) => reply.error(error(e)),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.0.dir.readlink(ino.0) {
            Ok(target) => reply.data(&target),
            Err(e) => reply.error(error(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.0.dir.read(ino.0, offset, size) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(error(e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let mut cookie = offset;
        loop {
            let batch = match self.0.list(ino.0, cookie) {
                Ok(batch) => batch,
                Err(e) => return reply.error(error(e)),
            };
            for entry in &batch.entries {
                let name = OsStr::from_bytes(&entry.name);
                // Full: the kernel asks again from the last cookie it took.
                if reply.add(INodeNo(entry.ino), entry.cookie, kind(entry.dtype.raw().into()), name)
                {
                    return reply.ok();
                }
                cookie = entry.cookie;
            }
            if batch.eof {
                return reply.ok();
            }
        }
    }
}

/// Serves `cache` read-only at `mountpoint` until it is unmounted.
pub fn serve(cache: Arc<Cache>, mountpoint: &Path) -> io::Result<()> {
    let mut config = fuser::Config::default();
    config.n_threads = Some(1);
    config.mount_options = vec![
        MountOption::RO,
        MountOption::DefaultPermissions,
        MountOption::FSName("udcache-mirror".into()),
    ];
    fuser::mount(Mirror(cache), mountpoint, &config)
}
