#!/usr/bin/env bash
# Installs libudcache into a temporary prefix with scripts/install.sh, then builds and runs a
# small C program in a directory outside the repository using only
# `pkg-config --cflags --libs udcache` (shared) and `pkg-config --static ...` (static); the
# example of ffi/README.md too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/udcache-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

"$root/scripts/install.sh" "$tmp/prefix" >/dev/null
mkdir "$tmp/app"
cat > "$tmp/app/hello.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <udcache.h>

int main(void) {
    udc_cache *c;
    if (udc_cache_new(NULL, &c) != 0)
        return 1;
    udc_entry e = {.ino = 2, .type = UDC_TYPE_REG, .fs_data = 7}, out;
    int ok = udc_add(c, UDC_ROOT_INO, "hello", 5, &e) == 0 &&
             udc_lookup(c, UDC_ROOT_INO, "hello", 5, &out) == UDC_POSITIVE && out.fs_data == 7;
    printf("libudcache %s: %s\n", udc_version(), ok ? "ok" : "FAILED");
    udc_cache_destroy(c);
    return ok ? 0 : 1;
}
C
cd "$tmp/app"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
passed=0 failed=0
run() {
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $*" >&2; fi
}
cflags=$(pkg-config --cflags udcache)
run test "$(pkg-config --modversion udcache)" = "$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
# shellcheck disable=SC2046 # word splitting of pkg-config's output is intended
run cc -std=c11 -Wall -Wextra -Werror hello.c $(pkg-config --cflags --libs udcache) -o hello
run env LD_LIBRARY_PATH="$tmp/prefix/lib" ./hello
# Static: the archive itself, then the private libraries pkg-config lists.
libdir=$(pkg-config --variable=libdir udcache)
# shellcheck disable=SC2046
run cc -std=c11 -Wall -Wextra -Werror hello.c $cflags "$libdir/libudcache.a" \
    $(pkg-config --static --libs-only-l udcache | sed 's/-ludcache//') -o hello-static
run ./hello-static
run sh -c '! ldd ./hello-static | grep -q libudcache'
# The example of ffi/README.md (its first C block) builds and runs the same way.
sed -n '/^```c$/,/^```$/p' "$root/ffi/README.md" | sed '1d;$d' > readme.c
# shellcheck disable=SC2046
run cc -std=c11 -Wall -Wextra -Werror readme.c $(pkg-config --cflags --libs udcache) -o readme
run sh -c "LD_LIBRARY_PATH='$tmp/prefix/lib' ./readme | grep -q '^inode 3, fs_data 7$'"
echo "install: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
