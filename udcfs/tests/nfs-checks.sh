# nfs-checks.sh: the NFS-only checks of mount-test.sh (sourced by it with `nfs`, udcfs mounted on
# $MNT from $URL with acregmin=1,acregmax=2,acdirmin=1,acdirmax=2,timeo=10,retrans=1; $SRC is
# the export's backing directory). The other client is tests/nfsctl, a libnfs program with its
# own connection: never a write to $SRC behind the server.

OTHER() { "$NFSCTL" "$URL" "$@"; }
# After a change by the other client, udcfs must show it once the attributes of what it changed
# expired: acdirmax (files: acregmax), 2 s here, plus 1 s for a loaded machine.
SETTLE=3
# A check that must hold within $SETTLE s (polling), for changes seen through attribute expiry.
within() {
	local what=$1 t0
	shift
	t0=$(date +%s.%N)
	until "$@" 2>/dev/null; do
		if awk -v a="$t0" -v b="$(date +%s.%N)" -v l="$SETTLE" 'BEGIN { exit !(b - a > l) }'; then
			fail "coherence: $what: not seen through udcfs within $SETTLE s"
		fi
		sleep 0.1
	done
}
absent() { ! stat "$1" >/dev/null 2>&1; }
mode_is() { [ "$(stat -c %a "$2")" = "$1" ]; }

# ---- 8. coherence with a second client ----
t=$(date +%s.%N)
mkdir "$MNT/co"
echo data >"$MNT/co/file"
# A name looked up and missed is a negative entry; the other client then creates it. Once the
# directory's attributes expired, the negative must not be served.
absent "$MNT/co/new" || fail "coherence: co/new exists before anyone made it"
OTHER create co/new hello || fail "coherence: the other client could not create co/new"
sleep "$SETTLE"
stat "$MNT/co/new" >/dev/null 2>&1 || fail "coherence: a negative entry was served $SETTLE s after the other client created the name"
[ "$(cat "$MNT/co/new")" = hello ] || fail "coherence: co/new does not read what the other client wrote"
OTHER unlink co/new
within "a name removed by the other client" absent "$MNT/co/new"
echo r >"$MNT/co/r1"
stat "$MNT/co/r1" >/dev/null
OTHER rename co/r1 co/r2
within "a rename by the other client" sh -c "! stat '$MNT/co/r1' >/dev/null 2>&1 && [ -e '$MNT/co/r2' ]"
# A file's attributes: within acregmax, and at once after an open (close-to-open).
stat "$MNT/co/file" >/dev/null
OTHER chmod 600 co/file
cat "$MNT/co/file" >/dev/null
mode_is 600 "$MNT/co/file" || fail "coherence: after an open udcfs shows mode $(stat -c %a "$MNT/co/file"), the other client set 600"
OTHER chmod 640 co/file
within "a chmod by the other client" mode_is 640 "$MNT/co/file"
OTHER mkdir co/d
within "a directory made by the other client" test -d "$MNT/co/d"
# Within the attribute time, udcache answers: no RPC for names and attributes just seen. (A
# second udcfs at the default times, 30 s and more, so that a slow machine stays within them.)
# With -o nocache it answers nothing: the same ls -l and stat ask the server again.
mkdir "$WORK/mnt3"
# mount3 OPTS: mounts a second udcfs on $WORK/mnt3 (its pid $u3, its log $WORK/udcfs3.log)
mount3() {
	"$UDCFS" -f -o "stats$1" "$URL" "$WORK/mnt3" 2>"$WORK/udcfs3.log" &
	u3=$!
	MIX_PIDS+=("$u3") # the trap's SIGTERM makes it unmount
	for _ in $(seq 100); do
		grep -qs " $WORK/mnt3 fuse" /proc/mounts && break
		sleep 0.05
	done
}
umount3() {
	fusermount3 -u "$WORK/mnt3"
	wait "$u3" || fail "coherence: the second udcfs exited $?"
	MIX_PIDS=()
}
rpcs3() { # rpcs3 OP: the second udcfs's count of OP RPCs so far (rpcs: all)
	field "$(stats_line "$WORK/udcfs3.log" "$u3" udcfs-nfs:)" "$1"
}
again3() { # the RPCs a second ls -l and stat make: "all LOOKUP GETATTR"
	ls -l "$WORK/mnt3/co" >/dev/null
	local a=$(rpcs3 rpcs) l=$(rpcs3 LOOKUP) g=$(rpcs3 GETATTR)
	ls -l "$WORK/mnt3/co" >/dev/null
	stat "$WORK/mnt3/co/file" "$WORK/mnt3/co/r2" >/dev/null
	echo "$(($(rpcs3 rpcs) - a)) $(($(rpcs3 LOOKUP) - l)) $(($(rpcs3 GETATTR) - g))"
}
mount3 ""
read -r warm _ _ <<<"$(again3)"
umount3
[ "$warm" = 0 ] || fail "coherence: a repeated ls -l within acdirmin made $warm RPCs"
mount3 ",nocache"
read -r cold3 lookups3 getattrs3 <<<"$(again3)"
umount3
n=$(ls "$SRC/co" | wc -l)
[ "$lookups3" -ge "$n" ] && [ "$getattrs3" -ge "$n" ] ||
	fail "coherence: with -o nocache a repeated ls -l of $n names made $lookups3 LOOKUPs and $getattrs3 GETATTRs"
# A directory udcfs never saw, listed with ls -l: READDIRPLUS answers the names and their
# attributes, so no LOOKUP (nor GETATTR) follows.
OTHER mkdir co/cold
OTHER populate co/cold 100 f >/dev/null
within "a directory the other client made" test -d "$MNT/co/cold"
r0=$(stats >/dev/null; nfs_stats)
[ "$(ls -l "$MNT/co/cold" | grep -c '^-')" = 100 ] || fail "coherence: ls -l co/cold does not show the other client's 100 files"
r1=$(stats >/dev/null; nfs_stats)
cold_lookups=$(($(field "$r1" LOOKUP) - $(field "$r0" LOOKUP)))
cold_plus=$(($(field "$r1" READDIRPLUS) - $(field "$r0" READDIRPLUS)))
# (A few may still be asked: an entry is kept for acdirmin, 1 s here, and a loaded machine may
# take longer between the listing and a lookup.)
[ "$cold_lookups" -le 5 ] || fail "coherence: ls -l of 100 files listed by READDIRPLUS made $cold_lookups LOOKUPs"
say "coherence: creates, removals, renames, chmods and mkdirs by a second NFS client seen within $SETTLE s (and a chmod at once after an open); a repeated ls -l and stat made $warm RPCs ($cold3 with -o nocache); a cold ls -l of 100 files made $cold_plus READDIRPLUS and $cold_lookups LOOKUP ($(elapsed "$t"))"
rm -rf "$MNT/co"

# ---- 9. stress: this mount and the other client change one directory at once ----
t=$(date +%s.%N)
mkdir "$MNT/st"
other_churn() { OTHER churn st 4 200 other_ >"$WORK/churn.st" 2>&1; }
run_mix "$MNT/st" other_churn
sleep "$SETTLE"
tree_mount() { (cd "$MNT/st" && find . -mindepth 1 -printf '%P %y %m %s %n\n' | sort); }
tree_mount >"$WORK/tree.mount"
OTHER tree st | sort >"$WORK/tree.server"
diff -u "$WORK/tree.server" "$WORK/tree.mount" ||
	fail "stress: the tree through udcfs differs from the tree the server lists (diff above)"
"$FSTOOL" compare "$MNT/st" "$SRC/st" 32 >"$WORK/compare" ||
	fail "stress: udcfs answers differ from the server's directory: $(cat "$WORK/compare")"
ops=$(awk '{ n += $2 } END { print n }' "$WORK"/mix.*)
say "stress: 4 processes ($ops operations on 32 names) and a second NFS client ($(cut -d' ' -f2 "$WORK/churn.st") creates and removes) in one directory: afterwards the tree through udcfs equals the server's ($(wc -l <"$WORK/tree.mount") entries) ($(elapsed "$t"))"
rm -rf "$MNT/st"

# ---- 10. faults ----
t=$(date +%s.%N)
# A directory udcfs holds, removed by the other client: its handle is stale.
mkdir -p "$MNT/gone/sub"
touch "$MNT/gone/sub/f"
stat "$MNT/gone/sub/f" >/dev/null
OTHER unlink gone/sub/f
OTHER rmdir gone/sub
sleep "$SETTLE"
! ls "$MNT/gone/sub" >/dev/null 2>&1 || fail "faults: a directory the other client removed is still listed"
OTHER mkdir gone/sub
within "a directory made again by the other client" test -d "$MNT/gone/sub"
[ -z "$(ls -A "$MNT/gone/sub")" ] || fail "faults: the new gone/sub shows the old one's entries"
kill -0 "$UDCFS_PID" || fail "faults: udcfs died on a stale handle"
rm -rf "$MNT/gone"
# The server stops: calls fail after timeo x (retrans + 1) = 2 s; udcfs stays up and serves
# again once the server is back (its connections reconnect).
echo before >"$MNT/outage"
"$HERE/ganesha.sh" stop "$GANESHA" >/dev/null
sleep "$SETTLE" # the cached attributes expire: the next stat must ask the server
t1=$(date +%s.%N)
if err=$(stat "$MNT/outage" 2>&1); then
	fail "faults: stat answered while the server was down"
fi
took=$(elapsed "$t1")
kill -0 "$UDCFS_PID" || fail "faults: udcfs died while the server was down"
grep -q 'Input/output error' <<<"$err" || fail "faults: while the server was down: $err (want EIO)"
URL2=$("$HERE/ganesha.sh" start "$GANESHA" "$SRC") || fail "faults: nfs-ganesha did not start again"
[ "$URL2" = "$URL" ] || fail "faults: the server came back at $URL2, not $URL"
within "the server back" test "$(cat "$MNT/outage" 2>/dev/null)" = before
echo after >"$MNT/outage2"
[ "$(cat "$SRC/outage2")" = after ] || fail "faults: a write after the outage did not reach the server"
rm "$MNT/outage" "$MNT/outage2"
# Mounts that cannot work: one line, exit 1, no mount left behind.
mkdir "$WORK/mnt2"
for bad in "nfs://127.0.0.1/no/such/export?version=3&nfsport=${UDCFS_NFS_PORT:-32049}&mountport=${UDCFS_MNT_PORT:-32048}" \
	"nfs://127.0.0.1/x?version=3&nfsport=9&mountport=7"; do
	rc=0
	"$UDCFS" -f "$bad" "$WORK/mnt2" >"$WORK/bad.out" 2>&1 || rc=$?
	[ "$rc" = 1 ] || fail "faults: udcfs $bad exited $rc, not 1: $(cat "$WORK/bad.out")"
	[ "$(wc -l <"$WORK/bad.out")" -le 2 ] || fail "faults: udcfs $bad said more than a line: $(cat "$WORK/bad.out")"
	! grep -qs " $WORK/mnt2 " /proc/mounts || fail "faults: udcfs $bad left a mount behind"
done
say "faults: a stale directory dropped and found again; server down: stat failed with EIO after $took, udcfs stayed up and served again after the restart; bad export and unreachable server: exit 1 ($(elapsed "$t"))"

# ---- 11. a server that sends garbage ----
# tests/badserver.py, a fake NFSv3 server on loopback, lists its export's root as MODE says:
# `good` (alpha, beta: the control), `slash` (a name with '/'), `loop` (READDIRPLUS cookies that
# lead round a cycle, never eof), `short` (a reply cut in the middle of an entry). A bad listing
# must be an error to ls, udcfs must stay up, and nothing from it may be kept: the name cache
# stays empty (a loop's first page is well-formed: the kernel may look up its two names), and
# after SIGUSR1 switches the server to `good`, with the root's attributes (so its verifier)
# unchanged, a second ls must list alpha and beta, which it would not if udcfs had kept pages
# of the bad listing.
t=$(date +%s.%N)
bad_report=
i=0
for mode in good slash loop short; do
	mport=$((32150 + 2 * i)) nport=$((32151 + 2 * i)) i=$((i + 1))
	bmnt=$WORK/bad.$mode blog=$WORK/bad.$mode.log slog=$WORK/badserver.$mode.log
	mkdir "$bmnt"
	python3 "$HERE/badserver.py" "$mport" "$nport" "$mode" "$slog" 2>>"$slog" &
	bs_pid=$!
	MIX_PIDS+=("$bs_pid") # the trap kills it
	for _ in $(seq 50); do
		grep -qs '^listening:' "$slog" && break
		kill -0 "$bs_pid" 2>/dev/null || fail "garbage: badserver.py $mode did not start: $(cat "$slog")"
		sleep 0.1
	done
	"$UDCFS" -f -o stats,timeo=10,retrans=1 \
		"nfs://127.0.0.1/export?version=3&nfsport=$nport&mountport=$mport" "$bmnt" 2>"$blog" &
	bu_pid=$!
	MIX_PIDS+=("$bu_pid") # the trap's SIGTERM makes it unmount
	for _ in $(seq 100); do
		grep -qs " $bmnt fuse" /proc/mounts && break
		kill -0 "$bu_pid" 2>/dev/null || fail "garbage: udcfs did not mount badserver.py $mode: $(cat "$blog")"
		sleep 0.05
	done
	grep -qs " $bmnt fuse" /proc/mounts || fail "garbage: udcfs did not mount badserver.py $mode within 5 s"
	rc=0
	out=$(timeout 10 ls "$bmnt" 2>&1) || rc=$?
	[ "$rc" != 124 ] || fail "garbage: ls of the $mode listing hung (10 s)"
	kill -0 "$bu_pid" 2>/dev/null || fail "garbage: udcfs died on the $mode listing: $(tail -5 "$blog")"
	if [ "$mode" = good ]; then
		[ "$rc" = 0 ] && [ "$(echo $out)" = "alpha beta" ] || fail "garbage: ls of the good listing: $out (exit $rc)"
	else
		[ "$rc" != 0 ] || fail "garbage: ls of the $mode listing succeeded: $out"
		case $out in
		*'Input/output error'*) err=EIO ;;
		*'Invalid argument'*) err=EINVAL ;;
		*'Too many levels of symbolic links'*) err=ELOOP ;;
		*) fail "garbage: ls of the $mode listing failed with an unexpected error: $out" ;;
		esac
		dentries=$(field "$(stats_line "$blog" "$bu_pid" udcfs-stats:)" nr_dentry)
		[ "$dentries" -le "$([ "$mode" = loop ] && echo 2 || echo 0)" ] ||
			fail "garbage: after the $mode listing udcfs caches $dentries names"
		kill -USR1 "$bs_pid" # the server now lists alpha and beta, under the same attributes
		for _ in $(seq 50); do
			grep -qs '^mode good' "$slog" && break
			sleep 0.1
		done
		out2=$(timeout 10 ls "$bmnt" 2>&1) ||
			fail "garbage: ls after the server's $mode listing turned good: $out2"
		[ "$(echo $out2)" = "alpha beta" ] ||
			fail "garbage: after the server's $mode listing turned good, ls lists: $(echo $out2) (pages of the $mode listing were kept)"
		bad_report="$bad_report $mode: $err, $dentries names cached;"
	fi
	fusermount3 -u "$bmnt" || fusermount3 -u -z "$bmnt"
	wait "$bu_pid" || fail "garbage: udcfs on the $mode server exited $?: $(tail -5 "$blog")"
	kill "$bs_pid"
	wait "$bs_pid" || true
	MIX_PIDS=()
done
say "garbage (a fake server, tests/badserver.py): good: ls lists alpha beta;$bad_report udcfs stayed up, and once the server listed alpha beta again, so did ls ($(elapsed "$t"))"
