#!/usr/bin/env bash
# ganesha.sh — start/stop a private nfs-ganesha (FSAL_VFS) on loopback for
# the udcfs NFS tests and benchmarks.
#
#   ganesha.sh start STATEDIR EXPORTDIR [EXPORTDIR...]
#       Starts rpcbind if it is not running (and remembers that it did),
#       writes STATEDIR/ganesha.conf, starts ganesha.nfsd in the foreground
#       (in the background of this shell), waits until every export answers
#       (bounded by UDCFS_NFS_START_TIMEOUT, default 30 s) and prints one
#       line per export: the libnfs URL of the export, e.g.
#         nfs://127.0.0.1/srv/x?version=3&nfsport=32049&mountport=32048
#   ganesha.sh stop STATEDIR
#       Stops that ganesha (SIGTERM, then SIGKILL after
#       UDCFS_NFS_STOP_TIMEOUT, default 20 s) and rpcbind if this script
#       started it.
#   ganesha.sh url STATEDIR
#       Prints the URL(s) of the running instance again.
#   ganesha.sh status STATEDIR
#       Exit 0 if that ganesha runs, 1 otherwise.
#   ganesha.sh stats STATEDIR
#       Server-side NFSv3 per-operation counters since start (or the last
#       stats-reset), one line per operation that occurred:
#         OP TOTAL ERRORS DUPS AVG_MS MIN_MS MAX_MS
#       (ganesha's dbus GetFULLV3Stats, through a private dbus-daemon that
#       start runs in STATEDIR; needs UDCFS_NFS_STATS=1, the default).
#   ganesha.sh stats-reset STATEDIR
#       Zero those counters.
#
# Env: UDCFS_NFS_PORT (default 32049), UDCFS_MNT_PORT (default 32048),
#      UDCFS_NFS_ATTR_EXPIRATION (export Attr_Expiration_Time, default 0),
#      UDCFS_NFS_LOG_COMPONENTS (extra log levels, e.g. "DISPATCH = FULL_DEBUG;"),
#      UDCFS_NFS_START_TIMEOUT (30), UDCFS_NFS_STOP_TIMEOUT (20) in seconds,
#      UDCFS_NFS_STATS (1: private dbus-daemon + per-op counters; 0: none).
# Must run as root. Everything the server writes (config, log, pid file,
# NFSv4 recovery dir) lives in STATEDIR; it binds to 127.0.0.1 only.
# On failure: one line "ganesha.sh: error: ..." on stderr (plus the log's
# tail where there is one) and a non-zero exit.

set -u
set -o pipefail

PROG=ganesha.sh
NFS_PORT=${UDCFS_NFS_PORT:-32049}
MNT_PORT=${UDCFS_MNT_PORT:-32048}
ATTR_EXP=${UDCFS_NFS_ATTR_EXPIRATION:-0}
START_TIMEOUT=${UDCFS_NFS_START_TIMEOUT:-30}
STOP_TIMEOUT=${UDCFS_NFS_STOP_TIMEOUT:-20}
HOST=127.0.0.1
# extra LOG { Components {} } lines, e.g. "DISPATCH = FULL_DEBUG;" to log
# every request's program/version/procedure number
LOG_COMPONENTS=${UDCFS_NFS_LOG_COMPONENTS:-}
STATS=${UDCFS_NFS_STATS:-1}

die() {
    echo "$PROG: error: $*" >&2
    exit 1
}

die_log() {
    local log=$1
    shift
    echo "$PROG: error: $*" >&2
    if [[ -s $log ]]; then
        echo "--- last lines of $log ---" >&2
        tail -n 15 "$log" >&2
    fi
    exit 1
}

usage() {
    echo "usage: $PROG start STATEDIR EXPORTDIR [EXPORTDIR...] | stop STATEDIR | url STATEDIR | status STATEDIR | stats STATEDIR | stats-reset STATEDIR" >&2
    exit 2
}

# pid from a pid file if that process is alive and is COMM; else empty.
live_pid() {
    local file=$1 comm=$2 pid
    [[ -s $file ]] || return 0
    pid=$(tr -dc '0-9' <"$file")
    [[ -n $pid ]] || return 0
    [[ -r /proc/$pid/comm ]] || return 0
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm"* ]] || return 0
    # a zombie (killed, not yet reaped) does not count
    local st
    st=$(sed -E 's/^[0-9]+ \(.*\) (.).*/\1/' "/proc/$pid/stat" 2>/dev/null)
    [[ -n $st && $st != Z && $st != X ]] || return 0
    echo "$pid"
}

port_busy() {
    # any TCP listener on that port (any address)
    ss -Htln "sport = :$1" 2>/dev/null | grep -q .
}

url_for() {
    echo "nfs://$HOST$1?version=3&nfsport=$2&mountport=$3"
}

rpcbind_running() {
    # rpcbind answers on 127.0.0.1:111
    rpcinfo -p "$HOST" >/dev/null 2>&1
}

start_rpcbind() {
    local state=$1
    if rpcbind_running; then
        # keep rpcbind.started if the live rpcbind is ours (restart after
        # a ganesha crash), so that stop still stops it
        [[ -n $(live_pid "$state/rpcbind.started" rpcbind) ]] || rm -f "$state/rpcbind.started"
        return 0
    fi
    rm -f "$state/rpcbind.started"
    command -v rpcbind >/dev/null || die "rpcbind not installed"
    # -f: foreground, so that $! is its pid. (No -h 127.0.0.1: Debian 12's
    # rpcbind aborts with a double free when given -h.)
    setsid rpcbind -f </dev/null >"$state/rpcbind.log" 2>&1 &
    local pid=$! i
    for ((i = 0; i < 50; i++)); do
        rpcbind_running && break
        kill -0 "$pid" 2>/dev/null || die_log "$state/rpcbind.log" "rpcbind exited at start"
        sleep 0.1
    done
    rpcbind_running || die_log "$state/rpcbind.log" "rpcbind does not answer after 5 s"
    echo "$pid" >"$state/rpcbind.started"
}

# A private system bus for ganesha's dbus interface (stats), so that
# nothing touches /run/dbus. Sets DBUS_ADDR (empty when not running).
DBUS_ADDR=""
start_dbus() {
    local state=$1 sock=$1/dbus.sock
    rm -f "$state/dbus.pid" "$sock"
    [[ $STATS == 1 ]] || return 0
    if ! command -v dbus-daemon >/dev/null; then
        echo "$PROG: warning: no dbus-daemon; server counters off" >&2
        STATS=0
        return 0
    fi
    if ((${#sock} > 100)); then
        echo "$PROG: warning: $sock too long for a socket; server counters off" >&2
        STATS=0
        return 0
    fi
    cat >"$state/dbus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$sock</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="root"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
EOF
    setsid dbus-daemon --config-file="$state/dbus.conf" --nofork --nopidfile \
        </dev/null >"$state/dbus.log" 2>&1 &
    local pid=$! i
    for ((i = 0; i < 50; i++)); do
        [[ -S $sock ]] && break
        kill -0 "$pid" 2>/dev/null || die_log "$state/dbus.log" "private dbus-daemon exited at start (UDCFS_NFS_STATS=0 to do without)"
        sleep 0.1
    done
    [[ -S $sock ]] || die_log "$state/dbus.log" "private dbus-daemon: no socket after 5 s"
    echo "$pid" >"$state/dbus.pid"
    DBUS_ADDR=unix:path=$sock
}

stop_dbus() {
    local state=$1 pid
    pid=$(live_pid "$state/dbus.pid" dbus-daemon)
    [[ -z $pid ]] || kill -TERM "$pid" 2>/dev/null
    rm -f "$state/dbus.pid" "$state/dbus.sock"
}

write_config() {
    local state=$1
    shift
    local plugins=""
    for d in /usr/lib/x86_64-linux-gnu/ganesha /usr/lib64/ganesha /usr/lib/ganesha; do
        if [[ -e $d/libfsalvfs.so ]]; then
            plugins=$d
            break
        fi
    done
    [[ -n $plugins ]] || die "libfsalvfs.so not found (install nfs-ganesha-vfs)"
    {
        cat <<EOF
# written by udcfs/tests/ganesha.sh — regenerated at every start
NFS_CORE_PARAM {
    Bind_addr = $HOST;
    NFS_Port = $NFS_PORT;
    MNT_Port = $MNT_PORT;
    Protocols = 3, 4;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
    Plugins_Dir = "$plugins";
    # distinct per instance, so two instances do not fight over the dbus name
    Dbus_Name_Prefix = "udcfs$NFS_PORT";
    # per-operation NFSv3 counters (read with: ganesha.sh stats STATEDIR)
    Enable_FULLV3_Stats = $([[ $STATS == 1 ]] && echo true || echo false);
    # NFSv3 MNT path = Pseudo (here equal to Path anyway)
    mount_path_pseudo = true;
}
NFSV4 {
    Graceless = true;
    RecoveryBackend = fs;
    RecoveryRoot = "$state/recov";
    Lease_Lifetime = 10;
}
MDCACHE {
    # re-read directory attributes (mtime/ctime) to notice changes made
    # to the exported directory behind ganesha's back
    Use_Getattr_Directory_Invalidation = true;
}
LOG {
    Default_Log_Level = EVENT;
    Components {
        ALL = EVENT;
        $LOG_COMPONENTS
    }
}
EOF
        local id=1 dir
        for dir in "$@"; do
            cat <<EOF
EXPORT {
    Export_Id = $id;
    Path = "$dir";
    Pseudo = "$dir";
    Protocols = 3, 4;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    Attr_Expiration_Time = $ATTR_EXP;
    FSAL { Name = VFS; }
    CLIENT { Clients = 127.0.0.1; Access_Type = RW; Squash = No_Root_Squash; }
}
EOF
            id=$((id + 1))
        done
    } >"$state/ganesha.conf"
}

cmd_start() {
    [[ $# -ge 2 ]] || usage
    local state=$1
    shift
    [[ $(id -u) -eq 0 ]] || die "must run as root"
    command -v ganesha.nfsd >/dev/null || die "ganesha.nfsd not installed"
    command -v nfs-ls >/dev/null || die "nfs-ls not installed (libnfs-utils)"
    mkdir -p "$state" || die "cannot create $state"
    state=$(realpath "$state")
    local dirs=() d
    for d in "$@"; do
        [[ -d $d ]] || die "export dir $d is not a directory"
        dirs+=("$(realpath "$d")")
    done
    [[ $NFS_PORT != "$MNT_PORT" ]] || die "UDCFS_NFS_PORT and UDCFS_MNT_PORT are equal"

    local pid
    pid=$(live_pid "$state/ganesha.pid" ganesha)
    [[ -z $pid ]] || die "ganesha already runs for $state (pid $pid); run '$PROG stop $state' first"
    rm -f "$state/ganesha.pid" "$state/urls"     # stale, from a crash
    port_busy "$NFS_PORT" && die "port $NFS_PORT (UDCFS_NFS_PORT) is already in use"
    port_busy "$MNT_PORT" && die "port $MNT_PORT (UDCFS_MNT_PORT) is already in use"

    mkdir -p "$state/recov" || die "cannot create $state/recov"
    start_rpcbind "$state"
    stop_dbus "$state"      # a stale one from a crash
    start_dbus "$state"
    write_config "$state" "${dirs[@]}"

    local log=$state/ganesha.log
    : >"$log"
    local t0=$SECONDS
    # -F: foreground (we background it); setsid so that a ^C in the test
    # shell does not hit it; its stdout/stderr go to the log too.
    DBUS_SYSTEM_BUS_ADDRESS=${DBUS_ADDR:-unix:path=$state/no-dbus.sock} \
        setsid ganesha.nfsd -F -f "$state/ganesha.conf" -L "$log" -p "$state/ganesha.pid" \
        -N NIV_EVENT </dev/null >>"$log" 2>&1 &
    pid=$!
    echo "$pid" >"$state/ganesha.pid.launch"

    local urls=() u ok i
    for d in "${dirs[@]}"; do
        urls+=("$(url_for "$d" "$NFS_PORT" "$MNT_PORT")")
    done
    for ((i = 0; ; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            stop_dbus "$state"
            cleanup_rpcbind "$state"
            die_log "$log" "ganesha.nfsd exited during start (see $log)"
        fi
        ok=1
        for u in "${urls[@]}"; do
            timeout 5 nfs-ls "$u" >/dev/null 2>&1 || { ok=0; break; }
        done
        [[ $ok == 1 ]] && break
        if ((SECONDS - t0 >= START_TIMEOUT)); then
            kill -KILL "$pid" 2>/dev/null
            stop_dbus "$state"
            cleanup_rpcbind "$state"
            die_log "$log" "export not answering after ${START_TIMEOUT}s (ganesha killed)"
        fi
        sleep 0.2
    done
    # ganesha writes its pid file itself; make sure it is the one we track
    echo "$pid" >"$state/ganesha.pid"
    rm -f "$state/ganesha.pid.launch"
    printf '%s\n' "${urls[@]}" | tee "$state/urls"
}

cleanup_rpcbind() {
    local state=$1 pid
    pid=$(live_pid "$state/rpcbind.started" rpcbind)
    if [[ -n $pid ]]; then
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$state/rpcbind.started"
}

cmd_stop() {
    [[ $# -eq 1 ]] || usage
    local state=$1
    [[ -d $state ]] || die "no state dir $state"
    local pid i
    pid=$(live_pid "$state/ganesha.pid" ganesha)
    [[ -n $pid ]] || pid=$(live_pid "$state/ganesha.pid.launch" ganesha)
    if [[ -n $pid ]]; then
        kill -TERM "$pid" 2>/dev/null
        for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "$PROG: ganesha pid $pid ignored SIGTERM for ${STOP_TIMEOUT}s; SIGKILL" >&2
            kill -KILL "$pid" 2>/dev/null
            for ((i = 0; i < 50; i++)); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
        fi
    fi
    rm -f "$state/ganesha.pid" "$state/ganesha.pid.launch" "$state/urls"
    stop_dbus "$state"
    cleanup_rpcbind "$state"
    return 0
}

cmd_url() {
    [[ $# -eq 1 ]] || usage
    [[ -s $1/urls ]] || die "no running instance recorded in $1"
    cat "$1/urls"
}

dbus_call() {
    local state=$1 method=$2
    [[ -n $(live_pid "$state/ganesha.pid" ganesha) ]] || die "no ganesha running for $state"
    [[ -S $state/dbus.sock && -n $(live_pid "$state/dbus.pid" dbus-daemon) ]] ||
        die "no private dbus for $state (started with UDCFS_NFS_STATS=0?)"
    local port
    port=$(sed -n 's/^ *NFS_Port = \([0-9]*\);/\1/p' "$state/ganesha.conf")
    DBUS_SYSTEM_BUS_ADDRESS=unix:path=$state/dbus.sock \
        timeout 10 dbus-send --system --print-reply \
        --dest="udcfs$port.org.ganesha.nfsd" /org/ganesha/nfsd/ExportMgr \
        "org.ganesha.nfsd.exportstats.$method" ||
        die "dbus-send $method failed"
}

cmd_stats() {
    [[ $# -eq 1 ]] || usage
    local out
    out=$(dbus_call "$1" GetFULLV3Stats) || exit 1
    # array of struct { string OP; uint64 total, errors, dups;
    #                   double avg, min, max (ms) }
    awk '
        $1 == "string" && $2 != "\"OK\"" { gsub(/"/, "", $2); op = $2; n = 0; next }
        op != "" && ($1 == "uint64" || $1 == "double") {
            v[++n] = $2
            if (n == 6) { printf "%s %s %s %s %s %s %s\n", op, v[1], v[2], v[3], v[4], v[5], v[6]; op = "" }
        }' <<<"$out"
}

cmd_stats_reset() {
    [[ $# -eq 1 ]] || usage
    dbus_call "$1" ResetStats >/dev/null || exit 1
}

cmd_status() {
    [[ $# -eq 1 ]] || usage
    [[ -n $(live_pid "$1/ganesha.pid" ganesha) ]]
}

[[ $# -ge 1 ]] || usage
cmd=$1
shift
case $cmd in
start) cmd_start "$@" ;;
stop) cmd_stop "$@" ;;
url) cmd_url "$@" ;;
status) cmd_status "$@" ;;
stats) cmd_stats "$@" ;;
stats-reset) cmd_stats_reset "$@" ;;
*) usage ;;
esac
