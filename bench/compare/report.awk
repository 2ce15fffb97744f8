# Prints run.sh's comparison tables from its records (tab-separated, one per result file):
#   sim, file, rate, rate_unit, median_wall_s, virtual_s, virtual_per_wall, peak_rss_mib,
#   what, note
# or, for a workload a binary does not have: sim, file, "n/a", reason;
# or, for a process bash timed: sim, "time:" file, wall s, user s, system s.
# Set `workloads` (space-separated, in order) with -v.
#
# A networked workload (pingpong, fanout, seeds) counts for crashtest only when its `what`
# says TCP: until crashtest's benchmark runs over its simulated TCP, its figure is listed in
# the notes but shown as n/a in the comparison, so no ratio compares unlike work.

function human(x) {
    if (x >= 999500) return sprintf("%.3gM", x / 1e6)
    if (x >= 999.5) return sprintf("%.3gk", x / 1e3)
    return sprintf("%.3g", x)
}

function has(sim, file) { return ((sim, file) in rate) }

function comparable(sim, file) {
    if (!has(sim, file)) return 0
    if (sim != "crashtest" || !(file in networked)) return 1
    return tolower(what[sim, file]) ~ /tcp/
}

function cell(sim, file) { return comparable(sim, file) ? human(rate[sim, file]) : "n/a" }

function ratio(file, other) {
    if (!comparable("crashtest", file) || !comparable(other, file)) return ""
    return rate["crashtest", file] / rate[other, file]
}

function verdict(r, target) {
    if (r == "") return "n/a"
    return r >= target ? "met" : "NOT met"
}

# Cores the 2-process pair of `sim` got (CPU seconds over the pair's wall seconds, as bash
# timed them), or -1 if they were not timed.
function pair_cores(sim,    wall_a, wall_b) {
    if (!((sim, "sweep-2a") in real) || !((sim, "sweep-2b") in real)) return -1
    wall_a = real[sim, "sweep-2a"]; wall_b = real[sim, "sweep-2b"]
    return (cpu[sim, "sweep-2a"] + cpu[sim, "sweep-2b"]) / (wall_a > wall_b ? wall_a : wall_b)
}

function ratio_cell(r) { return r == "" ? "n/a" : sprintf("%.2fx", r) }

function tally(v) {
    if (v == "met") met++
    else if (v == "NOT met") missed++
    else unknown++
}

BEGIN {
    FS = "\t"
    nsims = split("crashtest madsim turmoil", sims, " ")
    nworkloads = split(workloads, order, " ")
    networked["pingpong"] = networked["fanout"] = networked["seeds"] = 1
}

$3 == "n/a" { missing[$1, $2] = $4; next }

$2 ~ /^time:/ { file = substr($2, 6); real[$1, file] = $3; cpu[$1, file] = $4 + $5; next }

{
    rate[$1, $2] = $3; unit[$2] = $4; wall[$1, $2] = $5; virt[$1, $2] = $6
    vpw[$1, $2] = $7; rss[$1, $2] = $8; what[$1, $2] = $9; note[$1, $2] = $10
}

END {
    printf "\n%-9s %-15s %10s %10s %10s %10s %10s %9s %9s\n", "workload", "rate unit",
        "crashtest", "madsim", "turmoil", "ct/madsim", "ct/turmoil", ">=2x ms", ">=5x tm"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        rm = ratio(w, "madsim"); rt = ratio(w, "turmoil")
        vm = verdict(rm, 2); vt = verdict(rt, 5); tally(vm); tally(vt)
        printf "%-9s %-15s %10s %10s %10s %10s %10s %9s %9s\n", w, unit[w],
            cell("crashtest", w), cell("madsim", w), cell("turmoil", w),
            ratio_cell(rm), ratio_cell(rt), vm, vt
    }

    printf "\n%-9s %-9s %12s %12s %14s %10s\n", "workload", "simulator", "median wall s",
        "virtual s", "virtual/wall", "peak MiB"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            if (!has(sim, w)) { printf "%-9s %-9s %12s\n", w, sim, "n/a"; continue }
            printf "%-9s %-9s %12.3f %12.3f %14s %10.1f\n", w, sim, wall[sim, w], virt[sim, w],
                human(vpw[sim, w]), rss[sim, w]
        }
    }

    if (workloads ~ /(^| )sweep( |$)/) {
        printf "\nsweep scaling on threads (the target): seeds/s of the seeds workload spread over 2 threads of one process, over 1 thread\n"
        printf "%-9s %10s %12s %9s %13s %14s\n", "simulator", "1 thread", "2 threads",
            "scaling", "cores got", ">=1.8x"
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            if (!has(sim, "sweep-1") || !has(sim, "sweep-threads")) {
                printf "%-9s %10s\n", sim, "n/a"
                if (sim == "crashtest") tally("n/a")
                continue
            }
            one = rate[sim, "sweep-1"]; two = rate[sim, "sweep-threads"]
            # Cores the 2-thread process got: CPU seconds over wall seconds, as bash timed it.
            # Threads that wait for each other get fewer cores too, so this figure cannot tell
            # a busy machine from a simulator that does not scale; the 2-process pair, which
            # shares nothing, decides whether the machine was busy.
            got = ((sim, "sweep-threads") in real) ? cpu[sim, "sweep-threads"] / real[sim, "sweep-threads"] : -1
            pair = pair_cores(sim)
            target = "-"
            if (sim == "crashtest") {
                target = verdict(two / one, 1.8)
                if (target != "met" && pair >= 0 && pair < 1.8) target = "n/a (busy)"
                tally(target)
            }
            if (pair >= 0 && pair < 1.8) busy_threads = 1
            cores = (got >= 0) ? sprintf("%.2f", got) : "?"
            printf "%-9s %10s %12s %8.2fx %13s %14s\n", sim, human(one), human(two), two / one,
                cores, target
        }
        if (busy_threads)
            printf "  the machine was busy: the 2-process pair measured next got fewer than 1.8 cores, so a\n  scaling below the target measures the machine's load, not the simulator\n"

        printf "\nsweep scaling on processes: seeds/s of the seeds workload in 2 processes at once (summed) over 1 process alone\n"
        printf "%-9s %10s %12s %9s %13s %16s\n", "simulator", "1 process", "2 processes",
            "scaling", "cores 1p/2p", "at free cores"
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            if (!has(sim, "sweep-1") || !has(sim, "sweep-2a") || !has(sim, "sweep-2b")) {
                printf "%-9s %10s\n", sim, "n/a"
                continue
            }
            one = rate[sim, "sweep-1"]; two = rate[sim, "sweep-2a"] + rate[sim, "sweep-2b"]
            if (!((sim, "sweep-1") in real) || !((sim, "sweep-2a") in real) || !((sim, "sweep-2b") in real)) {
                printf "%-9s %10s %12s %8.2fx %13s %16s\n", sim, human(one), human(two),
                    two / one, "?", "?"
                continue
            }
            # Cores the processes got: CPU seconds over wall seconds, as bash timed them.
            got1 = cpu[sim, "sweep-1"] / real[sim, "sweep-1"]
            got2 = pair_cores(sim)
            # What two free cores would give: 2 x (CPU seconds alone / CPU seconds per process in the pair).
            free = 2 * cpu[sim, "sweep-1"] / ((cpu[sim, "sweep-2a"] + cpu[sim, "sweep-2b"]) / 2)
            if (got2 < 1.8) busy = 1
            printf "%-9s %10s %12s %8.2fx %6.2f / %4.2f %15.2fx\n", sim, human(one), human(two),
                two / one, got1, got2, free
        }
        if (busy)
            printf "  the machine was busy: 2 processes got fewer than 1.8 cores between them, so their \"scaling\"\n  measures its load, not the simulator; \"at free cores\" estimates it from CPU time per run instead\n"
    }

    printf "\ntargets (crashtest): %d met, %d not met, %d n/a\n", met, missed, unknown

    printf "\nnotes:\n"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            if ((sim, w) in missing)
                printf "  %s %s: n/a, %s\n", sim, w, missing[sim, w]
            else if (has(sim, w) && !comparable(sim, w))
                printf "  %s %s: n/a in the comparison: its benchmark does not run over simulated TCP yet (measured %s %s for \"%s\")\n",
                    sim, w, human(rate[sim, w]), unit[w], what[sim, w]
            else if (has(sim, w) && note[sim, w] != "")
                printf "  %s %s: %s\n", sim, w, note[sim, w]
        }
    }
}
