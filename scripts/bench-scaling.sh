#!/usr/bin/env bash
# Thread scaling against the machine's own, on a many-core machine, from a prebuilt harness.
#
#   scripts/bench-scaling.sh BINARY OUTDIR [--max-threads N] [--runs R] [--full-extras]
#
# BINARY: a release `udcache-bench` (built elsewhere: `cargo build --release -p udcache-bench`,
# then target/release/udcache-bench); OUTDIR: where the results go (made if missing).
#
# Runs R (default 5) full runs of `make-j --json --max-threads N` (default N = 16), then one
# run each of `make-j-reval` (full), `lookup` and `map-lookup` (`--quick`: their full runs
# spend minutes in the locked baselines at 16 threads; `--full-extras` runs them full too),
# all with `--json --max-threads N`. Each run's whole output goes to
# OUTDIR/<scenario>.<run>.jsonl, each summary line (the last) to OUTDIR/summaries.jsonl, the
# tables below to OUTDIR/table.txt. It prints, per run, scaling_2t, machine_scaling_2t,
# scaling_2t_of_machine, ratio_vs_mutex_2t, their N-thread counterparts and
# machine_line_round_trip_ns, then make-j's medians; then make-j's phases per run
# (start_share, first_compile_share, coalesced_wait_share, slow_compile_share, tail_share,
# steady_compile_us at 1, 2 and N threads; coalesced misses and sleeps). Needs bash and
# python3 only. Takes about 5 minutes on 16 cores (make-j ~25 s a run); with
# --full-extras well over 10 (lookup alone over 4 minutes, map-lookup longer).
set -euo pipefail

usage() {
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}

[ $# -ge 2 ] || usage
bin=$1
out=$2
shift 2
threads=16
runs=5
extras_mode=--quick
while [ $# -gt 0 ]; do
    case $1 in
        --max-threads) threads=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --full-extras) extras_mode=; shift ;;
        *) usage ;;
    esac
done
[ -x "$bin" ] || { echo "bench-scaling: $bin is not an executable" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bench-scaling: python3 is needed" >&2; exit 2; }
mkdir -p "$out"
summaries=$out/summaries.jsonl
: >"$summaries"

# run NAME TAG ARGS...: one run, its output kept, its summary line appended.
run() {
    local name=$1 tag=$2
    shift 2
    local file=$out/$name.$tag.jsonl start=$SECONDS
    "$bin" "$name" --json --max-threads "$threads" "$@" >"$file"
    tail -n 1 "$file" >>"$summaries"
    echo "$name $tag: $((SECONDS - start)) s" >&2
}

echo "bench-scaling: $(nproc) CPUs, $(uname -r), started $(date -u +%FT%TZ)" >&2
for i in $(seq 1 "$runs"); do
    run make-j "$i"
done
run make-j-reval 1
run lookup 1 $extras_mode
run map-lookup 1 $extras_mode
echo "bench-scaling: done in $SECONDS s" >&2

python3 - "$summaries" "$threads" <<'EOF' | tee "$out/table.txt"
import json, statistics, sys

path, n = sys.argv[1], int(sys.argv[2])
rows = [json.loads(line) for line in open(path)]
cols = [c for t in (2, n) for c in (f"scaling_{t}t", f"machine_scaling_{t}t",
                                    f"scaling_{t}t_of_machine", f"ratio_vs_mutex_{t}t")]
cols = list(dict.fromkeys(cols))  # N = 2: the columns once
cols.append("machine_line_round_trip_ns")

def cell(v):
    if v is None:
        return "-"
    return str(v) if isinstance(v, int) else f"{v:.3f}"

head = ["scenario", "run"] + cols
table = []
count = {}
for r in rows:
    name = r["scenario"]
    count[name] = count.get(name, 0) + 1
    table.append([name, str(count[name])] + [cell(r.get(c)) for c in cols])
makej = [r for r in rows if r["scenario"] == "make-j"]
if makej:
    medians = []
    for c in cols:
        vals = [r[c] for r in makej if r.get(c) is not None]
        medians.append(cell(statistics.median(vals)) if vals else "-")
    table.append(["make-j", "median"] + medians)

def show(head, table):
    widths = [max(len(x) for x in col) for col in zip(head, *table)]
    for line in [head] + table:
        print("  ".join(x.rjust(w) for x, w in zip(line, widths)))

show(head, table)
# Where make-j's threads spend a measurement (see the make-j scenario's docs).
phases = [f"{f}_{t}t" for t in dict.fromkeys((1, 2, n))
          for f in ("start_share", "first_compile_share", "coalesced_wait_share", "slow_compile_share", "tail_share",
                    "steady_compile_us")]
phases += ["coalesced_misses", "coalesced_sleeps"]
print()
show(["make-j run"] + phases,
     [[str(i + 1)] + [cell(r.get(c)) for c in phases] for i, r in enumerate(makej)])
EOF
