#!/usr/bin/env bash
# Side-by-side benchmark: crashtest vs madsim vs turmoil on the same workloads, in one run.
#
# Builds the three benchmark binaries in release (crashtest-bench in the workspace's target
# directory, madsim-bench with --cfg madsim in bench/target-madsim, turmoil-bench in
# bench/target-turmoil), runs every workload of every simulator in a process of its own
# (so each peak-memory figure is that workload's), then the sweep-scaling measurement, and
# prints the figures, the ratios crashtest/madsim and crashtest/turmoil, and whether the
# targets are met. See bench/compare/README.md.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: bench/compare/run.sh [--runs N] [--workload NAME]... [--out DIR]

  --runs N         runs of each workload; each binary reports the median (default 3)
  --workload NAME  only these workloads: pingpong timers spawn fanout seeds sweep
                   (default: all; "sweep" is the 1-vs-2-thread and 1-vs-2-process
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
ALL_WORKLOADS=(pingpong timers spawn fanout seeds sweep)
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

# Runs one workload of one simulator; its JSON line goes to $OUT/<sim>.<file>.json. A binary
# that does not know the workload (clap's or our "invalid value" refusal, exit status 2)
# leaves $OUT/<sim>.<file>.na instead: the figure is shown as n/a, never made up.
measure() {
    local sim=$1 workload=$2 file=$3 status=0
    echo "  $sim $workload (--runs $RUNS)..." >&2
    "${BIN[$sim]}" --workload "$workload" --runs "$RUNS" \
        >"$OUT/$sim.$file.json" 2>"$OUT/$sim.$file.log" || status=$?
    if ((status == 2)) && grep -q "invalid value" "$OUT/$sim.$file.log"; then
        rm -f "$OUT/$sim.$file.json"
        echo "$sim-bench has no '$workload' workload yet" >"$OUT/$sim.$file.na"
    elif ((status != 0)); then
        tail -n 30 "$OUT/$sim.$file.log" >&2
        die "$sim $workload failed with status $status (log: $OUT/$sim.$file.log)"
    elif [[ ! -s $OUT/$sim.$file.json ]]; then
        die "$sim $workload printed no result line (log: $OUT/$sim.$file.log)"
    fi
}

# Sweep scaling: the seeds workload in one process on one thread, then spread over two
# threads of one process (the target's definition: a sweep runner's threads), then in two
# processes at once (which no state shared inside a process can slow down, so the two
# figures side by side show what sharing a process costs). Each process is also timed by
# bash (wall, user and system seconds, in <sim>.<file>.time), so the report can tell how
# many cores the processes actually got on a shared machine.
sweep_process() {
    local sim=$1 file=$2 workload=$3 TIMEFORMAT='%R %U %S'
    {
        time "${BIN[$sim]}" --workload "$workload" --runs "$RUNS" \
            >"$OUT/$sim.$file.json" 2>"$OUT/$sim.$file.log"
    } 2>"$OUT/$sim.$file.time"
}

sweep() {
    local sim=$1 pid_a pid_b status=0
    echo "  $sim seeds on 1 thread, on 2 threads, then in 2 processes at once (--runs $RUNS)..." >&2
    sweep_process "$sim" sweep-1 seeds || die "$sim's seeds run failed (log: $OUT/$sim.sweep-1.log)"
    sweep_process "$sim" sweep-threads seeds-threads ||
        die "$sim's seeds-threads run failed (log: $OUT/$sim.sweep-threads.log)"
    sweep_process "$sim" sweep-2a seeds &
    pid_a=$!
    sweep_process "$sim" sweep-2b seeds &
    pid_b=$!
    wait "$pid_a" || status=$?
    wait "$pid_b" || status=$?
    ((status == 0)) || die "$sim's concurrent seeds runs failed (logs: $OUT/$sim.sweep-2?.log)"
    for file in sweep-1 sweep-threads sweep-2a sweep-2b; do
        [[ -s $OUT/$sim.$file.json ]] || die "$sim's seeds run printed no result line (log: $OUT/$sim.$file.log)"
    done
}

echo "measuring in $OUT (each workload in its own process, simulators back to back)..." >&2
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
for workload in "${WORKLOADS[@]}"; do
    [[ $workload == sweep ]] && continue
    for sim in "${SIMS[@]}"; do
        measure "$sim" "$workload" "$workload"
    done
done
if [[ " ${WORKLOADS[*]} " == *" sweep "* ]]; then
    for sim in "${SIMS[@]}"; do
        sweep "$sim"
    done
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

# --- report ------------------------------------------------------------------------------

# One tab-separated line of a result file's fields, through python3 or jq.
FIELDS=(rate rate_unit median_wall_s virtual_s virtual_per_wall peak_rss_mib what note)
fields() {
    if [[ $JSON_TOOL == python3 ]]; then
        python3 -c '
import json, sys
line = json.loads(open(sys.argv[1]).readline())
print("\t".join("" if line.get(k) is None else str(line[k]) for k in sys.argv[2:]))
' "$1" "${FIELDS[@]}"
    else
        head -n 1 "$1" | jq -r '[.rate, .rate_unit, .median_wall_s, .virtual_s,
            .virtual_per_wall, .peak_rss_mib, .what, .note] | map(. // "" | tostring) | @tsv'
    fi
}

# Every figure as one tab-separated record: sim, file, then FIELDS; n/a files as sim, file,
# "n/a", reason.
RECORDS=$OUT/records.tsv
: >"$RECORDS"
for f in "$OUT"/*.json; do
    [[ -e $f ]] || continue
    base=$(basename "$f" .json)
    printf '%s\t%s\t%s\n' "${base%%.*}" "${base#*.}" "$(fields "$f")" >>"$RECORDS"
done
for f in "$OUT"/*.time; do
    [[ -e $f ]] || continue
    base=$(basename "$f" .time)
    read -r real user sys <"$f"
    printf '%s\ttime:%s\t%s\t%s\t%s\n' "${base%%.*}" "${base#*.}" "$real" "$user" "$sys" >>"$RECORDS"
done
for f in "$OUT"/*.na; do
    [[ -e $f ]] || continue
    base=$(basename "$f" .na)
    printf '%s\t%s\tn/a\t%s\n' "${base%%.*}" "${base#*.}" "$(cat "$f")" >>"$RECORDS"
done

echo
echo "crashtest vs madsim $MADSIM_VERSION vs turmoil $TURMOIL_VERSION: median of $RUNS runs per figure," \
    "$(nproc 2>/dev/null || echo '?') cores, load average $LOAD_BEFORE before, $LOAD_AFTER after"
echo "(wall-clock figures on a shared machine are noisy; compare within one run only)"
awk -F'\t' -v workloads="${WORKLOADS[*]}" -f "$COMPARE/report.awk" "$RECORDS"
echo
echo "raw JSON lines and logs: $OUT"
