#!/usr/bin/env bash
# Runs dcache_stress in its modes and checks its output lines:
#   dcache_stress_check.sh BINARY [SCALE]
# SCALE (a power of two) divides the name and bucket counts (valgrind runs use 16). RUNNER, if set, is put in
# front of every run (e.g. "valgrind --error-exitcode=99 ...").
#   - library mode flood: negative entries stay bounded (at most 4 per bucket on average with
#     50 names per bucket touched; the 2020 thread's tool saturated at ~2.9), and removing the
#     directory drops them all;
#   - library mode with -u -s -o, and -d;
#   - path mode (-D) in a temporary directory, which it removes;
#   - -h prints the usage and exits 1.
set -uo pipefail
bin=$1
scale=${2:-1}
runner=${RUNNER:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dcache_stress_check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "dcache_stress_check: FAILED: $*" >&2; }
expect() { # expect DESCRIPTION COMMAND...: the command succeeds
    local what=$1; shift
    if "$@"; then ok; else bad "$what"; fi
}
run() { # run OUTFILE ARGS...: runs the tool, output to OUTFILE; status checked
    local out=$1; shift
    # shellcheck disable=SC2086 # RUNNER is a command line
    if $runner "$bin" "$@" >"$out" 2>"$out.err"; then ok; else bad "dcache_stress $* (exit $?): $(tail -3 "$out.err")"; fi
}
lines() { # lines FILE PATTERN COUNT: exactly COUNT lines match
    local n
    n=$(grep -c -E "$2" "$1")
    if [ "$n" -eq "$3" ]; then ok; else bad "$1: $n lines match '$2', not $3"; fi
}

n=$((100000 / scale))
buckets=$((2048 / scale))
run "$tmp/flood" -i 3 -n "$n" -B "$buckets"
lines "$tmp/flood" '^start iteration [1-3], '"$n"' names$' 3
lines "$tmp/flood" '^iteration 3 complete in [0-9.]+ seconds, total names '$((3 * n))'$' 1
lines "$tmp/flood" '^nr_dentry = [0-9]+	[0-9.]+M$' 5
lines "$tmp/flood" '^nr_buckets = '"$buckets"'	[0-9.]+ avg$' 5
lines "$tmp/flood" '^nr_unused = [0-9]+	[0-9.]+%$' 5
lines "$tmp/flood" '^nr_negative = [0-9]+	[0-9.]+%$' 5
lines "$tmp/flood" '^inotify time: [0-9.]+ seconds$' 4
lines "$tmp/flood" '^working in temporary directory dcache_stress\.......$' 1
lines "$tmp/flood" '^removing temporary directory dcache_stress\.......$' 1
lines "$tmp/flood" '^remove complete in [0-9.]+ seconds$' 1
# Bounded: every average after an iteration is at most 4 per bucket (50 names per bucket).
expect "negatives bounded" awk -F'\t' '/^nr_buckets/ { split($2, a, " "); if (a[1] + 0 > 4.0) exit 1 }' "$tmp/flood"
# After the removal, nothing is left.
expect "removal drops everything" sh -c "tail -5 '$tmp/flood' | grep -q '^nr_dentry = 0	'"

run "$tmp/unlink" -i 2 -n $((20000 / scale)) -u -s -o other -p x
lines "$tmp/unlink" '^iteration 2 complete in [0-9.]+ seconds, total names '$((40000 / scale))'$' 1
lines "$tmp/unlink" '^remove complete in ' 1

run "$tmp/mkdir" -i 2 -n $((2000 / scale)) -d
lines "$tmp/mkdir" '^leave temporary directory dcache_stress\.......$' 1
lines "$tmp/mkdir" '^inotify time' 0

stats=/proc/sys/fs/dentry-state
if [ ! -r "$stats" ]; then # no procfs here: a stand-in file of the same format
    printf '1 0 45 0 0 0\n' >"$tmp/dentry-state"
    stats=$tmp/dentry-state
fi
mkdir "$tmp/root" "$tmp/other"
run "$tmp/paths" -D "$tmp/root" -S "$stats" -i 2 -n $((5000 / scale))
lines "$tmp/paths" '^nr_dentry = [0-9]+	[0-9.]+M$' 4
lines "$tmp/paths" '^inotify time: [0-9.]+ seconds$' 3
lines "$tmp/paths" '^remove complete in ' 1
run "$tmp/paths-u" -D "$tmp/root" -S "$stats" -i 1 -n $((5000 / scale)) -u -s -o "$tmp/other"
lines "$tmp/paths-u" '^iteration 1 complete in [0-9.]+ seconds, total names '$((5000 / scale))'$' 1
expect "path mode removes its directory" sh -c "[ -z \"\$(ls -A '$tmp/root')\" ]"
run "$tmp/paths-d" -D "$tmp/root" -S "$stats" -i 1 -n 50 -d
lines "$tmp/paths-d" '^leave temporary directory dcache_stress\.......$' 1
expect "path mode -d leaves its directories" sh -c "ls '$tmp/root'/dcache_stress.* >/dev/null"

# shellcheck disable=SC2086
$runner "$bin" -h >"$tmp/usage" 2>&1
status=$?
if [ "$status" -eq 1 ]; then ok; else bad "-h exits $status, not 1"; fi
lines "$tmp/usage" '^usage: .* \[-i <iterations>\] \[-n <names>\] \[-p <prefix>\] \[-o <dir>\] \[-u\] \[-s\]$' 1

echo "dcache_stress: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
