#!/usr/bin/env bash
# bench-vs-passthrough.sh: udcfs against libfuse's own passthrough_ll example (the anchor: what
# a filesystem author starts from; built from Debian's libfuse3-dev examples), and against the
# backing directory itself, on the same loads in the same run. Not part of the test command.
#
#   make:    the include-path Makefile (includes.mk: 50 empty -I directories on the filesystem, 200
#            compiles, make -j2), compiling (make-c) and preprocessing only (make-E: the same
#            lookups without the code generation);
#   flood:   the negative-entry flood on real paths (c-tests' dcache_stress -D: 2 x 100,000 unique
#            names, access); udcfs lists each flood directory after its first 64 misses
#            (list_after_misses) and answers the other names from the complete listing;
#   flood-s: the same with each name accessed twice (dcache_stress -s): the second is a repeat;
#   find100k, find15k: find over a tree of FILES files (default 100,000), stat-ing each
#            (-printf %s), and over a 15,000-file part of it (passthrough_ll keeps an fd per
#            inode and never lets one go: under a 20,000-fd limit it cannot hold 100,000).
#
# Filesystems: the backing directory itself (direct); udcfs at its defaults (entry_timeout=0,
# attr_timeout=1: the kernel and udcache keep attributes 1 s); udcfs-attr0 (attr_timeout=0:
# the same kernel settings as passthrough_ll); passthrough_ll -o timeout=0 (entry and attribute
# timeouts 0: the anchor, a FUSE server that caches nothing). All multi-threaded; each measurement
# mounts afresh. Reported: wall time (median of ROUNDS runs; one run for the make loads; the
# runs of a load interleaved across the filesystems), the server's CPU time, its resident memory
# after the load (VmRSS) and its peak (VmHWM), and errors (lines on find's stderr).
#
#   ROUNDS=3 FILES=100000 COMPILES=200 [LOADS="flood find15k"] udcfs/tests/bench-vs-passthrough.sh
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${ROUNDS:-3}
FILES=${FILES:-100000}
COMPILES=${COMPILES:-200}
LOADS=${LOADS:-make-E flood flood-s find15k find100k make-c}
for load in $LOADS; do
	case $load in
	make-c | make-E | flood | flood-s | find15k | find100k) ;;
	*) echo "bench-vs-passthrough: unknown load '$load' (make-c make-E flood flood-s find15k find100k)" >&2
	   exit 2 ;;
	esac
done

(cd "$ROOT" && cargo build --release --quiet -p udcache-ffi)
make -s -C "$HERE/.." udcfs passthrough_ll
make -s -C "$ROOT/c-tests" build/dcache_stress
DCACHE_STRESS=$ROOT/c-tests/build/dcache_stress
ulimit -n "$(ulimit -Hn)"

WORK=$(mktemp -d /tmp/udcfs-bench.XXXXXX)
SRC=$WORK/src MNT=$WORK/mnt
mkdir "$SRC" "$MNT" "$WORK/build"
PID=
cleanup() {
	set +e
	grep -qs " $MNT fuse" /proc/mounts && { fusermount3 -u "$MNT" || fusermount3 -u -z "$MNT"; }
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The tree: FILES files, 1000 per directory; the 50 include directories.
mkdir -p "$SRC/inc" && (cd "$SRC/inc" && mkdir $(seq 1 50))
for d in $(seq 0 $(((FILES - 1) / 1000))); do
	mkdir -p "$SRC/tree/d$d"
	(cd "$SRC/tree/d$d" && touch $(seq -f "f%04g" 0 $((FILES - d * 1000 > 1000 ? 999 : FILES - d * 1000 - 1))))
done
SMALL=$(seq -f "tree/d%g" 0 $(((FILES < 15000 ? FILES : 15000) / 1000 - 1))) # 15,000 files

mount_fs() { # mount_fs direct|udcfs|passthrough_ll: sets DIR (and PID)
	case $1 in
	direct) DIR=$SRC; PID= ; return ;;
	udcfs) "$HERE/../udcfs" -f "$SRC" "$MNT" 2>"$WORK/server.log" & ;;
	udcfs-attr0) "$HERE/../udcfs" -f -o attr_timeout=0 "$SRC" "$MNT" 2>"$WORK/server.log" & ;;
	passthrough_ll) "$HERE/../passthrough_ll" -f -o source="$SRC",timeout=0 "$MNT" 2>"$WORK/server.log" & ;;
	esac
	PID=$!
	for _ in $(seq 200); do grep -qs " $MNT fuse" /proc/mounts && break; sleep 0.02; done
	grep -qs " $MNT fuse" /proc/mounts || { cat "$WORK/server.log"; exit 1; }
	DIR=$MNT
}
umount_fs() {
	[ -n "$PID" ] || return 0
	fusermount3 -u "$MNT"
	wait "$PID" || true
	PID=
}
mem() { # "RSS/peak MB" of the server
	[ -n "$PID" ] || { echo "-"; return; }
	awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { printf "%.1f/%.1f", r / 1024, h / 1024 }' "/proc/$PID/status"
}
now() { date +%s.%N; }
cpu() { # the server's user + system CPU time, in clock ticks
	[ -n "$PID" ] && awk '{ print $14 + $15 }' "/proc/$PID/stat" || echo 0
}

declare -A T M E C
run() { # run LOAD FS: one measurement
	local load=$1 fs=$2 t0 t1 errs=0
	mount_fs "$fs"
	local c0
	c0=$(cpu)
	t0=$(now)
	# errors are counted (passthrough_ll runs out of fds on large trees), not fatal
	case $load in
	make-c | make-E)
		(cd "$WORK/build" && rm -rf objs && make -s -f "$HERE/includes.mk" INC_PATH="$DIR/inc" \
			STEP="-${load#make-}" NUM_COMPILES="$COMPILES" -j2) || errs=failed ;;
	flood) "$DCACHE_STRESS" -D "$DIR" -i 2 -n 100000 >/dev/null || errs=failed ;;
	flood-s) "$DCACHE_STRESS" -D "$DIR" -i 2 -n 100000 -s >/dev/null || errs=failed ;;
	find100k) errs=$( (find "$DIR/tree" -printf '%s\n' 2>&1 >/dev/null || true) | wc -l) ;;
	find15k) errs=$( (cd "$DIR" && find $SMALL -printf '%s\n' 2>&1 >/dev/null || true) | wc -l) ;;
	esac
	t1=$(now)
	T[$load,$fs]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') "
	M[$load,$fs]=$(mem)
	E[$load,$fs]=$errs
	C[$load,$fs]+="$(($(cpu) - c0)) "
	umount_fs
}
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

FSS="direct udcfs udcfs-attr0 passthrough_ll"
for load in $LOADS; do
	rounds=$ROUNDS
	case $load in make-*) rounds=1 ;; esac
	for _ in $(seq "$rounds"); do
		for fs in $FSS; do
			run "$load" "$fs"
		done
	done
done

hz=$(getconf CLK_TCK)
printf '\n%-9s %-15s %9s %9s %12s %7s  %s\n' load filesystem "wall (s)" "cpu (s)" "RSS/peak MB" \
	errors "all runs (s)"
for load in $LOADS; do
	for fs in $FSS; do
		c=$(median <<<"${C[$load,$fs]}")
		printf '%-9s %-15s %9s %9s %12s %7s  %s\n' "$load" "$fs" "$(median <<<"${T[$load,$fs]}")" \
			"$([ "$fs" = direct ] && echo - || awk -v c="$c" -v h="$hz" 'BEGIN { printf "%.2f", c / h }')" \
			"${M[$load,$fs]}" "${E[$load,$fs]}" "${T[$load,$fs]}"
	done
	p=$(median <<<"${T[$load,passthrough_ll]}")
	for fs in udcfs udcfs-attr0; do
		u=$(median <<<"${T[$load,$fs]}")
		awk -v u="$u" -v p="$p" -v l="$load" -v f="$fs" \
			'BEGIN { printf "%-9s passthrough_ll / %s wall = %.2fx\n", l, f, p / u }'
	done
done
