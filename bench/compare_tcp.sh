#!/usr/bin/env bash
# compare_tcp.sh: tagged messages over TCP on loopback, ferry_perf against UCX's ucx_perftest
# (UCP, UCX_TLS=tcp) and libfabric's fi_pingpong (provider tcp).
#
# In one session, alternating run by run (A B C ...), REPEAT times, at 8 B, 4 KiB, 64 KiB,
# 1 MiB, 16 MiB:
#   ferry      FERRY_TRANSPORTS=tcp ferry_perf -t tag_lat|tag_bw
#   ucx-tcp    UCX_TLS=tcp UCX_NET_DEVICES=lo ucx_perftest -t tag_lat|tag_bw
#   fi-tcp     fi_pingpong -p tcp -e rdm -m tagged (a ping-pong only: its bandwidth column is
#              the ping-pong's, shown for reference, not a streaming figure)
# Servers run on core 0, clients on core 1. Every peer talks to 127.0.0.1 only. Prints tables
# of medians over the REPEAT runs with ratios, and the issue's targets (latency <= UCX's tcp,
# bandwidth >= UCX's tcp at >= 64 KiB).
#
# Usage: bench/compare_tcp.sh [REPEAT]     (default 5; see bench/README.md)
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
window=16       # sends (and receives) in flight in tag_bw: ferry_perf's PERF_TAG_WINDOW
sizes="8 4096 65536 1048576 16777216"

check_args "runs per configuration, default 5"

command -v ucx_perftest >/dev/null || apt_install ucx-utils
command -v fi_pingpong >/dev/null || apt_install libfabric-bin
need_tools ucx_perftest fi_pingpong ss awk timeout

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_tcp.XXXXXX")
raw=$work/raw.csv # lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
echo "lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps" >"$raw"

# Iterations per run: enough for a stable median, few enough for a few minutes in all.
lat_iters() {
    case $1 in
    8) echo 20000 ;;
    4096) echo 10000 ;;
    65536) echo 2000 ;;
    1048576) echo 200 ;;
    16777216) echo 20 ;;
    esac
}
bw_iters() {
    case $1 in
    8) echo 100000 ;;
    4096) echo 50000 ;;
    65536) echo 5000 ;;
    1048576) echo 500 ;;
    16777216) echo 40 ;;
    esac
}

nsizes=$(wc -w <<<"$sizes")
count=0
total_runs=$((nsizes * 5 * repeat)) # per size: 2 ferry, 2 UCX, 1 fi_pingpong

# run_ferry TEST SIZE
run_ferry() {
    local test=$1 size=$2
    local iters run_env=("${ferry_env[@]}" FERRY_TRANSPORTS=tcp)
    iters=$(tag_iters_of "$test" "$size")
    run_progress ferry "$test" "$size"
    bench_run "$ferry_perf" -c 0 -- 127.0.0.1 -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $(((iters + 9) / 10)) -f csv
    ferry_record "$test" tcp "$run_out"
}

# run_ucx TEST SIZE
run_ucx() {
    local test=$1 size=$2
    local iters extra=() run_env=(UCX_TLS=tcp UCX_NET_DEVICES=lo)
    iters=$(tag_iters_of "$test" "$size")
    [[ $test == tag_bw ]] && extra=(-O "$window")
    run_progress ucx "$test" "$size"
    bench_run ucx_perftest -c 0 -- 127.0.0.1 -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $(((iters + 9) / 10)) "${extra[@]}"
    ucx_record "$test" "$size" tcp "$run_out"
}

# run_fi SIZE: fi_pingpong (fi_pingpong_run), tagged messages on an RDM endpoint of the tcp
# provider; its usec/xfer (one way) is both latency columns, its MB/sec the bandwidth.
run_fi() {
    local size=$1
    run_progress "fi" tag_lat "$size"
    fi_pingpong_run tcp "$size" "$(tag_iters_of tag_lat "$size")" || exit 1
    echo "$fi_line" | awk -v size="$size" '{
        printf "fi,tag_lat,%s,tcp,%s,%s,%.4f,%.4f\n", size, $7, $7, $6 / 1e3, $8
    }' >>"$raw"
}

echo "compare_tcp.sh: $repeat runs per configuration; raw results in $raw" >&2
busy_before=$(cpu_busy_percent)
start_time=$SECONDS
for ((r = 1; r <= repeat; r++)); do
    for size in $sizes; do
        for test in tag_lat tag_bw; do
            run_ferry "$test" "$size"
            run_ucx "$test" "$size"
        done
        run_fi "$size"
    done
done
elapsed=$((SECONDS - start_time))
echo "compare_tcp.sh: $count runs in $elapsed s" >&2

# ------------------------------------------------------------------ report: medians
cpu=$(bench_cpu)
ucx_version=$(bench_version ucx)
fi_version=$(bench_version libfabric)
echo
echo "tagged messages over TCP (loopback): ferry ($ferry_perf, FERRY_TRANSPORTS=tcp) vs UCX $ucx_version (ucx_perftest, UCX_TLS=tcp) vs libfabric ${fi_version:-?} (fi_pingpong -p tcp)"
echo "servers on core 0, clients on core 1, busy polling, medians of $repeat runs each, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "host: $cpu, $(nproc) CPUs, $(uname -r); tag_bw window: $window sends / receives in flight"
echo "CPUs busy with other work in the second before the start: ${busy_before}% (above ~10%: rerun)"
awk -F, -v sizes="$sizes" -f "$here/lib.awk" -f <(printf '%s\n' '
NR > 1 {
    k = $1 "," $2 "," $3
    add(k ",p50", $5); add(k ",avg", $6); add(k ",bw", $7); add(k ",rate", $8)
}
END {
    ns = split(sizes, S, " ")
    printf "\ntag_lat: ping-pong, one-way latency (us), p50 (fi_pingpong: its mean); ratio = ferry / UCX (< 1: ferry faster)\n"
    printf "%6s %9s %9s %9s %8s %8s\n", "size", "ferry", "ucx-tcp", "fi-tcp", "ratio", "ferry/fi"
    for (i = 1; i <= ns; i++) {
        s = S[i]; f = median("ferry,tag_lat," s ",p50"); u = median("ucx,tag_lat," s ",p50")
        v = median("fi,tag_lat," s ",p50")
        printf "%6s %9s %9s %9s %8s %8s\n", human(s), fmt(f, "%.3f"), fmt(u, "%.3f"), fmt(v, "%.3f"), ratio(f, u), ratio(f, v)
        if (s == 8) { lat8 = f; lat8_ucx = u }
    }

    printf "\ntag_bw: streaming, GB/s (10^9 B/s); ratio = ferry / UCX (> 1: ferry faster); fi-tcp: ping-pong bandwidth, for reference\n"
    printf "%6s %9s %9s %9s %8s %12s\n", "size", "ferry", "ucx-tcp", "fi-tcp", "ratio", "ferry_Mmsg/s"
    for (i = 1; i <= ns; i++) {
        s = S[i]; f = median("ferry,tag_bw," s ",bw"); u = median("ucx,tag_bw," s ",bw")
        v = median("fi,tag_lat," s ",bw")
        printf "%6s %9s %9s %9s %8s %12s\n", human(s), fmt(f, "%.3f"), fmt(u, "%.3f"), fmt(v, "%.3f"), ratio(f, u), fmt(median("ferry,tag_bw," s ",rate"), "%.4f")
        if (s >= 65536) {
            big++
            if (f == "" || u == "" || f + 0 < u + 0) miss = miss sprintf(" %s (%s)", human(s), ratio(f, u))
        }
    }
    printf "\ntargets (issue 5), on these medians:\n"
    printf "  latency <= UCX tcp at 8 B (ferry %s us, UCX %s us): %s\n", fmt(lat8, "%.3f"), fmt(lat8_ucx, "%.3f"), (lat8 != "" && lat8_ucx != "" && lat8 + 0 <= lat8_ucx + 0) ? "met" : "NOT met"
    printf "  bandwidth >= UCX tcp at every size >= 64 KiB (%d sizes): %s\n", big, miss == "" ? "met" : "NOT met at" miss
}') "$raw"
echo
echo "raw results (one line per run): $raw"
bench_keep_results
