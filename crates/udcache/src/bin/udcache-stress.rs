//! `udcache-stress`: the negative-entry flood of Linux's `dcache_stress.c` (the 2020 "dcache:
//! increase poison resistance" series), run against a [`Dcache`].
//!
//! ```text
//! udcache-stress [-i <iterations>] [-n <names>] [-p <prefix>] [-o <dir>] [-u] [-s] [-d]
//!                [-b <buckets>]
//! ```
//!
//! Like the C tool it makes a working directory `dcache_stress.XXXXXX` and, for each
//! iteration, touches `-n` names `<prefix>%08x%08x` (prefix, iteration, index) in it; after
//! each iteration it prints the dentry-state figures and the time to walk the working
//! directory's positive children (the C tool's "inotify time", which walked them to set up a
//! watch). Options, as in the C tool:
//!
//! - default: each name is looked up (the C tool's `access`) — a miss, so the filesystem is
//!   asked and the answer ("no such file") cached as a negative dentry;
//! - `-s`: each name is looked up twice (the second lookup hits the negative dentry and sets
//!   its referenced bit: the form that defeated the 2020 rule; or, if the trimming rules took
//!   the dentry as it was released, misses and asks the filesystem again);
//! - `-o <dir>`: each name is also looked up in the directory `<dir>` (made at the root);
//! - `-u`: each name is created and unlinked (mknod, unlink, and the kernel's forget of the
//!   inode), leaving a negative dentry;
//! - `-d`: each name is made a directory and becomes the working directory (mkdir, chdir;
//!   leaves everything behind, as the C tool does, and skips the children walks).
//!
//! At the end the working directory is removed (unless `-d`): its dentry and everything cached
//! below it are dropped ([`Dcache::invalidate`]) and its inode forgotten.
//!
//! Differences from the C tool: `-b` is new, the cache's hash buckets (the kernel's table is
//! sized at boot; a library's is sized by its user); a first line gives the buckets and the
//! per-bucket cap; `-u` with `-d`, a stray argument or a bad number is an error (exit 2)
//! rather than ignored; `-h` exits 0. Defaults: 10 iterations of 2^19 names (the C tool's
//! 2^20 takes twice as long, about 20 s) and 2^18 buckets, so that the entries climb for a few
//! iterations and then stay at about 3 per bucket.
//!
//! The filesystem behind the cache is the tool's own: it holds only what the tool creates, and
//! everything the tool creates stays cached as a positive dentry (positive dentries are never
//! evicted by the negative bounds, and nothing here shrinks the cache). So a lookup the cache
//! cannot answer is always of a name that does not exist, and the filesystem says so.

use std::process::ExitCode;
use std::time::Instant;

use udcache::{
    Config, Dcache, Errno, FileType, Filesystem, InodeSpec, ROOT_INO, Resolved, validate_name,
};

/// The per-bucket cap on unused negative dentries (the cache's default; printed at the start).
const CAP: usize = 6;

/// The C tool's options, with `-b`.
struct Options {
    iterations: u32,
    names: u32,
    prefix: String,
    other_dir: Option<String>,
    mknod_unlink: bool,
    mkdir_chdir: bool,
    second_access: bool,
    buckets: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            iterations: 10,
            names: 1 << 19,
            prefix: String::new(),
            other_dir: None,
            mknod_unlink: false,
            mkdir_chdir: false,
            second_access: false,
            buckets: 1 << 18,
        }
    }
}

fn usage() -> String {
    let d = Options::default();
    format!(
        "usage: udcache-stress [-i <iterations>] [-n <names>] [-p <prefix>] [-o <dir>] [-u] [-s] \
         [-d] [-b <buckets>]\n\
         \x20 -i test iterations, default {}\n\
         \x20 -n names at each iteration, default {}\n\
         \x20 -p prefix for names\n\
         \x20 -o interleave with other dir (made at the root of the cache)\n\
         \x20 -s touch twice\n\
         \x20 -u mknod-unlink sequence\n\
         \x20 -d mkdir-chdir sequence (leaves garbage)\n\
         \x20 -b hash buckets of the cache (rounded up to a power of two), default {}\n\
         \x20 -h this help\n",
        d.iterations, d.names, d.buckets
    )
}

/// What the command line asks for.
enum Parsed {
    Run(Options),
    Help,
}

fn number<T: std::str::FromStr>(opt: char, value: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("-{opt}: not a number: {value:?}"))
}

/// Parses the arguments as `getopt(argc, argv, "i:n:p:o:usdhb:")` does (flags may be
/// grouped, `-n5` and `-n 5` are the same, `--` ends the options), except that a stray
/// argument is an error rather than ignored.
fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut o = Options::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "--" {
            if let Some(extra) = args.next() {
                return Err(format!("unexpected argument {extra:?}"));
            }
            break;
        }
        let Some(flags) = arg.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return Err(format!("unexpected argument {arg:?}"));
        };
        for (at, opt) in flags.char_indices() {
            let value = |args: &mut std::slice::Iter<'_, String>| {
                let rest = &flags[at + opt.len_utf8()..];
                if !rest.is_empty() {
                    return Ok(rest.to_owned());
                }
                args.next().cloned().ok_or_else(|| format!("option -{opt} needs a value"))
            };
            match opt {
                'u' => o.mknod_unlink = true,
                'd' => o.mkdir_chdir = true,
                's' => o.second_access = true,
                'h' => return Ok(Parsed::Help),
                'i' | 'n' | 'p' | 'o' | 'b' => {
                    let v = value(&mut args)?;
                    match opt {
                        'i' => o.iterations = number(opt, &v)?,
                        'n' => o.names = number(opt, &v)?,
                        'p' => o.prefix.push_str(&v),
                        'o' => o.other_dir = Some(v),
                        _ => o.buckets = number(opt, &v)?,
                    }
                    break; // the value took the rest of this argument
                }
                _ => return Err(format!("unknown option -{opt}")),
            }
        }
    }
    if o.buckets == 0 || o.buckets > 1 << 26 {
        return Err(format!("-b: buckets must be between 1 and 2^26, not {}", o.buckets));
    }
    if o.mknod_unlink && o.mkdir_chdir {
        return Err("-u and -d exclude each other".to_owned());
    }
    // The longest name the run makes: prefix, then 16 hex digits.
    let longest = format!("{}{:016x}", o.prefix, 0);
    validate_name(longest.as_bytes()).map_err(|e| format!("-p: names would be invalid: {e}"))?;
    if let Some(dir) = &o.other_dir {
        validate_name(dir.as_bytes()).map_err(|e| format!("-o {dir:?}: {e}"))?;
    }
    Ok(Parsed::Run(o))
}

/// The tool's filesystem: nothing that is not cached exists (see the module docs).
struct ToolFs;

impl Filesystem for ToolFs {
    fn lookup(&self, _parent: u64, _name: &[u8]) -> Result<Option<InodeSpec>, Errno> {
        Ok(None)
    }
}

/// A failed cache operation: what the C tool's `err(2, ...)` prints.
struct Failed(String);

impl<E: std::fmt::Display> From<(&str, &str, E)> for Failed {
    fn from((op, name, e): (&str, &str, E)) -> Self {
        Failed(format!("{op} {name}: {e}"))
    }
}

/// The run: the cache, its working directories, and the next free inode number.
struct Run {
    cache: Dcache,
    next_ino: u64,
}

impl Run {
    fn mkdir(&mut self, parent: u64, name: &str) -> Result<u64, Failed> {
        let ino = self.next_ino;
        self.next_ino += 1;
        let spec = InodeSpec { ino, kind: FileType::Directory, fs_data: 0 };
        self.cache.add(parent, name.as_bytes(), spec).map_err(|e| ("mkdir", name, e))?;
        Ok(ino)
    }

    fn mknod_unlink(&mut self, dir: u64, name: &str) -> Result<(), Failed> {
        let ino = self.next_ino;
        self.next_ino += 1;
        let spec = InodeSpec { ino, kind: FileType::Regular, fs_data: 0 };
        self.cache.add(dir, name.as_bytes(), spec).map_err(|e| ("mknod", name, e))?;
        self.cache.unlink(dir, name.as_bytes()).map_err(|e| ("unlink", name, e))?;
        // The kernel lets go of the unlinked file: its one lookup is forgotten.
        self.cache.forget(ino, 1).map_err(|e| ("forget", name, e))?;
        Ok(())
    }

    fn access(&self, dir: u64, name: &str) -> Result<(), Failed> {
        match self.cache.resolve(dir, name.as_bytes()) {
            Ok(Resolved::Negative) => Ok(()),
            Ok(Resolved::Found(spec)) => Err(Failed(format!("access {name}: found {spec:?}"))),
            Err(e) => Err(("access", name, e).into()),
        }
    }

    /// The C tool's `show_dentry_state`.
    fn show_dentry_state(&self) {
        let s = self.cache.stats();
        let share =
            |n: u64| if s.nr_dentry == 0 { 0.0 } else { n as f64 * 100.0 / s.nr_dentry as f64 };
        println!("nr_dentry = {}\t{:.1}M", s.nr_dentry, s.nr_dentry as f64 / 1e6);
        println!("nr_buckets = {}\t{:.1} avg", s.nr_buckets, s.per_bucket());
        println!("nr_unused = {}\t{:.1}%", s.nr_unused, share(s.nr_unused));
        println!("nr_negative = {}\t{:.1}%\n", s.nr_negative, share(s.nr_negative));
    }

    /// The C tool's `test_inotify`: the time to walk `dir`'s positive children.
    fn children_walk(&self, dir: u64) -> Result<(), Failed> {
        let start = Instant::now();
        let children = self.cache.children(dir).map_err(|e| Failed(format!("children: {e}")))?;
        let tm = start.elapsed().as_secs_f64();
        // The C tool's line, so scripts that read its output read this one; the count after.
        println!("inotify time: {tm:.6} seconds");
        println!("positive children: {}\n", children.len());
        Ok(())
    }
}

/// A name for the working directory, `dcache_stress.XXXXXX` as `mkdtemp` makes them.
fn temp_name() -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        ^ u64::from(std::process::id()).rotate_left(32);
    let mut x = seed | 1;
    let suffix: String = (0..6)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            CHARS[(x % CHARS.len() as u64) as usize] as char
        })
        .collect();
    format!("dcache_stress.{suffix}")
}

fn stress(o: &Options) -> Result<(), Failed> {
    let config = Config::for_entries(o.buckets)
        .with_buckets(o.buckets)
        .with_negative_cap(Some(CAP))
        .with_filesystem(std::sync::Arc::new(ToolFs));
    let mut run = Run { cache: Dcache::new(config), next_ino: ROOT_INO + 1 };
    let buckets = run.cache.stats().nr_buckets;
    println!("udcache: {buckets} buckets, at most {CAP} unused negative dentries per bucket\n");
    let dir_name = temp_name();
    let dir = run.mkdir(ROOT_INO, &dir_name)?;
    let other = match &o.other_dir {
        Some(name) => Some(run.mkdir(ROOT_INO, name)?),
        None => None,
    };
    let mut cwd = dir;

    run.show_dentry_state();
    if !o.mkdir_chdir {
        run.children_walk(cwd)?;
    }
    println!("working in temporary directory {dir_name}\n");

    let mut total_names = 0u64;
    let mut name = String::with_capacity(o.prefix.len() + 16);
    for iteration in 1..=o.iterations {
        println!("start iteration {iteration}, {} names", o.names);
        let start = Instant::now();
        for index in 0..o.names {
            use std::fmt::Write;
            name.clear();
            write!(name, "{}{iteration:08x}{index:08x}", o.prefix).expect("write to a String");
            if o.mknod_unlink {
                run.mknod_unlink(cwd, &name)?;
            } else if o.mkdir_chdir {
                cwd = run.mkdir(cwd, &name)?;
            } else {
                run.access(cwd, &name)?;
            }
            if o.second_access {
                run.access(cwd, &name)?;
            }
            if let Some(other) = other {
                run.access(other, &name)?;
                if o.second_access {
                    run.access(other, &name)?;
                }
            }
        }
        total_names += u64::from(o.names);
        let tm = start.elapsed().as_secs_f64();
        println!("iteration {iteration} complete in {tm:.6} seconds, total names {total_names}\n");
        run.show_dentry_state();
        if !o.mkdir_chdir {
            run.children_walk(cwd)?;
        }
    }

    if o.mkdir_chdir {
        println!("leave temporary directory {dir_name}");
        return Ok(());
    }
    println!("removing temporary directory {dir_name}");
    let start = Instant::now();
    // rmdir: the name and everything cached below it go, then the kernel's forget.
    run.cache.invalidate(ROOT_INO, dir_name.as_bytes()).map_err(|e| ("rmdir", &*dir_name, e))?;
    run.cache.forget(dir, 1).map_err(|e| ("forget", &*dir_name, e))?;
    let tm = start.elapsed().as_secs_f64();
    println!("remove complete in {tm:.6} seconds\n");
    run.show_dentry_state();
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(Parsed::Help) => {
            print!("{}", usage());
            ExitCode::SUCCESS
        }
        Ok(Parsed::Run(o)) => match stress(&o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(Failed(msg)) => {
                eprintln!("udcache-stress: {msg}");
                ExitCode::from(2)
            }
        },
        Err(msg) => {
            eprint!("udcache-stress: {msg}\n{}", usage());
            ExitCode::from(2)
        }
    }
}
