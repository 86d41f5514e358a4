//! The committed header `include/udcache.h` is what cbindgen generates from the source today.
//!
//! `UDCACHE_BLESS=1 cargo test -p udcache-ffi --test header` rewrites it instead of failing.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let path = dir.join("include/udcache.h");
    if std::env::var_os("UDCACHE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/udcache.h");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/udcache.h is stale; to regenerate it, run\n\
         UDCACHE_BLESS=1 cargo test -p udcache-ffi --test header\n\
         --- generated ---\n{}",
        String::from_utf8_lossy(&generated)
    );
}
