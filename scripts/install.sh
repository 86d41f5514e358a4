#!/usr/bin/env bash
# Installs libudcache for C programs:
#   scripts/install.sh PREFIX
# builds the release library (cargo build --release -p udcache-ffi) and installs
#   PREFIX/lib/libudcache.so, PREFIX/lib/libudcache.a,
#   PREFIX/include/udcache.h,
#   PREFIX/lib/pkgconfig/udcache.pc (generated here, with PREFIX written into it),
# so that a C project builds with `pkg-config --cflags --libs udcache` (PKG_CONFIG_PATH set to
# PREFIX/lib/pkgconfig if PREFIX is not a standard one). Static linking:
# `pkg-config --static --libs udcache` adds the system libraries the Rust runtime needs.
# Environment: CARGO_TARGET_DIR (where cargo builds), DESTDIR (staged installs, as make's).
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$1
case "$prefix" in
    /*) ;;
    *) prefix="$(pwd)/$prefix" ;;
esac
target=${CARGO_TARGET_DIR:-$root/target}
case "$target" in
    /*) ;;
    *) target="$root/$target" ;;
esac

(cd "$root" && nice -n 19 cargo build --release -p udcache-ffi --quiet)

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)
dest="${DESTDIR:-}$prefix"
install -d "$dest/lib/pkgconfig" "$dest/include"
install -m 0755 "$target/release/libudcache.so" "$dest/lib/libudcache.so"
install -m 0644 "$target/release/libudcache.a" "$dest/lib/libudcache.a"
install -m 0644 "$root/ffi/include/udcache.h" "$dest/include/udcache.h"
cat > "$dest/lib/pkgconfig/udcache.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: udcache
Description: Userspace directory-entry cache for C filesystems (lockless lookups, bounded negative entries, cookie-indexed readdir)
Version: $version
Libs: -L\${libdir} -ludcache
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl
Cflags: -I\${includedir}
PC
echo "installed libudcache $version into $dest"
