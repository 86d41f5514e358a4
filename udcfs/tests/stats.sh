# stats.sh: reading what udcfs -o stats prints, for the mount tests and benchmarks (sourced).

# stats_line LOG PID PREFIX: asks the udcfs PID (whose stderr goes to LOG) for its statistics
# with SIGUSR1, waits (4 s at most) for a new line starting with PREFIX ("udcfs-stats:", or
# "udcfs-nfs:", printed after it over NFS) and prints the newest such line.
stats_line() {
	local log=$1 pid=$2 prefix=$3 n
	n=$(grep -c "^$prefix" "$log" || true)
	kill -USR1 "$pid"
	for _ in $(seq 200); do
		[ "$(grep -c "^$prefix" "$log" || true)" -gt "$n" ] && break
		sleep 0.02
	done
	{ grep "^$prefix" "$log" || true; } | tail -1
}

# field LINE NAME: the number after " NAME=" in LINE.
field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" <<<"$1"; }
