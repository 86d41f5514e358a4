#!/usr/bin/env bash
# bench-nfs.sh: the NFS backend's loads, every variant in one run against one nfs-ganesha on
# loopback (started and stopped here), counting RPCs by type on the client (udcfs -o stats) and
# on the server (ganesha's own counters, tests/ganesha.sh stats). Not part of the test command.
#
#   udcfs/tests/bench-nfs.sh [OUTDIR]        (as root: ganesha and FUSE mounts)
#
# Variants (same export, same loads; each measurement on a fresh mount):
#   udcache         udcfs over NFS as built: udcache answers; FUSE kernel timeouts 0
#   nocache         -o nocache: every lookup a LOOKUP, every getattr a GETATTR, every listing
#                   read afresh (lookupcache=none,noac)
#   kernel          nocache, with FUSE entry/attr timeouts of acdirmin (30 s): the kernel's
#                   own caches only
#   udcache+kernel  udcache, and FUSE entry/attr timeouts of acdirmin as well
#   local           udcfs over the export's backing directory itself (the floor; no RPCs)
# Loads (sizes from the environment):
#   make    includes.mk: 50 empty -I dirs on the mount, COMPILES (200) compiles, make -j2
#           (STEP=-c compiles; -E preprocesses only); wall time and RPCs per compile
#   lsR     ls -lR of a tree of TREE_FILES (50,000) files in 50 directories, made by the other
#           client: cold (a fresh mount), then warm (at once, within acdirmin)
#   find    the same with find -printf '%s'
# Output: one table per load on stdout, and OUTDIR/bench-nfs.jsonl (one JSON object per
# variant and load). LOADS="make lsR find" chooses loads, VARIANTS the variants.
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$(mktemp -d /tmp/bench-nfs.XXXXXX)}
COMPILES=${COMPILES:-200}
STEP=${STEP:--c}
TREE_FILES=${TREE_FILES:-50000}
LOADS=${LOADS:-make lsR find}
VARIANTS=${VARIANTS:-udcache nocache kernel udcache+kernel local}
ACDIRMIN=30
mkdir -p "$OUT"

(cd "$ROOT" && cargo build --release --quiet -p udcache-ffi)
make -s -C "$HERE/.." all
UDCFS=$HERE/../udcfs
NFSCTL=$HERE/nfsctl

WORK=$(mktemp -d /tmp/bench-nfs-work.XXXXXX)
EXPORT=$WORK/export MNT=$WORK/mnt STATE=$WORK/ganesha
mkdir "$EXPORT" "$MNT" "$STATE" "$WORK/build"
PID=
cleanup() {
	set +e
	grep -qs " $MNT fuse" /proc/mounts && { fusermount3 -u "$MNT" || fusermount3 -u -z "$MNT"; }
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID"
	"$HERE/ganesha.sh" stop "$STATE" >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
URL=$("$HERE/ganesha.sh" start "$STATE" "$EXPORT")
echo "bench-nfs: nfs-ganesha at $URL; results in $OUT"
: >"$OUT/bench-nfs.jsonl"

# mount VARIANT: a fresh udcfs of that variant on $MNT (its log $WORK/udcfs.log).
mount_variant() {
	local opts=stats source=$URL
	case $1 in
	udcache) ;;
	nocache) opts=$opts,nocache ;;
	kernel) opts=$opts,nocache,entry_timeout=$ACDIRMIN,attr_timeout=$ACDIRMIN ;;
	udcache+kernel) opts=$opts,entry_timeout=$ACDIRMIN,attr_timeout=$ACDIRMIN ;;
	local) source=$EXPORT ;;
	esac
	"$UDCFS" -f -o "$opts" "$source" "$MNT" 2>"$WORK/udcfs.log" &
	PID=$!
	for _ in $(seq 100); do
		grep -qs " $MNT fuse" /proc/mounts && return 0
		sleep 0.05
	done
	echo "bench-nfs: udcfs ($1) did not mount: $(cat "$WORK/udcfs.log")" >&2
	exit 1
}
unmount() {
	fusermount3 -u "$MNT"
	wait "$PID" || true
	PID=
}
# The client's RPC counts so far ("OP=n ..."; empty for the local variant).
client_rpcs() {
	local n
	n=$(grep -c '^udcfs-' "$WORK/udcfs.log" || true)
	kill -USR1 "$PID"
	for _ in $(seq 200); do
		[ "$(grep -c '^udcfs-' "$WORK/udcfs.log" || true)" -gt "$n" ] && break
		sleep 0.02
	done
	sleep 0.05
	{ grep '^udcfs-nfs:' "$WORK/udcfs.log" || true; } | tail -1 | sed 's/^udcfs-nfs: when=[^ ]* //'
}
# delta BEFORE AFTER OP: the count of OP between two client_rpcs lines (0 if none).
delta() {
	local a b
	a=$(sed -n "s/.*\b$3=\([0-9]*\).*/\1/p" <<<"$1")
	b=$(sed -n "s/.*\b$3=\([0-9]*\).*/\1/p" <<<"$2")
	echo $((${b:-0} - ${a:-0}))
}
# The server's operations counted since the last reset (all types together).
server_ops() {
	"$HERE/ganesha.sh" stats "$STATE" 2>/dev/null | awk 'NR > 0 && $2 ~ /^[0-9]+$/ { n += $2 } END { print n + 0 }'
}
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# record LOAD VARIANT PHASE SECONDS BEFORE AFTER SERVER_OPS PER: a table row and a JSON line.
OPS="LOOKUP GETATTR ACCESS READDIRPLUS READDIR READ"
record() {
	local load=$1 variant=$2 phase=$3 s=$4 before=$5 after=$6 sops=$7 per=$8 row json op d all
	all=$(delta "$before" "$after" rpcs)
	row=$(printf '%-8s %-15s %-5s %8s s' "$load" "$variant" "$phase" "$s")
	json="{\"load\": \"$load\", \"variant\": \"$variant\", \"phase\": \"$phase\", \"seconds\": $s"
	for op in $OPS; do
		d=$(delta "$before" "$after" "$op")
		row="$row $(printf '%12s' "$(awk -v d="$d" -v p="$per" 'BEGIN { printf (p > 1 ? "%.2f" : "%d"), d / p }')")"
		json="$json, \"$op\": $d"
	done
	row="$row $(printf '%10s %10s' "$all" "$sops")"
	json="$json, \"rpcs\": $all, \"server_ops\": $sops, \"per\": $per}"
	echo "$row"
	echo "$json" >>"$OUT/bench-nfs.jsonl"
}
header() {
	printf '%-8s %-15s %-5s %10s' load variant phase wall
	for op in $OPS; do printf '%12s' "$op"; done
	printf '%10s %10s\n' rpcs server_ops
}

load_make() {
	local v=$1 b a t0 t1 sops
	rm -rf "$EXPORT/inc" "$WORK/build"/*
	mount_variant "$v"
	mkdir -p "$MNT/inc"
	"$HERE/ganesha.sh" stats-reset "$STATE" >/dev/null 2>&1 || true
	b=$(client_rpcs)
	t0=$(now)
	(cd "$WORK/build" && make -s -f "$HERE/includes.mk" INC_PATH="$MNT/inc" STEP="$STEP" \
		NUM_COMPILES="$COMPILES" -j2)
	t1=$(now)
	a=$(client_rpcs)
	sops=$(server_ops)
	record make "$v" run "$(secs "$t0" "$t1")" "$b" "$a" "$sops" "$COMPILES"
	unmount
}

make_tree() {
	[ -d "$EXPORT/tree" ] && return 0
	local per=$((TREE_FILES / 50))
	"$NFSCTL" "$URL" mkdir tree
	for d in $(seq 1 50); do
		"$NFSCTL" "$URL" mkdir "tree/d$d"
		"$NFSCTL" "$URL" populate "tree/d$d" "$per" f >/dev/null
	done
}

load_walk() { # load_walk NAME VARIANT CMD...: cold on a fresh mount, then warm
	local name=$1 v=$2 b a t0 t1 sops phase
	shift 2
	make_tree
	mount_variant "$v"
	for phase in cold warm; do
		"$HERE/ganesha.sh" stats-reset "$STATE" >/dev/null 2>&1 || true
		b=$(client_rpcs)
		t0=$(now)
		(cd "$MNT/tree" && "$@" >/dev/null)
		t1=$(now)
		a=$(client_rpcs)
		sops=$(server_ops)
		record "$name" "$v" "$phase" "$(secs "$t0" "$t1")" "$b" "$a" "$sops" 1
	done
	unmount
}

for load in $LOADS; do
	echo
	echo "== $load ($(case $load in make) echo "$COMPILES compiles, STEP=$STEP, per compile" ;; *) echo "$TREE_FILES files in 50 directories" ;; esac))"
	header
	for v in $VARIANTS; do
		case $load in
		make) load_make "$v" ;;
		lsR) load_walk lsR "$v" ls -lR ;;
		find) load_walk find "$v" find . -printf '%s\n' ;;
		*) echo "bench-nfs: unknown load $load (make lsR find)" >&2; exit 2 ;;
		esac
	done
done
echo
echo "bench-nfs: done; JSON lines in $OUT/bench-nfs.jsonl"
