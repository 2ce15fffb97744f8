#!/usr/bin/env bash
# Side-by-side benchmark: crashtest vs madsim vs turmoil on the same workloads, in one run.
#
# Builds the three benchmark binaries in release (crashtest-bench in the workspace's target
# directory, madsim-bench with --cfg madsim in bench/target-madsim, turmoil-bench in
# bench/target-turmoil), then measures in rounds: each round runs every workload of every
# simulator in a process of its own (so each peak-memory figure is that workload's), the
# simulators in an order that rotates from round to round and workload to workload, then the
# sweep-scaling measurement, likewise rotated. Each process reports its first (cold) run and
# the median of its runs (warm). The report gives each ratio crashtest/madsim and
# crashtest/turmoil as the median of the per-round ratios with their minimum and maximum, the
# load average beside every figure, and whether the targets are met. See
# bench/compare/README.md.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: bench/compare/run.sh [--rounds R] [--runs N] [--workload NAME]... [--out DIR]

  --rounds R       rounds; each measures every simulator once per workload, in an order
                   that rotates from round to round (default 5)
  --runs N         runs of each workload in each process; the first is the cold figure,
                   the median the warm one (default 3)
  --workload NAME  only these workloads: pingpong timers spawn fanout fanout-jitter seeds
                   sweep (default: all; "sweep" is the 1-vs-2-thread and 1-vs-2-process
                   scaling of seeds)
  --out DIR        where the raw JSON lines and logs go
                   (default: bench/target-compare/<date-time>, git-ignored)
EOF
}

die() {
    echo "run.sh: $*" >&2
    exit 1
}

RUNS=3
ROUNDS=5
WORKLOADS=()
OUT=""
while (($# > 0)); do
    case "$1" in
    --runs)
        (($# >= 2)) || die "--runs needs a value"
        RUNS=$2
        shift 2
        ;;
    --runs=*)
        RUNS=${1#--runs=}
        shift
        ;;
    --rounds)
        (($# >= 2)) || die "--rounds needs a value"
        ROUNDS=$2
        shift 2
        ;;
    --rounds=*)
        ROUNDS=${1#--rounds=}
        shift
        ;;
    --workload)
        (($# >= 2)) || die "--workload needs a value"
        WORKLOADS+=("$2")
        shift 2
        ;;
    --workload=*)
        WORKLOADS+=("${1#--workload=}")
        shift
        ;;
    --out)
        (($# >= 2)) || die "--out needs a value"
        OUT=$2
        shift 2
        ;;
    --out=*)
        OUT=${1#--out=}
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        usage >&2
        die "unexpected argument '$1'"
        ;;
    esac
done

[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 1 && RUNS <= 100)) || die "--runs takes 1..100, not '$RUNS'"
[[ $ROUNDS =~ ^[0-9]+$ ]] && ((ROUNDS >= 1 && ROUNDS <= 100)) || die "--rounds takes 1..100, not '$ROUNDS'"
ALL_WORKLOADS=(pingpong timers spawn fanout fanout-jitter seeds sweep)
((${#WORKLOADS[@]} > 0)) || WORKLOADS=("${ALL_WORKLOADS[@]}")
for w in "${WORKLOADS[@]}"; do
    [[ " ${ALL_WORKLOADS[*]} " == *" $w "* ]] || die "unknown workload '$w' (known: ${ALL_WORKLOADS[*]})"
done

command -v cargo >/dev/null 2>&1 ||
    die "cargo not found on PATH: install a Rust toolchain (rustup) and run this again"
if command -v python3 >/dev/null 2>&1; then
    JSON_TOOL=python3
elif command -v jq >/dev/null 2>&1; then
    JSON_TOOL=jq
else
    die "reading the results needs python3 or jq; neither is on PATH"
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
COMPARE=$ROOT/bench/compare
CRASHTEST_TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
MADSIM_TARGET=$ROOT/bench/target-madsim
TURMOIL_TARGET=$ROOT/bench/target-turmoil
[[ -n $OUT ]] || OUT=$ROOT/bench/target-compare/$(date +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

SIMS=(crashtest madsim turmoil)
declare -A BIN=(
    [crashtest]=$CRASHTEST_TARGET/release/crashtest-bench
    [madsim]=$MADSIM_TARGET/release/madsim-bench
    [turmoil]=$TURMOIL_TARGET/release/turmoil-bench
)

# --- build -------------------------------------------------------------------------------

build() {
    local name=$1
    shift
    echo "building $name (release)..." >&2
    if ! "$@" >"$OUT/build-$name.log" 2>&1; then
        tail -n 30 "$OUT/build-$name.log" >&2
        die "building $name failed (full log: $OUT/build-$name.log)"
    fi
}

build crashtest bash -c 'cd "$1" && cargo build --release -p crashtest-bench' _ "$ROOT"
build madsim env RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }--cfg madsim" \
    CARGO_TARGET_DIR="$MADSIM_TARGET" \
    cargo build --release --manifest-path "$COMPARE/madsim-bench/Cargo.toml"
build turmoil env CARGO_TARGET_DIR="$TURMOIL_TARGET" \
    cargo build --release --manifest-path "$COMPARE/turmoil-bench/Cargo.toml"
for sim in "${SIMS[@]}"; do
    [[ -x ${BIN[$sim]} ]] || die "the build did not produce ${BIN[$sim]}"
done

# The crate versions actually built, read from each project's lock file.
locked_version() {
    awk -v crate="$2" '$0 == "name = \"" crate "\"" { getline; gsub(/version = |"/, ""); print; exit }' "$1"
}
MADSIM_VERSION=$(locked_version "$COMPARE/madsim-bench/Cargo.lock" madsim)
TURMOIL_VERSION=$(locked_version "$COMPARE/turmoil-bench/Cargo.lock" turmoil)

# --- measure -----------------------------------------------------------------------------

# The 1-minute load average now, as a record's last field.
load_now() {
    cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo "?"
}

# The simulators in round `r`'s order for the `k`th measurement: rotated by r + k, so every
# simulator goes first, second and third as often as the rounds allow, and a load that
# changes during a round does not always fall on the same one.
rotated() {
    local shift=$((($1 + $2) % ${#SIMS[@]})) i
    for ((i = 0; i < ${#SIMS[@]}; i++)); do
        printf '%s ' "${SIMS[(i + shift) % ${#SIMS[@]}]}"
    done
}

# Runs one workload of one simulator; its JSON line goes to $OUT/<round>.<sim>.<file>.json
# and the load average when it started to .load. A binary that does not know the workload
# (clap's or our "invalid value" refusal, exit status 2) leaves .na instead: the figure is
# shown as n/a, never made up.
measure() {
    local round=$1 sim=$2 workload=$3 status=0 base
    base=$OUT/$round.$sim.$workload
    echo "  round $round: $sim $workload (--runs $RUNS)..." >&2
    load_now >"$base.load"
    "${BIN[$sim]}" --workload "$workload" --runs "$RUNS" >"$base.json" 2>"$base.log" || status=$?
    if ((status == 2)) && grep -q "invalid value" "$base.log"; then
        rm -f "$base.json"
        echo "$sim-bench has no '$workload' workload yet" >"$base.na"
    elif ((status != 0)); then
        tail -n 30 "$base.log" >&2
        die "$sim $workload failed with status $status (log: $base.log)"
    elif [[ ! -s $base.json ]]; then
        die "$sim $workload printed no result line (log: $base.log)"
    fi
}

# Sweep scaling: the seeds workload in one process on one thread, then spread over two
# threads of one process (the target's definition: a sweep runner's threads), then in two
# processes at once (which no state shared inside a process can slow down, so the two
# figures side by side show what sharing a process costs). Each process is also timed by
# bash (wall, user and system seconds, in .time), so the report can tell how many cores the
# processes got on a shared machine, and estimate the scaling from CPU time alone.
sweep_process() {
    local round=$1 sim=$2 file=$3 workload=$4 base TIMEFORMAT='%R %U %S'
    base=$OUT/$round.$sim.$file
    load_now >"$base.load"
    {
        time "${BIN[$sim]}" --workload "$workload" --runs "$RUNS" >"$base.json" 2>"$base.log"
    } 2>"$base.time"
}

sweep() {
    local round=$1 sim=$2 pid_a pid_b status=0 file
    echo "  round $round: $sim seeds on 1 thread, on 2 threads, then in 2 processes at once (--runs $RUNS)..." >&2
    sweep_process "$round" "$sim" sweep-1 seeds ||
        die "$sim's seeds run failed (log: $OUT/$round.$sim.sweep-1.log)"
    sweep_process "$round" "$sim" sweep-threads seeds-threads ||
        die "$sim's seeds-threads run failed (log: $OUT/$round.$sim.sweep-threads.log)"
    sweep_process "$round" "$sim" sweep-2a seeds &
    pid_a=$!
    sweep_process "$round" "$sim" sweep-2b seeds &
    pid_b=$!
    wait "$pid_a" || status=$?
    wait "$pid_b" || status=$?
    ((status == 0)) || die "$sim's concurrent seeds runs failed (logs: $OUT/$round.$sim.sweep-2?.log)"
    for file in sweep-1 sweep-threads sweep-2a sweep-2b; do
        [[ -s $OUT/$round.$sim.$file.json ]] ||
            die "$sim's seeds run printed no result line (log: $OUT/$round.$sim.$file.log)"
    done
}

echo "measuring in $OUT: $ROUNDS rounds, each workload of each simulator in its own process," \
    "simulators in rotating order..." >&2
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
for ((round = 1; round <= ROUNDS; round++)); do
    k=0
    for workload in "${WORKLOADS[@]}"; do
        k=$((k + 1))
        if [[ $workload == sweep ]]; then
            for sim in $(rotated "$round" "$k"); do
                sweep "$round" "$sim"
            done
        else
            for sim in $(rotated "$round" "$k"); do
                measure "$round" "$sim" "$workload"
            done
        fi
    done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

# --- report ------------------------------------------------------------------------------

# One tab-separated line of a result file's fields, through python3 or jq.
FIELDS=(rate rate_unit cold_rate peak_rss_mib median_wall_s virtual_s what note)
fields() {
    if [[ $JSON_TOOL == python3 ]]; then
        python3 -c '
import json, sys
line = json.loads(open(sys.argv[1]).readline())
print("\t".join("" if line.get(k) is None else str(line[k]) for k in sys.argv[2:]))
' "$1" "${FIELDS[@]}"
    else
        head -n 1 "$1" | jq -r '[.rate, .rate_unit, .cold_rate, .peak_rss_mib, .median_wall_s,
            .virtual_s, .what, .note] | map(. // "" | tostring) | @tsv'
    fi
}

# Every figure as one tab-separated record: round, sim, file, load, then FIELDS; a process
# bash timed as round, sim, "time:" file, load, wall s, user s, system s; an n/a as round,
# sim, file, load, "n/a", reason. The load is the 1-minute load average when it started.
RECORDS=$OUT/records.tsv
: >"$RECORDS"
for f in "$OUT"/*.json "$OUT"/*.time "$OUT"/*.na; do
    [[ -e $f ]] || continue
    name=$(basename "$f")
    ext=${name##*.}
    base=${name%.*}
    round=${base%%.*}
    rest=${base#*.}
    sim=${rest%%.*}
    file=${rest#*.}
    load=$(cat "$OUT/$base.load" 2>/dev/null || echo "?")
    case $ext in
    json) printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$sim" "$file" "$load" "$(fields "$f")" ;;
    time)
        read -r real user sys <"$f"
        printf '%s\t%s\ttime:%s\t%s\t%s\t%s\t%s\n' "$round" "$sim" "$file" "$load" "$real" "$user" "$sys"
        ;;
    na) printf '%s\t%s\t%s\t%s\tn/a\t%s\n' "$round" "$sim" "$file" "$load" "$(cat "$f")" ;;
    esac
done >>"$RECORDS"

echo
echo "crashtest vs madsim $MADSIM_VERSION vs turmoil $TURMOIL_VERSION: $ROUNDS rounds in rotating order," \
    "$RUNS runs per process, $(nproc 2>/dev/null || echo '?') cores," \
    "load average $LOAD_BEFORE before, $LOAD_AFTER after"
echo "(ratios are medians of per-round ratios, [min-max] over rounds; targets apply to the cold figures)"
awk -F'\t' -v workloads="${WORKLOADS[*]}" -v rounds="$ROUNDS" -f "$COMPARE/report.awk" "$RECORDS"
echo
echo "raw JSON lines and logs: $OUT"
