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
#   listing a directory of LIST_ENTRIES (100,000) files, made by the other client, read with
#           getdents in 512-byte buffers (tests/fstool listcheck): unmodified, then while the
#           other client creates and removes files in it (CHURN_RATE, 200/s); READDIR(PLUS)
#           calls and wall time for both; every stable entry must be listed exactly once
#   flood   the negative-entry flood on the mount (c-tests' dcache_stress -D), FLOOD_ITER (2)
#           iterations of FLOOD_NAMES (100,000) unique names; RPCs, udcfs's resident memory
#           after each iteration, its dentry-state at the end
# Columns: RPCs by type as udcfs sent them (-o stats), all of them (rpcs), and the operations
# the server counted meanwhile (server_ops: ganesha's own counters; the other client's too).
# Output: one table per load on stdout, OUTDIR/bench-nfs.jsonl (one JSON object per variant,
# load and phase) and OUTDIR/bench-nfs.svg (the make load: RPCs per compile and wall time per
# variant). LOADS="make lsR find listing flood" chooses loads, VARIANTS the variants.
set -euo pipefail
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:-$(mktemp -d /tmp/bench-nfs.XXXXXX)}
COMPILES=${COMPILES:-200}
STEP=${STEP:--c}
TREE_FILES=${TREE_FILES:-50000}
LIST_ENTRIES=${LIST_ENTRIES:-100000}
CHURN_RATE=${CHURN_RATE:-200}
FLOOD_ITER=${FLOOD_ITER:-2}
FLOOD_NAMES=${FLOOD_NAMES:-100000}
LOADS=${LOADS:-make lsR find listing flood}
VARIANTS=${VARIANTS:-udcache nocache kernel udcache+kernel local}
ACDIRMIN=30
mkdir -p "$OUT"

(cd "$ROOT" && cargo build --release --quiet -p udcache-ffi)
make -s -C "$HERE/.." all
make -s -C "$ROOT/c-tests" build/dcache_stress
# shellcheck source=stats.sh
. "$HERE/stats.sh"
UDCFS=$HERE/../udcfs
NFSCTL=$HERE/nfsctl
FSTOOL=$HERE/fstool
DCACHE_STRESS=$ROOT/c-tests/build/dcache_stress

WORK=$(mktemp -d /tmp/bench-nfs-work.XXXXXX)
EXPORT=$WORK/export MNT=$WORK/mnt STATE=$WORK/ganesha
mkdir "$EXPORT" "$MNT" "$STATE" "$WORK/build"
PID= CHURN= VARIANT=
cleanup() {
	set +e
	[ -n "$CHURN" ] && kill "$CHURN" 2>/dev/null && wait "$CHURN"
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
	VARIANT=$1
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
# The client's RPC counts so far (its udcfs-nfs: line; empty for the local variant).
client_rpcs() {
	[ "$VARIANT" = local ] || stats_line "$WORK/udcfs.log" "$PID" udcfs-nfs:
}
# delta BEFORE AFTER OP: the count of OP between two client_rpcs lines (0 if none).
delta() {
	local a b
	a=$(field "$1" "$3")
	b=$(field "$2" "$3")
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

CHURN_K=0
load_listing() {
	local v=$1 b a t0 t1 sops phase
	if [ ! -d "$EXPORT/big" ]; then
		"$NFSCTL" "$URL" mkdir big
		"$NFSCTL" "$URL" populate big "$LIST_ENTRIES" stable_ >/dev/null
	fi
	mount_variant "$v"
	for phase in still churn; do
		if [ "$phase" = churn ]; then
			# names churn_<k><n>: k, a digit per variant, keeps each variant's names apart
			# (the last one's ~50 leftovers stay) and numeric, as listcheck reads them
			CHURN_K=$((CHURN_K + 1))
			"$NFSCTL" "$URL" churn big 3600 "$CHURN_RATE" "churn_$CHURN_K" >"$WORK/churn.out" 2>&1 &
			CHURN=$!
			sleep 1
		fi
		"$HERE/ganesha.sh" stats-reset "$STATE" >/dev/null 2>&1 || true
		b=$(client_rpcs)
		t0=$(now)
		"$FSTOOL" listcheck "$MNT/big" "$LIST_ENTRIES" 1 512 1 external >"$WORK/listcheck.out" 2>&1 ||
			{ echo "bench-nfs: listing ($v, $phase): $(cat "$WORK/listcheck.out")" >&2; exit 1; }
		t1=$(now)
		a=$(client_rpcs)
		sops=$(server_ops)
		if [ -n "$CHURN" ]; then
			kill "$CHURN"
			wait "$CHURN" || true
			CHURN=
		fi
		record listing "$v" "$phase" "$(secs "$t0" "$t1")" "$b" "$a" "$sops" 1
	done
	unmount
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status"; }

load_flood() {
	local v=$1 b a t0 t1 sops rss=()
	mount_variant "$v"
	"$HERE/ganesha.sh" stats-reset "$STATE" >/dev/null 2>&1 || true
	b=$(client_rpcs)
	t0=$(now)
	"$DCACHE_STRESS" -D "$MNT" -i "$FLOOD_ITER" -n "$FLOOD_NAMES" >"$WORK/flood.out" 2>&1 &
	local f=$!
	# udcfs's resident memory after each iteration (the tool prints a line per iteration)
	while kill -0 "$f" 2>/dev/null; do
		if [ "$(cat "$WORK/flood.out" 2>/dev/null | grep -c 'complete in' || true)" -gt "${#rss[@]}" ]; then
			rss+=("$(rss_kb)")
		fi
		sleep 0.1
	done
	wait "$f" || { echo "bench-nfs: flood ($v): $(tail -3 "$WORK/flood.out")" >&2; exit 1; }
	t1=$(now)
	a=$(client_rpcs)
	sops=$(server_ops)
	record flood "$v" run "$(secs "$t0" "$t1")" "$b" "$a" "$sops" 1
	echo "    rss after each iteration (kB): ${rss[*]}; dentry-state: $(grep -A1 '^udcfs: dentry-state' "$WORK/udcfs.log" | tail -1)"
	unmount
}

# The make load as a picture: RPCs per compile (LOOKUP+GETATTR+ACCESS) and wall time, per
# variant, as two bar charts side by side (plain SVG, no plotting tool needed).
plot_make() {
	python3 - "$OUT/bench-nfs.jsonl" "$OUT/bench-nfs.svg" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"load": "make"' in l]
if not rows:
    sys.exit(0)
per = lambda r: (r["LOOKUP"] + r["GETATTR"] + r["ACCESS"]) / r["per"]
charts = [("LOOKUP+GETATTR+ACCESS RPCs per compile", per), ("wall time (s)", lambda r: r["seconds"])]
W, H, bar, gap = 460, 300, 60, 20
out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (2 * W, H + 60)]
for c, (title, f) in enumerate(charts):
    x0 = c * W + 40
    top = max(f(r) for r in rows) or 1
    out.append('<text x="%d" y="20" font-size="13">%s</text>' % (x0, title))
    for i, r in enumerate(rows):
        h = (H - 60) * f(r) / top
        x = x0 + i * (bar + gap)
        out.append('<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#4a7ab5"/>' % (x, H - h, bar, h))
        out.append('<text x="%d" y="%.1f">%.4g</text>' % (x, H - h - 4, f(r)))
        out.append('<text x="%d" y="%d" transform="rotate(20 %d %d)">%s</text>' % (x, H + 16, x, H + 16, r["variant"]))
out.append('</svg>')
open(sys.argv[2], "w").write("\n".join(out))
PY
}

for load in $LOADS; do
	echo
	case $load in
	make) echo "== make ($COMPILES compiles, STEP=$STEP; RPCs per compile)" ;;
	lsR | find) echo "== $load ($TREE_FILES files in 50 directories)" ;;
	listing) echo "== listing ($LIST_ENTRIES entries; the other client at $CHURN_RATE changes/s)" ;;
	flood) echo "== flood ($FLOOD_ITER x $FLOOD_NAMES unique names)" ;;
	*) echo "bench-nfs: unknown load $load (make lsR find listing flood)" >&2; exit 2 ;;
	esac
	header
	for v in $VARIANTS; do
		case $load in
		make) load_make "$v" ;;
		lsR) load_walk lsR "$v" ls -lR ;;
		find) load_walk find "$v" find . -printf '%s\n' ;;
		listing) load_listing "$v" ;;
		flood) load_flood "$v" ;;
		esac
	done
done
plot_make
echo
echo "bench-nfs: done; JSON lines in $OUT/bench-nfs.jsonl, the make load's plot in $OUT/bench-nfs.svg"
