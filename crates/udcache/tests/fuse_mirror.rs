//! The FUSE mirror example (`examples/fuse_mirror`), mounted: its backing store and glue are
//! built into this test and served on a thread of it, over a tree made for the test, and the
//! mount is compared with the tree through the kernel.
//!
//! Where `/dev/fuse` is missing or the mount is refused (a user without `fusermount3`, say),
//! the test says so and passes, unless `UDCFS_REQUIRE_MOUNT=1` is set: then it fails.

#[path = "../examples/fuse_mirror/backing.rs"]
mod backing;
#[path = "../examples/fuse_mirror/glue.rs"]
mod glue;

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use backing::Dir;
use glue::Cache;

/// The time to live the mirror is served with.
const TTL: Duration = Duration::from_secs(1);
/// How long the mount may take to appear, and the server to end after the unmount.
const WAIT: Duration = Duration::from_secs(10);

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A mount point, unmounted when dropped if it still is mounted.
struct Mounted<'a> {
    at: &'a Path,
    mounted: bool,
}

impl Mounted<'_> {
    /// `fusermount3 -u` (`umount` where there is none: root mounts without it), once.
    fn unmount(&mut self, lazy: bool) -> io::Result<()> {
        self.mounted = false;
        let flags = if lazy { "-uz" } else { "-u" };
        let status = match Command::new("fusermount3").arg(flags).arg(self.at).status() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Command::new("umount").args(lazy.then_some("-l")).arg(self.at).status()?
            }
            status => status?,
        };
        if status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!("fusermount3 {status}")))
        }
    }
}

impl Drop for Mounted<'_> {
    fn drop(&mut self) {
        if self.mounted {
            let _ = self.unmount(true);
        }
    }
}

/// Whether `path` is the root of a mount (its device differs from its parent's).
fn is_mount_point(path: &Path) -> bool {
    let dev = |p: &Path| fs::metadata(p).map(|m| m.dev());
    matches!((dev(path), dev(&path.join(".."))), (Ok(a), Ok(b)) if a != b)
}

/// Passes with a message, or fails if a mount is required.
fn cannot_mount(why: &str) {
    if std::env::var_os("UDCFS_REQUIRE_MOUNT").is_some_and(|v| v == "1") {
        panic!("UDCFS_REQUIRE_MOUNT=1, but {why}");
    }
    eprintln!("fuse_mirror: skipped: {why}");
}

/// The tree: nested directories, files of several sizes (one spanning many FUSE reads), a
/// mode of its own, a hard link, symbolic links (one dangling), a name that is not UTF-8, and
/// a directory of 300 entries (more than one readdir batch, and one kernel buffer).
fn make_tree(root: &Path) -> io::Result<()> {
    fs::create_dir_all(root.join("d1/d2/d3"))?;
    fs::create_dir_all(root.join("many"))?;
    fs::create_dir_all(root.join("probe"))?;
    fs::write(root.join("a.txt"), "hello\n")?;
    fs::write(root.join("empty"), "")?;
    let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    fs::write(root.join("d1/big"), big)?;
    fs::write(root.join("d1/d2/d3/leaf.txt"), "leaf\n")?;
    fs::write(root.join("probe/present"), "here\n")?;
    fs::write(root.join("secret"), "s\n")?;
    fs::set_permissions(root.join("secret"), fs::Permissions::from_mode(0o600))?;
    fs::hard_link(root.join("a.txt"), root.join("d1/a-link"))?;
    symlink("d1/d2", root.join("link"))?;
    symlink("nowhere", root.join("d1/dangling"))?;
    fs::write(root.join(std::ffi::OsStr::from_bytes(b"caf\xe9")), "latin-1\n")?;
    for i in 0..300 {
        fs::write(root.join(format!("many/f{i:03}")), format!("{i}\n"))?;
    }
    Ok(())
}

/// Compares directory `mirror` with `backing`, recursively; returns the names compared.
fn compare(backing: &Path, mirror: &Path) -> usize {
    let names = |dir: &Path| {
        let mut v: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().file_name())
            .collect();
        v.sort();
        v
    };
    let list = names(backing);
    assert_eq!(names(mirror), list, "{}", mirror.display());
    let mut count = list.len();
    for name in list {
        let (b, m) = (backing.join(&name), mirror.join(&name));
        let (bm, mm) = (fs::symlink_metadata(&b).unwrap(), fs::symlink_metadata(&m).unwrap());
        let what = m.display();
        assert_eq!(mm.file_type(), bm.file_type(), "{what}");
        assert_eq!(mm.mode(), bm.mode(), "{what}");
        assert_eq!((mm.ino(), mm.nlink(), mm.size()), (bm.ino(), bm.nlink(), bm.size()), "{what}");
        assert_eq!((mm.uid(), mm.gid(), mm.mtime()), (bm.uid(), bm.gid(), bm.mtime()), "{what}");
        if bm.is_dir() {
            count += compare(&b, &m);
        } else if bm.is_symlink() {
            assert_eq!(fs::read_link(&m).unwrap(), fs::read_link(&b).unwrap(), "{what}");
        } else {
            assert!(fs::read(&m).unwrap() == fs::read(&b).unwrap(), "{what}: contents differ");
        }
    }
    count
}

/// Waits for the mount at `at` to appear; `Err` with the server's error if it ended first.
fn wait_mounted(at: &Path, server: &Receiver<io::Result<()>>) -> Result<(), String> {
    let start = Instant::now();
    while !is_mount_point(at) {
        match server.try_recv() {
            Ok(Err(e)) => return Err(format!("the mount failed: {e}")),
            Ok(Ok(())) => return Err("the server ended before mounting".into()),
            Err(_) if start.elapsed() > WAIT => return Err("no mount after 10 s".into()),
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    }
    Ok(())
}

#[test]
fn mirror_matches_its_tree() {
    if !Path::new("/dev/fuse").exists() {
        return cannot_mount("no /dev/fuse");
    }
    let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos();
    let tmp = TempDir(std::env::temp_dir().join(format!("udcache-fuse-mirror-{nanos}")));
    let (src, mnt) = (tmp.0.join("src"), tmp.0.join("mnt"));
    fs::create_dir_all(&mnt).unwrap();
    make_tree(&src).unwrap();

    let cache = Arc::new(Cache::new(Dir::open(&src).unwrap(), TTL));
    let (done, server) = mpsc::channel();
    let (served, at) = (cache.clone(), mnt.clone());
    thread::spawn(move || done.send(glue::serve(served, &at)));
    if let Err(why) = wait_mounted(&mnt, &server) {
        return cannot_mount(&why);
    }
    let mut mount = Mounted { at: &mnt, mounted: true };

    // A missing name, twice: the second answer comes from the negative dentry.
    let absent = mnt.join("probe/absent");
    let enoent = |p: &Path| fs::symlink_metadata(p).unwrap_err().raw_os_error();
    assert_eq!(enoent(&absent), Some(libc::ENOENT));
    let (lookups, first) = cache.stats();
    assert_eq!(enoent(&absent), Some(libc::ENOENT));
    let (lookups_again, second) = cache.stats();
    assert!(lookups_again > lookups, "the kernel asked the mirror again");
    let asked = |s: &udcache::Stats| (s.backend_lookups, s.revalidations);
    assert_eq!(asked(&second), asked(&first), "the cache answered, asking nothing");

    // Everything, through the kernel: each name costs the backing store one lookup.
    let names = compare(&src, &mnt);
    assert!(names > 300, "{names} names");
    let (_, walked) = cache.stats();
    assert!(walked.backend_lookups <= names as u64 + 1, "{walked:?} for {names} names");

    // Once the time to live has passed, the kernel asks again and the cache revalidates.
    thread::sleep(TTL + Duration::from_millis(100));
    compare(&src, &mnt);
    let (_, again) = cache.stats();
    assert_eq!(again.backend_lookups, walked.backend_lookups, "{again:?}");
    assert!(again.revalidations > walked.revalidations, "{again:?}");

    // A path through a symbolic link, and a file read in pieces at offsets.
    assert_eq!(fs::read(mnt.join("link/d3/leaf.txt")).unwrap(), b"leaf\n");
    let file = fs::File::open(mnt.join("d1/big")).unwrap();
    let mut piece = [0u8; 5];
    file.read_exact_at(&mut piece, 299_995).unwrap();
    assert_eq!(piece.to_vec(), fs::read(src.join("d1/big")).unwrap()[299_995..]);
    drop(file);

    mount.unmount(false).expect("the unmount");
    match server.recv_timeout(WAIT) {
        Ok(result) => result.expect("the server ended with an error"),
        Err(RecvTimeoutError::Timeout) => panic!("the server did not end after the unmount"),
        Err(RecvTimeoutError::Disconnected) => panic!("the server thread panicked"),
    }
}
