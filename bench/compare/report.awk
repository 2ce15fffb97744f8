# Prints run.sh's comparison tables from its records (tab-separated, one per result file):
#   round, sim, file, load, rate, rate_unit, cold_rate, peak_rss_mib, median_wall_s,
#   virtual_s, what, note
# or, for a workload a binary does not have: round, sim, file, load, "n/a", reason;
# or, for a process bash timed: round, sim, "time:" file, load, wall s, user s, system s.
# `load` is the 1-minute load average when the process started. Set `workloads`
# (space-separated, in order) and `rounds` with -v.
#
# Every ratio is taken within a round (the simulators of a round ran back to back, in an
# order that rotates between rounds) and reported as the median of the rounds' ratios with
# their minimum and maximum. Targets apply to the cold figures (a process's first run, what a
# sweep that runs each seed on a fresh thread gets), and for fanout to the jittered variant,
# where each message is its own delivery; fixed-latency fanout is reported without a target.
#
# A networked workload (pingpong, fanout, fanout-jitter, seeds) counts for crashtest only
# when its `what` says TCP, so that no ratio compares unlike work.

function human(x) {
    if (x >= 999500) return sprintf("%.3gM", x / 1e6)
    if (x >= 999.5) return sprintf("%.3gk", x / 1e3)
    return sprintf("%.3g", x)
}

# Sorts list[1..n] in place (insertion sort: a handful of rounds).
function sort_list(list, n,    i, j, v) {
    for (i = 2; i <= n; i++) {
        v = list[i]
        for (j = i - 1; j >= 1 && list[j] > v; j--) list[j + 1] = list[j]
        list[j + 1] = v
    }
}

# Median, minimum and maximum of list[1..n], into stat["med"], stat["min"], stat["max"];
# returns n.
function stats(list, n, stat) {
    if (n == 0) return 0
    sort_list(list, n)
    stat["min"] = list[1]; stat["max"] = list[n]
    stat["med"] = (n % 2) ? list[(n + 1) / 2] : (list[n / 2] + list[n / 2 + 1]) / 2
    return n
}

function comparable(r, sim, file) {
    if (!((r, sim, file) in rate)) return 0
    if (sim != "crashtest" || !(file in networked)) return 1
    return tolower(what[r, sim, file]) ~ /tcp/
}

# The median over rounds of `field` (rate, cold, rss, wall, virt, load) of sim's file, or "".
function median_of(field, sim, file,    r, n, list, stat) {
    n = 0
    for (r = 1; r <= rounds; r++) {
        if (!((r, sim, file) in rate)) continue
        if (field == "rate") list[++n] = rate[r, sim, file]
        else if (field == "cold") list[++n] = cold[r, sim, file]
        else if (field == "rss") list[++n] = rss[r, sim, file]
        else if (field == "wall") list[++n] = wall[r, sim, file]
        else if (field == "virt") list[++n] = virt[r, sim, file]
    }
    return stats(list, n, stat) ? stat["med"] : ""
}

# The per-round ratios crashtest/other of `field` (rate or cold) for file, as
# "median [min-max]" in ratio_text, the median in ratio_med; returns the rounds counted.
function round_ratios(field, file, other,    r, n, list, stat) {
    n = 0
    for (r = 1; r <= rounds; r++) {
        if (!comparable(r, "crashtest", file) || !comparable(r, other, file)) continue
        list[++n] = (field == "cold") ? cold[r, "crashtest", file] / cold[r, other, file] \
            : rate[r, "crashtest", file] / rate[r, other, file]
    }
    if (!stats(list, n, stat)) { ratio_text = "n/a"; ratio_med = ""; return 0 }
    ratio_med = stat["med"]
    ratio_text = sprintf("%.2fx [%.2f-%.2f]", stat["med"], stat["min"], stat["max"])
    return n
}

# The load averages when file's processes started, every simulator and round, as
# "median [min-max]".
function load_text(file,    r, s, n, list, stat) {
    n = 0
    for (r = 1; r <= rounds; r++)
        for (s = 1; s <= nsims; s++)
            if ((r, sims[s], file) in load && load[r, sims[s], file] != "?")
                list[++n] = load[r, sims[s], file]
    if (!stats(list, n, stat)) return "?"
    return sprintf("%.1f [%.1f-%.1f]", stat["med"], stat["min"], stat["max"])
}

function cell(field, sim, file,    m) {
    m = median_of(field, sim, file)
    return m == "" ? "n/a" : human(m)
}

function verdict(r, target) {
    if (r == "") return "n/a"
    return r >= target ? "met" : "NOT met"
}

function tally(v) {
    if (v ~ /^met/) met++
    else if (v ~ /^NOT met/) missed++
    else if (v != "-") unknown++
}

# Cores the 2-process pair of `sim` got in round r (CPU seconds over the pair's wall
# seconds), or -1 if they were not timed.
function pair_cores(r, sim,    wall_a, wall_b) {
    if (!((r, sim, "sweep-2a") in real) || !((r, sim, "sweep-2b") in real)) return -1
    wall_a = real[r, sim, "sweep-2a"]; wall_b = real[r, sim, "sweep-2b"]
    return (cpu[r, sim, "sweep-2a"] + cpu[r, sim, "sweep-2b"]) / (wall_a > wall_b ? wall_a : wall_b)
}

# "median [min-max]" of the per-round values `kind` of sim's sweep: "threads" (2-thread
# rate / 1-thread rate), "threads-cpu" (2 x CPU s on one thread / CPU s on two), "got"
# (cores the 2-thread process got), "pair" (cores the 2-process pair got), "processes"
# (summed 2-process rate / 1-process rate), "processes-cpu" (2 x CPU s alone / CPU s per
# process in the pair). The median goes to sweep_med.
function sweep_stat(kind, sim,    r, n, list, stat, p) {
    n = 0
    for (r = 1; r <= rounds; r++) {
        if (!((r, sim, "sweep-1") in rate)) continue
        if (kind == "threads" && (r, sim, "sweep-threads") in rate)
            list[++n] = rate[r, sim, "sweep-threads"] / rate[r, sim, "sweep-1"]
        else if (kind == "threads-cpu" && (r, sim, "sweep-threads") in cpu && (r, sim, "sweep-1") in cpu)
            list[++n] = 2 * cpu[r, sim, "sweep-1"] / cpu[r, sim, "sweep-threads"]
        else if (kind == "got" && (r, sim, "sweep-threads") in real)
            list[++n] = cpu[r, sim, "sweep-threads"] / real[r, sim, "sweep-threads"]
        else if (kind == "pair" && (p = pair_cores(r, sim)) >= 0)
            list[++n] = p
        else if (kind == "processes" && (r, sim, "sweep-2a") in rate && (r, sim, "sweep-2b") in rate)
            list[++n] = (rate[r, sim, "sweep-2a"] + rate[r, sim, "sweep-2b"]) / rate[r, sim, "sweep-1"]
        else if (kind == "processes-cpu" && (r, sim, "sweep-2a") in cpu && (r, sim, "sweep-2b") in cpu && (r, sim, "sweep-1") in cpu)
            list[++n] = 2 * cpu[r, sim, "sweep-1"] / ((cpu[r, sim, "sweep-2a"] + cpu[r, sim, "sweep-2b"]) / 2)
    }
    if (!stats(list, n, stat)) { sweep_med = ""; return "n/a" }
    sweep_med = stat["med"]
    return sprintf("%.2f [%.2f-%.2f]", stat["med"], stat["min"], stat["max"])
}

BEGIN {
    FS = "\t"
    nsims = split("crashtest madsim turmoil", sims, " ")
    nworkloads = split(workloads, order, " ")
    networked["pingpong"] = networked["fanout"] = networked["fanout-jitter"] = networked["seeds"] = 1
    # The targets, ct/madsim and ct/turmoil; fixed-latency fanout merges same-instant writes
    # into one delivery, so its figures are shown without a target.
    for (i = 1; i <= nworkloads; i++) { target_m[order[i]] = 2; target_t[order[i]] = 5 }
    target_m["fanout"] = target_t["fanout"] = ""
}

{ load[$1, $2, ($3 ~ /^time:/) ? substr($3, 6) : $3] = $4 }

$5 == "n/a" { missing[$2, $3] = $6; next }

$3 ~ /^time:/ { file = substr($3, 6); real[$1, $2, file] = $5; cpu[$1, $2, file] = $6 + $7; next }

{
    rate[$1, $2, $3] = $5; unit[$3] = $6; cold[$1, $2, $3] = $7; rss[$1, $2, $3] = $8
    wall[$1, $2, $3] = $9; virt[$1, $2, $3] = $10; what[$1, $2, $3] = $11; note[$2, $3] = $12
    whats[$2, $3] = $11
}

END {
    printf "\ncold (each process's first run): rates are medians over rounds\n"
    printf "%-13s %-15s %9s %9s %9s %20s %20s %8s %8s %16s\n", "workload", "rate unit",
        "crashtest", "madsim", "turmoil", "ct/madsim", "ct/turmoil", ">=2x ms", ">=5x tm",
        "load avg"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        round_ratios("cold", w, "madsim"); tm = ratio_text; rm = ratio_med
        round_ratios("cold", w, "turmoil"); tt = ratio_text; rt = ratio_med
        vm = (target_m[w] == "") ? "-" : verdict(rm, target_m[w])
        vt = (target_t[w] == "") ? "-" : verdict(rt, target_t[w])
        tally(vm); tally(vt)
        printf "%-13s %-15s %9s %9s %9s %20s %20s %8s %8s %16s\n", w, unit[w],
            cell("cold", "crashtest", w), cell("cold", "madsim", w), cell("cold", "turmoil", w),
            tm, tt, vm, vt, load_text(w)
    }

    printf "\nwarm (median of each process's runs): rates are medians over rounds\n"
    printf "%-13s %-15s %9s %9s %9s %20s %20s %16s\n", "workload", "rate unit", "crashtest",
        "madsim", "turmoil", "ct/madsim", "ct/turmoil", "load avg"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        round_ratios("rate", w, "madsim"); tm = ratio_text
        round_ratios("rate", w, "turmoil"); tt = ratio_text
        printf "%-13s %-15s %9s %9s %9s %20s %20s %16s\n", w, unit[w],
            cell("rate", "crashtest", w), cell("rate", "madsim", w), cell("rate", "turmoil", w),
            tm, tt, load_text(w)
    }

    printf "\n%-13s %-9s %14s %12s %10s   (medians over rounds)\n", "workload", "simulator",
        "median wall s", "virtual s", "peak MiB"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            if (median_of("rate", sim, w) == "") { printf "%-13s %-9s %14s\n", w, sim, "n/a"; continue }
            printf "%-13s %-9s %14.3f %12.3f %10.1f\n", w, sim, median_of("wall", sim, w),
                median_of("virt", sim, w), median_of("rss", sim, w)
        }
    }

    if (workloads ~ /(^| )sweep( |$)/) {
        printf "\nsweep scaling on threads (the target, >= 1.8x): seeds/s of the seeds workload on 2 threads of one\n"
        printf "process over 1 thread, and the CPU-time estimate 2 x CPU s on 1 thread / CPU s on 2 threads\n"
        printf "(what 2 free cores would give); load average %s\n", load_text("sweep-threads")
        printf "%-9s %9s %9s %20s %20s %20s %14s\n", "simulator", "1 thread", "2 threads",
            "scaling", "CPU estimate", "cores got", "verdict"
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            scaling = sweep_stat("threads", sim); scaling_med = sweep_med
            if (scaling == "n/a") {
                printf "%-9s %9s\n", sim, "n/a"
                if (sim == "crashtest") tally("n/a")
                continue
            }
            estimate = sweep_stat("threads-cpu", sim); estimate_med = sweep_med
            got = sweep_stat("got", sim)
            sweep_stat("pair", sim); pair_med = sweep_med
            target = "-"
            if (sim == "crashtest") {
                # Threads that wait for each other get fewer cores too, so the cores the
                # 2-thread process got cannot tell a busy machine from a simulator that does
                # not scale; the 2-process pair, which shares nothing, decides. On a busy
                # machine the verdict comes from CPU time, which load does not inflate.
                target = verdict(scaling_med, 1.8)
                if (target != "met" && pair_med != "" && pair_med < 1.8) {
                    target = verdict(estimate_med, 1.8) " (CPU)"
                    busy_threads = 1
                }
                tally(target)
            }
            printf "%-9s %9s %9s %20s %20s %20s %14s\n", sim,
                human(median_of("rate", sim, "sweep-1")), human(median_of("rate", sim, "sweep-threads")),
                scaling, estimate, got, target
        }
        if (busy_threads)
            printf "  the machine was busy (the 2-process pair got fewer than 1.8 cores), so the verdict is the\n  CPU-time estimate's: wall-clock scaling below the target measures the load, not the simulator\n"

        printf "\nsweep scaling on processes: seeds/s of the seeds workload in 2 processes at once (summed) over 1\n"
        printf "process alone; \"at free cores\" is 2 x CPU s alone / CPU s per process in the pair\n"
        printf "%-9s %9s %20s %20s %20s\n", "simulator", "1 process", "scaling", "pair's cores",
            "at free cores"
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            scaling = sweep_stat("processes", sim)
            if (scaling == "n/a") { printf "%-9s %9s\n", sim, "n/a"; continue }
            printf "%-9s %9s %20s %20s %20s\n", sim, human(median_of("rate", sim, "sweep-1")),
                scaling, sweep_stat("pair", sim), sweep_stat("processes-cpu", sim)
        }
    }

    printf "\ntargets (crashtest, on cold figures): %d met, %d not met, %d n/a\n", met, missed, unknown

    printf "\nnotes:\n"
    for (i = 1; i <= nworkloads; i++) {
        w = order[i]
        if (w == "sweep") continue
        for (s = 1; s <= nsims; s++) {
            sim = sims[s]
            if ((sim, w) in missing)
                printf "  %s %s: n/a, %s\n", sim, w, missing[sim, w]
            else if (sim == "crashtest" && (w in networked) && ((sim, w) in whats) && tolower(whats[sim, w]) !~ /tcp/)
                printf "  %s %s: n/a in the comparison: its benchmark does not run over simulated TCP (\"%s\")\n",
                    sim, w, whats[sim, w]
            else if ((sim, w) in note && note[sim, w] != "")
                printf "  %s %s: %s\n", sim, w, note[sim, w]
        }
    }
}
