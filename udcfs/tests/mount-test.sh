#!/usr/bin/env bash
# mount-test.sh [local|nfs]: mounts udcfs and checks it with real programs. `local` (the default)
# serves a temporary directory; `nfs` serves the same directory exported by nfs-ganesha on
# loopback (tests/ganesha.sh starts and stops it), through udcfs's NFS backend. Run by
# scripts/test.sh (the README's test command) and CI, once per backend.
#
#   1. tools: mkdir -p, touch, ln, ln -s, mv, cp -r, chmod, truncate, mkfifo, rm, rm -rf, rmdir,
#      renameat2 (noreplace; exchange on local only: NFSv3 has no exchange), dd with O_DIRECT,
#      ls -l, find, stat: the same script runs directly in the backing directory and through
#      udcfs; the transcripts must match, and what udcfs shows must match its backing directory
#      (inode numbers and times included, and the atime right after a read).
#   2. users (as root): the same with several users and groups (setpriv), on a mount with
#      allow_other,default_permissions: permissions, sticky and setgid directories, ownership
#      (over NFS: every call carries the caller's uid, gid and groups).
#   3. concurrent: four processes race creates, mkdirs, symlinks, links, renames (plain,
#      noreplace, exchange), unlinks, rmdirs and lookups on 32 shared names for 4 s; then every
#      name must look the same through udcfs (answered by udcache) as in the backing directory.
#   4. make: the include-path load (includes.mk: 50 empty include directories on the mount,
#      compiles with make -j2; STEP=-E, preprocessing only, to stay short); udcfs's stats must
#      show that the repeated misses were answered from the cache (NFS: RPCs per compile).
#   5. flood: the negative-entry flood on real paths in the mount (c-tests' dcache_stress -D:
#      unique names, access, access twice, mknod+unlink, and access interleaved with a directory
#      of 5,000 entries, too big for udcfs to list on misses); the flood's own directories must
#      be listed after list_after_misses misses, their complete listings answering the rest;
#      udcache's negative entries must stay within negative_cap per bucket, with evictions, and
#      the nodes of unlinked files must be freed.
#   6. listing: a directory of 20,000 entries listed (3 passes, small getdents buffers) while
#      another process (NFS: a second NFS client, tests/nfsctl) creates and deletes files in it;
#      every stable entry exactly once; with -o max_nodes=8000, the reaper keeps udcfs's nodes
#      bounded meanwhile.
#   NFS only (nfs-checks.sh, with a second client, tests/nfsctl):
#   8. coherence: names created, removed, renamed and chmod'ed by the other client are seen
#      through udcfs within acdirmax/acregmax (the mount uses 1 and 2 s), and a file's
#      attributes at once after an open; a negative entry is not served after its directory
#      changed and its attributes expired; within acdirmin udcache answers with no RPC.
#   9. stress: four processes on the mount and the other client change one directory at once;
#      afterwards the tree seen through udcfs equals the tree the server lists.
#  10. faults: a directory removed by the other client (ESTALE) is dropped from the cache; the
#      server stopped: calls fail with EIO after timeo x (retrans + 1), udcfs stays up and
#      serves again once the server is back; a mount of an unreachable server or a missing
#      export fails with one line and exit 1, leaving no mount.
#  11. garbage: a fake server (tests/badserver.py) lists a name with '/', a reply cut short, or
#      cookies in a cycle: ls fails (EINVAL, EIO, ELOOP), udcfs stays up and keeps none of it.
#   7. unmount: udcfs exits 0, prints its final statistics, and logged no forget that udcache
#      refused (the lookup counts it replied with and the kernel's forgets balanced).
#
# It always unmounts (trap), also on failure, and kills only the processes it started.
# Where FUSE (or, for nfs, nfs-ganesha and libnfs) cannot be used, it skips with a message,
# unless UDCFS_REQUIRE_MOUNT=1 (CI), where that is a failure.
set -euo pipefail
export LC_ALL=C

BACKEND=${1:-local}
case $BACKEND in
local | nfs) ;;
*) echo "usage: $0 [local|nfs]" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
T0=$(date +%s.%N)

say() { printf 'mount-test[%s]: %s\n' "$BACKEND" "$*"; }
fail() { printf 'mount-test[%s]: FAIL: %s\n' "$BACKEND" "$*" >&2; exit 1; }
skip() {
	if [ "${UDCFS_REQUIRE_MOUNT:-0}" = 1 ]; then
		fail "the mount tests cannot run here: $* (UDCFS_REQUIRE_MOUNT=1)"
	fi
	say "SKIP: $* -- the udcfs mount tests did NOT run"
	exit 0
}
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

command -v fusermount3 >/dev/null || skip "fusermount3 not installed (apt-get install fuse3)"
pkg-config --exists fuse3 || skip "libfuse3 headers not installed (apt-get install libfuse3-dev)"
[ -c /dev/fuse ] || skip "/dev/fuse does not exist"
(exec 3<>/dev/fuse) 2>/dev/null || skip "/dev/fuse cannot be opened"
if [ "$BACKEND" = nfs ]; then
	[ "$(id -u)" = 0 ] || skip "the NFS tests start nfs-ganesha, which needs root"
	command -v ganesha.nfsd >/dev/null || skip "nfs-ganesha not installed (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)"
	command -v rpcbind >/dev/null || skip "rpcbind not installed (apt-get install rpcbind)"
	pkg-config --exists libnfs || skip "libnfs headers not installed (apt-get install libnfs-dev)"
fi

(cd "$ROOT" && cargo build --release --quiet -p udcache-ffi)
make -s -C "$HERE/.." all
make -s -C "$ROOT/c-tests" build/dcache_stress
UDCFS=$(cd "$HERE/.." && pwd)/udcfs
FSTOOL=$HERE/fstool
NFSCTL=$HERE/nfsctl
DCACHE_STRESS=$ROOT/c-tests/build/dcache_stress

WORK=$(mktemp -d /tmp/udcfs-test.XXXXXX)
chmod 755 "$WORK" # other users (test 2) must reach the mount
SRC=$WORK/src
MNT=$WORK/mnt
LOG=$WORK/udcfs.log
mkdir "$SRC" "$MNT"
UDCFS_PID=
MIX_PIDS=()
GANESHA=

cleanup() {
	local status=$?
	set +e
	for pid in "${MIX_PIDS[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid"
	done
	if grep -qs " $MNT fuse" /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT"
	fi
	if [ -n "$UDCFS_PID" ] && kill -0 "$UDCFS_PID" 2>/dev/null; then
		kill "$UDCFS_PID"
		wait "$UDCFS_PID"
	fi
	if [ "$status" -ne 0 ] && [ -s "$LOG" ]; then
		echo "--- udcfs log (last 20 lines):" >&2
		tail -20 "$LOG" >&2
	fi
	if [ -n "$GANESHA" ]; then
		"$HERE/ganesha.sh" stop "$GANESHA" >/dev/null 2>&1
	fi
	rm -rf "$WORK"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- mount ----
# max_nodes well under 20,000 so that the listing test makes the reaper work on every machine
MAX_NODES=8000
OPTS=stats,cache_buckets=8192,max_nodes=$MAX_NODES
if [ "$(id -u)" = 0 ]; then
	OPTS=$OPTS,allow_other,default_permissions
fi
SOURCE=$SRC
if [ "$BACKEND" = nfs ]; then
	GANESHA=$WORK/ganesha
	mkdir "$GANESHA"
	URL=$("$HERE/ganesha.sh" start "$GANESHA" "$SRC") || fail "nfs-ganesha did not start"
	SOURCE=$URL
	# Short attribute times so that the coherence checks wait seconds, not a minute; calls fail
	# after 2 x 1 s while the server is down.
	OPTS=$OPTS,acregmin=1,acregmax=2,acdirmin=1,acdirmax=2,timeo=10,retrans=1
	say "nfs-ganesha on loopback: $URL"
fi
"$UDCFS" -f -o "$OPTS" "$SOURCE" "$MNT" 2>"$LOG" &
UDCFS_PID=$!
for _ in $(seq 100); do
	grep -qs " $MNT fuse" /proc/mounts && break
	if ! kill -0 "$UDCFS_PID" 2>/dev/null; then
		wait "$UDCFS_PID" || true
		UDCFS_PID=
		if grep -qiE 'fuse: mount failed|fuse: device not found|permission denied|operation not permitted' "$LOG"; then
			skip "mounting is not allowed here: $(head -1 "$LOG")"
		fi
		fail "udcfs did not mount: $(cat "$LOG")"
	fi
	sleep 0.05
done
grep -qs " $MNT fuse" /proc/mounts || fail "udcfs did not mount within 5 s"
# The latest NFS RPC counts of udcfs (-o stats prints them after its statistics line).
nfs_stats() { { grep '^udcfs-nfs:' "$LOG" || true; } | tail -1; }
say "mounted udcfs -o $OPTS"

# shellcheck source=stats.sh
. "$HERE/stats.sh"
# The latest statistics line of udcfs (asks for one with SIGUSR1).
stats() { stats_line "$LOG" "$UDCFS_PID" udcfs-stats:; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$UDCFS_PID/status"; }

# ---- 1. tools ----
# Each command's outcome on one line, with its output: what a user of the directory sees.
step() {
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	printf '%s => %s\n' "$*" "$([ $rc = 0 ] && echo ok || echo "exit $rc")"
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/    /'
}
tools_build() {
	step mkdir -p a/b/c
	step mkdir a
	step touch a/f1 a/b/f2
	step sh -c 'echo text > a/b/c/f3'
	step ln a/b/c/f3 a/hard
	step ln a/b/c/f3 a/hard
	step ln -s ../f1 a/b/sym
	step mv a/f1 a/b/c/f1m
	step mv a/b/c a/c2
	step mv a/c2 a/b/c/inside
	step cp -r a copy
	step chmod 751 a/c2
	step rm a/hard
	step mkfifo a/fifo
	step truncate -s 100 a/b/f2
	step touch -d '2020-02-02 02:02:02' a/b/f2
	step sh -c 'echo more >> a/c2/f3'
	step rm -rf copy/b
	step rmdir a
	step rm a/nope
	if [ "$BACKEND" = local ]; then
		step "$FSTOOL" rename2 exchange a/b a/c2
	else
		step mv a/b a/c2.x && step mv a/c2 a/b && step mv a/c2.x a/c2
	fi
	step "$FSTOOL" rename2 noreplace a/b/f2 a/c2/f2
	step "$FSTOOL" rename2 noreplace a/b/f3 a/b/f3new
	[ "$BACKEND" = nfs ] || step "$FSTOOL" rename2 exchange a/nope a/b
	step mkdir -p deep/1/2/3/4/5/6/7/8
	step mv deep a/c2/
	step cat a/b/f3new a/b/sym
	step cmp -n 100 a/c2/f2 /dev/zero
	step dd if=/dev/zero of=a/direct bs=4096 count=2 oflag=direct status=none
	step dd if=a/direct of=/dev/null bs=4096 iflag=direct status=none
	step stat -c '%F %s %h %a' a a/b a/c2 a/fifo a/b/sym a/b/f3new a/c2/deep/1/2/3/4/5/6/7/8
	step ls -lR --time-style=+ a copy
	step mkdir a/many
	step "$FSTOOL" populate a/many 40
	step "$FSTOOL" endpos a/many
	step sh -c 'find . | sort'
	step find . -type f -name 'f*' -size -1k
}
tools_teardown() {
	step rm -rf a copy
	step ls -la --time-style=+
}
# What a directory holds, as stat sees it (inode numbers and modification times included).
snapshot() { (cd "$1" && find . -printf '%y %m %n %U %G %s %i %T@ %p -> %l\n' | sort); }
# same_both_ways LOAD SCRIPT DIRECT VIAFS: runs SCRIPT in $SRC/DIRECT (directly) and in
# $MNT/VIAFS (through udcfs), into $WORK/LOAD.direct and $WORK/LOAD.viafs; fails unless both
# printed the same and udcfs then shows VIAFS exactly as its backing directory holds it.
same_both_ways() {
	local load=$1 script=$2 direct=$3 viafs=$4
	(cd "$SRC/$direct" && "$script") >"$WORK/$load.direct"
	(cd "$MNT/$viafs" && "$script") >"$WORK/$load.viafs"
	diff -u "$WORK/$load.direct" "$WORK/$load.viafs" ||
		fail "$load: the same commands behaved differently through udcfs (diff above)"
	snapshot "$SRC/$viafs" >"$WORK/snap.backing"
	snapshot "$MNT/$viafs" >"$WORK/snap.mount"
	diff -u "$WORK/snap.backing" "$WORK/snap.mount" ||
		fail "$load: udcfs shows something other than its backing directory (diff above)"
}

t=$(date +%s.%N)
mkdir "$SRC/direct" "$MNT/viafs"
same_both_ways tools tools_build direct viafs
(cd "$SRC/direct" && tools_teardown) >"$WORK/teardown.direct"
(cd "$MNT/viafs" && tools_teardown) >"$WORK/teardown.viafs"
diff -u "$WORK/teardown.direct" "$WORK/teardown.viafs" ||
	fail "tools: teardown differs (diff above)"
[ -z "$(ls -A "$SRC/viafs")" ] || fail "tools: rm -rf through udcfs left files in the backing directory"
# A read moves the backing atime (relatime: it was not after the mtime); the kernel then asks
# udcfs for it afresh, and udcfs must not answer with the atime it cached before the read.
echo text >"$MNT/atime"
touch -d '2001-01-01' "$MNT/atime"
stat -c %X "$MNT/atime" >/dev/null
cat "$MNT/atime" >/dev/null
atime_mnt=$(stat -c %X "$MNT/atime") atime_src=$(stat -c %X "$SRC/atime")
[ "$atime_mnt" = "$atime_src" ] ||
	fail "tools: after a read udcfs shows atime $atime_mnt, the backing file has $atime_src"
rm "$MNT/atime"
say "tools: $(grep -c ' => ' "$WORK/tools.direct") commands, same results directly and through udcfs; $(wc -l <"$WORK/snap.mount") files as stat sees them, same as the backing directory ($(elapsed "$t"))"

# ---- 2. users ----
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
	t=$(date +%s.%N)
	as() { # as UID GROUPS CMD...: CMD with that uid, gid = UID, and those groups
		local uid=$1 groups=$2
		shift 2
		step setpriv --reuid="$uid" --regid="$uid" --groups="$groups" --inh-caps=-all -- "$@"
	}
	users_script() {
		step mkdir T T/g T/priv
		step chmod 1777 T
		step chgrp 2000 T/g
		step chmod 2775 T/g
		step chmod 700 T/priv
		step sh -c 'echo x > T/rootfile'
		as 1000 1000,2000 touch T/u1
		as 1000 1000,2000 mkdir T/u1d
		as 1000 1000,2000 touch T/g/u1g
		as 1000 1000,2000 mkdir T/g/u1gd
		as 1000 1000,2000 ln -s u1 T/u1s
		as 1000 1000,2000 mkfifo T/u1f
		as 1000 1000,2000 touch T/priv/x
		as 1000 1000,2000 sh -c 'echo y >> T/rootfile'
		as 1000 1000,2000 chmod 640 T/u1
		as 1000 1000,2000 chgrp 2000 T/u1
		as 1000 1000,2000 chgrp 1001 T/u1
		as 1000 1000,2000 ls T/priv
		as 1001 1001 touch T/u2
		as 1001 1001 rm -f T/u1
		as 1001 1001 mv T/u1d T/u2d
		as 1001 1001 touch T/g/u2g
		as 1001 1001 cat T/u1
		as 1001 1001 ln T/u1 T/u2link
		as 1001 1001 chmod 777 T/u1
		as 1001 1001 truncate -s 0 T/rootfile
		as 1000 1000,2000 mv T/u1 T/g/moved
		as 1000 1000,2000 rm T/u1s
		as 1001 1001 rm T/u2
		step sh -c 'find T -printf "%p %y %m %U %G\n" | sort'
	}
	mkdir "$SRC/udirect" "$MNT/uviafs"
	same_both_ways users users_script udirect uviafs
	grep -q 'T/g/u1g f 2644 1000 2000\|T/g/u1g f 644 1000 2000' "$WORK/users.viafs" ||
		fail "users: a file created by uid 1000 in a setgid directory is not 1000:2000"
	rm -rf "$MNT/uviafs" "$SRC/udirect"
	say "users: $(grep -c ' => ' "$WORK/users.viafs") commands as root, uid 1000 (groups 1000,2000) and uid 1001: same results as on the backing directory ($(elapsed "$t"))"
else
	say "users: not run (needs root and setpriv)"
fi

# ---- 3. concurrent changes ----
t=$(date +%s.%N)
# run_mix DIR [CMD...]: four fstool mix processes on DIR/n0..n31 for 4 s, and CMD beside them
# (another client's changes); fails unless all of them succeed. Their counts: $WORK/mix.*.
run_mix() {
	local dir=$1 pid
	shift
	for seed in 1 2 3 4; do
		"$FSTOOL" mix "$dir" 32 4 "$seed" >"$WORK/mix.$seed" &
		MIX_PIDS+=($!)
	done
	if [ $# -gt 0 ]; then
		"$@" &
		MIX_PIDS+=($!)
	fi
	for pid in "${MIX_PIDS[@]}"; do
		wait "$pid" || fail "concurrent: an operations process failed"
	done
	MIX_PIDS=()
}
mkdir "$MNT/mix"
run_mix "$MNT/mix"
"$FSTOOL" compare "$MNT/mix" "$SRC/mix" 32 >"$WORK/compare" ||
	fail "concurrent: udcfs answers differ from the backing directory: $(cat "$WORK/compare")"
snapshot "$SRC/mix" >"$WORK/snap.backing"
snapshot "$MNT/mix" >"$WORK/snap.mount"
diff -u "$WORK/snap.backing" "$WORK/snap.mount" ||
	fail "concurrent: udcfs shows something other than its backing directory (diff above)"
rm -rf "$MNT/mix"
ops=$(awk '{ n += $2 } END { print n }' "$WORK"/mix.*)
say "concurrent: 4 processes, $ops operations on 32 names: afterwards every name as the backing directory has it ($(cat "$WORK/compare")) ($(elapsed "$t"))"

# ---- 4. make: the include-path load ----
COMPILES=${UDCFS_TEST_COMPILES:-200}
t=$(date +%s.%N)
mkdir "$MNT/inc" "$WORK/build"
before=$(stats)
rpcs_before=$(nfs_stats)
(cd "$WORK/build" && make -s -f "$HERE/includes.mk" INC_PATH="$MNT/inc" STEP=-E \
	NUM_COMPILES="$COMPILES" -j2)
after=$(stats)
rpcs_after=$(nfs_stats)
[ "$(ls "$WORK/build/objs" | wc -l)" = "$COMPILES" ] || fail "make: not $COMPILES outputs"
lookups=$(($(field "$after" lookups) - $(field "$before" lookups)))
backend=$(($(field "$after" backend_lookups) - $(field "$before" backend_lookups)))
negative=$(($(field "$after" cached_negative) - $(field "$before" cached_negative)))
positive=$(($(field "$after" cached_positive) - $(field "$before" cached_positive)))
say "make -j2 ($COMPILES preprocessings, 50 -I dirs on the mount): $(elapsed "$t"); lookups $lookups: $negative negative and $positive positive answered from the cache, $backend asked of the backing directory"
# Each compile makes ~27,000 lookups (a third of them misses) of the same ~2,600 names.
[ "$lookups" -gt $((COMPILES * 20000)) ] || fail "make: only $lookups lookups reached udcfs"
[ $((backend * 20)) -lt "$lookups" ] || fail "make: $backend of $lookups lookups went to the backing directory (the repeated misses were not answered from the cache)"
[ "$negative" -gt $((COMPILES * 6000)) ] || fail "make: only $negative cached negative answers"
if [ "$BACKEND" = nfs ]; then
	per_compile() { # per_compile OP: that RPC's count during the make, per compile (2 decimals)
		awk -v a="$(field "$rpcs_before" "$1")" -v b="$(field "$rpcs_after" "$1")" \
			-v n="$COMPILES" 'BEGIN { printf "%.2f", (b - a) / n }'
	}
	say "make: RPCs per compile: LOOKUP $(per_compile LOOKUP) GETATTR $(per_compile GETATTR) ACCESS $(per_compile ACCESS) READDIRPLUS $(per_compile READDIRPLUS) all $(per_compile rpcs)"
	# A LOOKUP is sent for a name udcache never had (the first compile's misses), not for
	# one it answers: the LOOKUPs are the backend lookups, and revalidations add few.
	nlookup=$(($(field "$rpcs_after" LOOKUP) - $(field "$rpcs_before" LOOKUP)))
	[ "$nlookup" -le $((backend + backend / 10 + 100)) ] ||
		fail "make: $nlookup LOOKUP RPCs for $backend names udcache did not have"
fi
rm -rf "$WORK/build"

# ---- 5. flood: the negative-entry flood ----
# dcache_stress -D: the flood tool on real paths (c-tests/dcache_stress.c).
flood() {
	"$DCACHE_STRESS" -D "$MNT" "$@" >"$WORK/flood.out" 2>&1 ||
		fail "flood: dcache_stress -D $* failed: $(tail -3 "$WORK/flood.out")"
	grep '^iteration .* complete' "$WORK/flood.out" | sed 's/^/    /'
}
t=$(date +%s.%N)
rss0=$(rss_kb)
s0=$(stats)
flood -i 2 -n 40000
s1=$(stats)
rss1=$(rss_kb)
flood -i 2 -n 40000 -s
s2=$(stats)
rss2=$(rss_kb)
# Each flood directory is listed after its first list_after_misses (64) backing misses; its
# complete listing answers the other names, with no backing lookup and no negative entry.
listed=$(($(field "$s2" complete_dir_negatives) - $(field "$s0" complete_dir_negatives)))
[ "$listed" -ge $((240000 - 4 * 2 * 64)) ] || fail "flood: only $listed of 240,000 accesses of missing names were answered by complete listings"
nodes0=$(field "$s2" nodes)
flood -i 1 -n 5000 -u
sleep 0.5 # the kernel's forgets of the unlinked files arrive asynchronously
s3=$(stats)
# 5,000 entries: more than udcfs lists on misses (dir.c's LIST_MAX), so each name looked up in
# it is a backing lookup and a negative entry, bounded per bucket.
mkdir "$MNT/crowd"
"$FSTOOL" populate "$MNT/crowd" 5000
flood -i 1 -n 40000 -o "$MNT/crowd"
s4=$(stats)
rss4=$(rss_kb)
for s in "$s1" "$s2" "$s3" "$s4"; do
	neg=$(field "$s" nr_negative) buckets=$(field "$s" nr_buckets) cap=$(field "$s" negative_cap)
	[ "$neg" -le $((cap * buckets)) ] || fail "flood: $neg negative entries > $cap per bucket x $buckets buckets"
done
evicted=$(($(field "$s4" negative_evictions) - $(field "$s3" negative_evictions)))
[ "$evicted" -gt 0 ] || fail "flood: 40,000 unique misses in a 5,000-entry directory evicted no negative entry"
rm -rf "$MNT/crowd"
nodes3=$(field "$s3" nodes)
[ "$nodes3" -le $((nodes0 + 100)) ] || fail "flood: $nodes3 nodes after mknod+unlink of 5000 files (was $nodes0): unlinked files' nodes were not freed"
say "flood (dcache_stress -D): 205,000 unique names ($(elapsed "$t")): $listed answered by complete listings; nr_negative $(field "$s1" nr_negative) / $(field "$s2" nr_negative) / $(field "$s3" nr_negative) / $(field "$s4" nr_negative) <= $(field "$s4" negative_cap) x $(field "$s4" nr_buckets) buckets, $evicted evicted by the 5,000-entry directory's misses; nodes $nodes0 -> $nodes3; udcfs RSS $rss0 -> $rss1 -> $rss2 -> $rss4 kB"

# ---- 6. listing a directory being modified ----
t=$(date +%s.%N)
ENTRIES=${UDCFS_TEST_ENTRIES:-20000}
mkdir "$MNT/big"
if [ "$BACKEND" = local ]; then
	"$FSTOOL" populate "$MNT/big" "$ENTRIES"
	"$FSTOOL" listcheck "$MNT/big" "$ENTRIES" 3 512 100 | sed 's/^/    /' ||
		fail "listing: an entry was missed or listed twice, or nothing changed during a pass"
	churner="another process"
else
	# The other client fills the directory and churns it while udcfs lists.
	"$NFSCTL" "$URL" populate big "$ENTRIES" stable_ >/dev/null ||
		fail "listing: the other client could not populate big/"
	"$NFSCTL" "$URL" churn big 600 300 churn_ >"$WORK/churn.out" 2>&1 &
	MIX_PIDS+=($!)
	sleep 1
	"$FSTOOL" listcheck "$MNT/big" "$ENTRIES" 3 512 100 external | sed 's/^/    /' ||
		fail "listing: an entry was missed or listed twice"
	kill "${MIX_PIDS[-1]}" 2>/dev/null
	wait "${MIX_PIDS[-1]}" 2>/dev/null || true
	unset 'MIX_PIDS[-1]'
	grep -q '^ops [1-9]' "$WORK/churn.out" || fail "listing: the other client changed nothing: $(cat "$WORK/churn.out")"
	churner="a second NFS client"
fi
n=$(ls "$SRC/big" | grep -c '^stable_')
[ "$n" = "$ENTRIES" ] || fail "listing: the backing directory has $n entries after the churn, not $ENTRIES"
s=$(stats)
nodes=$(field "$s" nodes) reaped=$(field "$s" reaped)
# (Locally the files are made through udcfs, a node each; over NFS the other client made them.)
[ "$BACKEND" = nfs ] || [ "$ENTRIES" -le "$MAX_NODES" ] || [ "$reaped" -gt 0 ] ||
	fail "listing: $ENTRIES files made no node reaping (max_nodes=$MAX_NODES)"
[ "$nodes" -le $((MAX_NODES + 1000)) ] || fail "listing: $nodes nodes live, over max_nodes=$MAX_NODES"
rm -rf "$MNT/big"
say "listing: $ENTRIES entries, 3 passes while $churner created and deleted files: every stable entry exactly once; nodes $nodes (max_nodes $MAX_NODES, $reaped names dropped) ($(elapsed "$t"))"

if [ "$BACKEND" = nfs ]; then
	# shellcheck source=nfs-checks.sh
	. "$HERE/nfs-checks.sh"
fi

# ---- 7. unmount ----
fusermount3 -u "$MNT"
rc=0
wait "$UDCFS_PID" || rc=$?
UDCFS_PID=
[ "$rc" = 0 ] || fail "udcfs exited with status $rc"
final=$(grep '^udcfs-stats: when=unmount' "$LOG") || fail "udcfs printed no statistics at unmount"
# udcfs logs a forget udcache refused (more than it counted): lookup counts out of balance
! grep -q '^udcfs: forget(' "$LOG" || fail "lookup counts out of balance: $(grep -m1 '^udcfs: forget(' "$LOG")"
say "unmounted; final: $(sed 's/^udcfs-stats: when=unmount //' <<<"$final" | cut -d' ' -f1-12)"
[ "$BACKEND" = local ] || say "RPCs: $(grep '^udcfs-nfs: when=unmount' "$LOG" | sed 's/^udcfs-nfs: when=unmount //')"
say "all passed ($(elapsed "$T0"))"
