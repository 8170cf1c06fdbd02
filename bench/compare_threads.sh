#!/usr/bin/env bash
# compare_threads.sh: ferry's multi-thread worker (ferry_perf --threads N) beside UCX's
# (ucx_perftest -M multi -T N, UCX_TLS=sm,self), over shared memory, 8-byte messages.
#
# In one session, alternating ferry and UCX run by run (A B A B ...), REPEAT times, for
# N = 1 and 2 threads per process (each thread its own stream on the one shared worker):
#   am_lat, tag_lat: latency (us) as each tool reports its whole run: ferry the mean over the
#                    streams of each one's average one-way latency, UCX its "overall" latency
#   am_bw, tag_bw:   message rate (M/s): ferry the sum over the streams, UCX its "overall" rate
# UCX's tests: ucp_am_lat, ucp_am_bw, tag_lat, tag_bw (UCP, the layer with a thread mode).
# Nothing is pinned: with 2 threads a process runs on both cores (and 4 busy threads share
# the machine's 2 cores). Prints the table of medians and writes it to
# docs/perf/compare_threads.txt (BENCH_THREADS_OUT: elsewhere; empty: nowhere).
#
# Usage: bench/compare_threads.sh [REPEAT]     (default 3; a few minutes: 48 runs)
# Environment: FERRY_PERF (default build/tools/ferry_perf),
# BENCH_ITERS_SCALE (multiplies every iteration count), BENCH_RESULTS (keep
# the raw CSV: lib,test,size,threads,lat_us,msgrate_Mps).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
repeat=${1:-3}
out_file=${BENCH_THREADS_OUT-$root/docs/perf/compare_threads.txt}
run_timeout=60

check_args "runs per configuration, default 3"
command -v ucx_perftest >/dev/null || apt_install ucx-utils
need_tools ucx_perftest ss awk timeout

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_threads.XXXXXX")
trap 'cleanup; rm -rf "$work"' EXIT
raw=$work/raw.csv
echo "lib,test,size,threads,lat_us,msgrate_Mps" >"$raw"
tests="am_lat tag_lat am_bw tag_bw"
count=0
total_runs=$((2 * 2 * 4 * repeat))

iters_of() { # short enough that 4 busy threads on 2 cores finish in seconds
    case $1 in
    *_lat) echo $((10000 * scale)) ;;
    *) echo $((200000 * scale)) ;;
    esac
}

# run_ferry TEST THREADS
run_ferry() {
    local test=$1 threads=$2 iters
    iters=$(iters_of "$test")
    bench_progress "$(printf 'ferry %-8s 8 B, %s thread(s)' "$test" "$threads")"
    bench_run "$ferry_perf" -- localhost -t "$test" -s 8 -n "$iters" -w $((iters / 10)) \
        --threads "$threads" -f csv
    # test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
    echo "$run_out" | awk -F, -v t="$test" -v n="$threads" '$1 == t {
        printf "ferry,%s,8,%s,%s,%s\n", t, n, $5, $7 }' >>"$raw"
}

# run_ucx TEST THREADS
run_ucx() {
    local test=$1 threads=$2 iters ucx_test=$1 line run_env=("UCX_TLS=sm,self")
    iters=$(iters_of "$test")
    [[ $test == am_* ]] && ucx_test=ucp_$test
    bench_progress "$(printf 'ucx   %-8s 8 B, %s thread(s)' "$ucx_test" "$threads")"
    bench_run ucx_perftest -- localhost -t "$ucx_test" -s 8 -n "$iters" -w $((iters / 10)) \
        -M multi -T "$threads"
    line=$(ucx_final_line "$run_out") || exit 1
    # one thread: "Final: iters p50 avg overall MB/s_avg MB/s_overall msg/s_avg msg/s_overall";
    # more: "Final: iters lat_overall MB/s_overall msg/s_overall" (its latency: one way)
    echo "$line" | awk -v t="$test" -v n="$threads" '{
        lat = NF >= 9 ? $5 : $3; rate = NF >= 9 ? $9 : $5
        printf "ucx,%s,8,%s,%s,%.4f\n", t, n, lat, rate / 1e6 }' >>"$raw"
}

echo "$bench_name: $repeat runs per configuration; raw results in $raw" >&2
busy_before=$(cpu_busy_percent)
start_time=$SECONDS
for ((r = 1; r <= repeat; r++)); do
    for threads in 1 2; do
        for test in $tests; do
            if ((r % 2)); then
                run_ferry "$test" "$threads"
                run_ucx "$test" "$threads"
            else
                run_ucx "$test" "$threads"
                run_ferry "$test" "$threads"
            fi
        done
    done
done
echo "$bench_name: $count runs in $((SECONDS - start_time)) s" >&2

report() {
    echo "ferry ($ferry_perf --threads N) vs UCX $(bench_version ucx) (ucx_perftest -M multi -T N, UCX_TLS=sm,self)"
    echo "8-byte messages over shared memory, unpinned, medians of $repeat runs each, $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "host: $(bench_cpu), $(nproc) CPUs, $(uname -r)"
    echo "load average at the start: $bench_load_start, at the end: $(cut -d' ' -f1-3 /proc/loadavg); CPUs busy with other work before: ${busy_before}%"
    awk -F, -f "$here/lib.awk" -f <(printf '%s\n' '
NR > 1 { k = $1 "," $2 "," $4; add(k ",lat", $5); add(k ",rate", $6) }
# one row per test of list and thread count: the medians of stat (lat or rate), and the ratio
function rows(list, stat,    t, c, i, n, f, u) {
    printf "%-8s %7s %10s %10s %7s\n", "test", "threads", "ferry", "ucx", "ratio"
    c = split(list, t, " ")
    for (i = 1; i <= c; i++)
        for (n = 1; n <= 2; n++) {
            f = median("ferry," t[i] "," n "," stat); u = median("ucx," t[i] "," n "," stat)
            printf "%-8s %7d %10s %10s %7s\n", t[i], n, fmt(f, "%.3f"), fmt(u, "%.3f"), ratio(f, u)
        }
}
END {
    printf "\nlatency (us, one way, whole-run average; ratio = ferry / UCX, < 1: ferry faster)\n"
    rows("am_lat tag_lat", "lat")
    printf "\nmessage rate (M/s, all threads; ratio = ferry / UCX, > 1: ferry faster)\n"
    rows("am_bw tag_bw", "rate")
}') "$raw"
}

report | tee "$work/table.txt"
if [[ -n $out_file ]]; then
    mkdir -p "$(dirname "$out_file")"
    cp "$work/table.txt" "$out_file"
    echo "$bench_name: wrote $out_file" >&2
fi
bench_keep_results
