//! A read-only FUSE mirror of a directory, its names and attributes cached by udcache.
//!
//! ```text
//! cargo run -p udcache --example fuse_mirror -- SOURCE MOUNTPOINT
//! fusermount3 -u MOUNTPOINT    # from another shell: the mirror then prints its figures
//! ```
//!
//! Three parts: `backing.rs`, the directory as a udcache `Filesystem`; `glue.rs`, the cache and
//! the FUSE operations on it (built on the `fuser` crate, with its own mount code: no libfuse,
//! only the `fusermount3` helper where the caller is not root); this file, the command line.

mod backing;
mod glue;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use backing::Dir;
use glue::Cache;

/// How long the cache and the kernel trust names, misses and attributes.
const TTL: Duration = Duration::from_secs(1);

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [source, mountpoint] = &args[..] else {
        eprintln!("usage: fuse_mirror SOURCE MOUNTPOINT");
        return ExitCode::from(2);
    };
    let cache = match Dir::open(source) {
        Ok(dir) => Arc::new(Cache::new(dir, TTL)),
        Err(e) => {
            eprintln!("fuse_mirror: {}: {e}", source.display());
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = glue::serve(cache.clone(), mountpoint) {
        eprintln!("fuse_mirror: {}: {e}", mountpoint.display());
        return ExitCode::FAILURE;
    }
    let (lookups, stats) = cache.stats();
    eprintln!("fuse_lookups {lookups}\n{stats}");
    ExitCode::SUCCESS
}
