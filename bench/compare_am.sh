#!/usr/bin/env bash
# compare_am.sh: ferry_perf against UCX's ucx_perftest, active messages over shared memory.
#
# In one session, alternating ferry and UCX run by run (A B A B ...), REPEAT times:
#   am_lat and am_bw at 8 B, 64 B, 1 KiB, 4 KiB, 8 KiB (UCX: -x posix -d memory, -D short at
#   8 B, else bcopy; 8 KiB is the largest power of two UCT's posix am_bcopy carries, 8256 B)
# then ferry alone: am_lat and am_bw at 64 KiB, 1 MiB, 16 MiB, and am_lat 8 B with --wait.
# Servers run on core 0, clients on core 1. Prints tables of medians over the REPEAT runs.
#
# Usage: bench/compare_am.sh [REPEAT]     (default 5; see bench/README.md)
# Environment: FERRY_PERF (default build/tools/ferry_perf),
# BENCH_ITERS_SCALE (multiplies every iteration count, default 1),
# BENCH_RESULTS (a folder: keep the raw CSV there as <script>.csv, with <script>.info saying
# when, where, with which versions and under what load it ran; bench/report.sh sets it).
# Progress (run k of n, elapsed, estimated time left) goes to stderr, the tables to stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# servers on fresh ports, cleanup on exit, apt_install, cpu_busy_percent (and lib.awk)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
repeat=${1:-5}
run_timeout=120 # seconds any one client or server may take

check_args "runs per configuration, default 5"
command -v ucx_perftest >/dev/null || apt_install ucx-utils
need_tools ucx_perftest ss awk timeout

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_am.XXXXXX")
raw=$work/raw.csv # lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
echo "lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps" >"$raw"

count=0
side_sizes="8 64 1024 4096 8192"
total_runs=$((27 * repeat)) # per round: 20 side by side, 7 ferry alone

# run_ferry TEST SIZE ITERS [--wait]
run_ferry() {
    local test=$1 size=$2 iters=$3 mode=${4:-busy}
    local extra=() run_env=("${ferry_env[@]}")
    [[ $mode == wait ]] && extra=(--wait)
    iters=$((iters * scale))
    bench_progress "$(printf 'ferry %-6s %9s B %s' "$test" "$size" "$mode")"
    bench_run "$ferry_perf" -c 0 -- localhost -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $((iters / 10)) -f csv "${extra[@]}"
    ferry_record "$test" "$mode" "$run_out"
}

# run_ucx TEST SIZE ITERS
run_ucx() {
    local test=$1 size=$2 iters=$3
    local layout=bcopy
    ((size <= 8)) && layout=short
    iters=$((iters * scale))
    bench_progress "$(printf 'ucx   %-6s %9s B %s' "$test" "$size" "$layout")"
    bench_run ucx_perftest -c 0 -- localhost -c 1 -t "$test" -x posix -d memory -D "$layout" \
        -s "$size" -n "$iters" -w $((iters / 10))
    ucx_record "$test" "$size" "$layout" "$run_out"
}

small_iters() { # iterations for the side-by-side sizes
    case $2 in
    8 | 64) echo 100000 ;;
    *) echo 50000 ;;
    esac
}

large_iters() { # long enough that first-touch page faults and malloc warm-up do not dominate
    case $1:$2 in
    am_lat:65536) echo 5000 ;;
    am_bw:65536) echo 20000 ;;
    am_lat:1048576) echo 500 ;;
    am_bw:1048576) echo 1000 ;;
    am_lat:16777216) echo 40 ;;
    am_bw:16777216) echo 64 ;;
    esac
}

echo "compare_am.sh: $repeat runs per configuration; raw results in $raw" >&2
busy_before=$(cpu_busy_percent)
start_time=$SECONDS
for ((r = 1; r <= repeat; r++)); do
    for test in am_lat am_bw; do
        for size in $side_sizes; do
            n=$(small_iters "$test" "$size")
            run_ferry "$test" "$size" "$n"
            run_ucx "$test" "$size" "$n"
        done
    done
    for test in am_lat am_bw; do
        for size in 65536 1048576 16777216; do
            run_ferry "$test" "$size" "$(large_iters "$test" "$size")"
        done
    done
    run_ferry am_lat 8 100000 wait
done
echo "compare_am.sh: $count runs in $((SECONDS - start_time)) s" >&2

# ------------------------------------------------------------------ report: medians
cpu=$(bench_cpu)
echo
echo "ferry ($ferry_perf) vs UCX $(bench_version ucx) (ucx_perftest -x posix -d memory)"
echo "shared memory, server on core 0, client on core 1, medians of $repeat runs each, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "host: $cpu, $(nproc) CPUs, $(uname -r)"
echo "CPUs busy with other work in the second before the start: ${busy_before}% (above ~10%: rerun)"
awk -F, -v side_sizes="$side_sizes" -f "$here/lib.awk" -f <(printf '%s\n' '
NR > 1 {
    k = $1 "," $2 "," $3 "," $4
    add(k ",p50", $5); add(k ",avg", $6); add(k ",bw", $7); add(k ",rate", $8)
}
END {
    printf "\nam_lat: one-way latency (us), median of p50s; ratio = ferry / UCX (< 1: ferry faster)\n"
    printf "%9s %11s %11s %9s %11s %11s %9s\n", "size(B)", "ferry_p50", "ucx_p50", "ratio", "ferry_avg", "ucx_avg", "ratio"
    nside = split(side_sizes, sizes, " ")
    for (i = 1; i <= nside; i++) {
        s = sizes[i]; u = (s <= 8) ? "short" : "bcopy"
        fp = median("ferry,am_lat," s ",busy,p50"); up = median("ucx,am_lat," s "," u ",p50")
        fa = median("ferry,am_lat," s ",busy,avg"); ua = median("ucx,am_lat," s "," u ",avg")
        printf "%9s %11s %11s %9s %11s %11s %9s\n", s, fmt(fp, "%.3f"), fmt(up, "%.3f"), ratio(fp, up), fmt(fa, "%.3f"), fmt(ua, "%.3f"), ratio(fa, ua)
    }
    printf "\nam_bw: streaming; GB = 10^9 B; ratio = ferry / UCX message rate (> 1: ferry faster)\n"
    printf "%9s %11s %11s %13s %13s %9s\n", "size(B)", "ferry_GB/s", "ucx_GB/s", "ferry_Mmsg/s", "ucx_Mmsg/s", "ratio"
    for (i = 1; i <= nside; i++) {
        s = sizes[i]; u = (s <= 8) ? "short" : "bcopy"
        fb = median("ferry,am_bw," s ",busy,bw"); ub = median("ucx,am_bw," s "," u ",bw")
        fr = median("ferry,am_bw," s ",busy,rate"); ur = median("ucx,am_bw," s "," u ",rate")
        printf "%9s %11s %11s %13s %13s %9s\n", s, fmt(fb, "%.3f"), fmt(ub, "%.3f"), fmt(fr, "%.3f"), fmt(ur, "%.3f"), ratio(fr, ur)
        if (fr == "" || ur == "" || fr < ur) miss = miss sprintf(" %s (%s)", s, ratio(fr, ur))
    }
    printf "issue 14: am_bw >= UCX am_bw (bcopy) at every size above: %s\n", miss == "" ? "met" : "NOT met at" miss
    printf "\nferry alone, large messages\n"
    printf "%9s %15s %15s %12s %13s\n", "size(B)", "lat_p50(us)", "lat_avg(us)", "bw(GB/s)", "rate(Mmsg/s)"
    split("65536 1048576 16777216", big, " ")
    for (i = 1; i <= 3; i++) {
        s = big[i]
        printf "%9s %15s %15s %12s %13s\n", s, fmt(median("ferry,am_lat," s ",busy,p50"), "%.2f"), fmt(median("ferry,am_lat," s ",busy,avg"), "%.2f"), fmt(median("ferry,am_bw," s ",busy,bw"), "%.3f"), fmt(median("ferry,am_bw," s ",busy,rate"), "%.4f")
    }
    printf "\nferry am_lat 8 B, sleeping in ferry_worker_wait (--wait) vs busy polling\n"
    printf "%9s %11s %11s\n", "mode", "p50(us)", "avg(us)"
    printf "%9s %11s %11s\n", "busy", fmt(median("ferry,am_lat,8,busy,p50"), "%.3f"), fmt(median("ferry,am_lat,8,busy,avg"), "%.3f")
    printf "%9s %11s %11s\n", "--wait", fmt(median("ferry,am_lat,8,wait,p50"), "%.3f"), fmt(median("ferry,am_lat,8,wait,avg"), "%.3f")
}') "$raw"
echo
echo "raw results (one line per run): $raw"
bench_keep_results
