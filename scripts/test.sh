#!/usr/bin/env bash
# The README's test command: every test that runs without loom or a fuzzer.
#   - Rust unit, integration and doc tests of the whole workspace (stress tests included,
#     bounded in time), in release;
#   - udcache-gp's pool tests once more in the debug profile, for the misuse checks that exist
#     only with debug assertions (double free, free into the wrong pool): under a second once
#     built, about 20 s more from a clean checkout on two cores;
#   - udcache-readdir's unit and integration tests in the debug profile too, for its
#     debug_assert!s on the cached listing (a page's slot, its verifier, the inflight fills):
#     about 10 s of tests and 20 s of building on two cores;
#   - the C tests under c-tests/ (built with the system C compiler);
#   - the udcfs mount tests, over a local directory and over NFS (udcfs/tests/mount-test.sh
#     local|nfs: mounts a FUSE filesystem; the NFS run starts nfs-ganesha on loopback). Run as
#     root, it first installs the Debian packages they need that are missing. Where FUSE or
#     the NFS server cannot be used it skips with a message, and fails if UDCFS_REQUIRE_MOUNT=1.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --release
cargo test -p udcache-gp --test pool
cargo test -p udcache-readdir --lib --tests

make -C c-tests test

# What the mount tests need: FUSE, and for NFS a server (nfs-ganesha with its VFS backend,
# rpcbind, dbus for its statistics) and libnfs (udcfs's NFS client library).
need=()
command -v fusermount3 >/dev/null || need+=(fuse3)
pkg-config --exists fuse3 2>/dev/null || need+=(libfuse3-dev)
pkg-config --exists libnfs 2>/dev/null || need+=(libnfs-dev)
command -v ganesha.nfsd >/dev/null || need+=(nfs-ganesha)
[ -n "$(find /usr/lib -name 'libfsalvfs*' -print -quit 2>/dev/null)" ] || need+=(nfs-ganesha-vfs)
command -v rpcbind >/dev/null || need+=(rpcbind)
command -v dbus-daemon >/dev/null || need+=(dbus)
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "scripts/test.sh: installing ${need[*]} for the udcfs mount tests"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
	else
		echo "scripts/test.sh: WARNING: missing ${need[*]}: the udcfs mount tests will skip"
	fi
fi

udcfs/tests/mount-test.sh local
udcfs/tests/mount-test.sh nfs
