#!/usr/bin/env bash
# compare_builds.sh: two builds of ferry side by side (a change's before and after), shared
# memory or tcp, the same session, alternating A B A B run by run, medians and the ratio B/A.
#
# Usage: bench/compare_builds.sh OLD_PERF NEW_PERF [REPEAT]
#   OLD_PERF, NEW_PERF: the two ferry_perf binaries (each finds its own libferry by rpath), e.g.
#     git worktree add /tmp/old <commit> && cmake -S /tmp/old -B /tmp/old/build \
#         -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/old/build -j2
#     bench/compare_builds.sh /tmp/old/build/tools/ferry_perf build/tools/ferry_perf 9
#   REPEAT: runs per configuration and build (default 9).
# Environment: BENCH_CASES (default: the fast-path set below, "test:size:iterations" words),
# BENCH_TRANSPORTS (exported FERRY_TRANSPORTS for both, e.g. tcp),
# BENCH_ITERS_SCALE (multiplies every iteration count), BENCH_OLD_ARGS and
# BENCH_NEW_ARGS (more ferry_perf options for each build's server and client, e.g.
# BENCH_NEW_ARGS=--thread-multi with the same binary twice: a mode against the other),
# BENCH_RAW (a file that gets every run's value: build,test,size,value).
# Servers run on core 0, clients on core 1. Progress goes to stderr, the table to stdout: per
# case the median latency (us) or bandwidth (GB/s) or message rate (M/s) of each build, and
# new/old. This machine's two vCPUs move between host placements, which swings figures 2-4x:
# only the ratio of one run means anything, and the load (printed) must be low.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
old_perf=${1:-}
new_perf=${2:-}
repeat=${3:-9}
run_timeout=120
if [[ -z $old_perf || -z $new_perf ]]; then
    echo "usage: $0 OLD_PERF NEW_PERF [REPEAT]" >&2
    exit 2
fi
ferry_perf=$new_perf
check_args "runs per configuration and build, default 9"
[[ -x $old_perf ]] || { echo "$bench_name: $old_perf is not executable" >&2; exit 1; }
[[ -n ${BENCH_TRANSPORTS:-} ]] && export FERRY_TRANSPORTS=$BENCH_TRANSPORTS

# test:size:iterations; the value reported: latency for *_lat, GB/s for *_bw of >= 64 KiB,
# else the message rate
cases=${BENCH_CASES:-"am_lat:8:200000 tag_lat:8:200000 put_lat:8:200000 am_bw:8:2000000 tag_bw:8:2000000 tag_bw:1048576:4000 tag_bw:16777216:200"}

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_builds.XXXXXX")
trap 'cleanup; rm -rf "$work"' EXIT
raw=$work/raw.csv # build,test,size,value
: >"$raw"
read -r -a case_list <<<"$cases"
total_runs=$((2 * repeat * ${#case_list[@]}))
count=0
start_time=$SECONDS

read -r -a old_args <<<"${BENCH_OLD_ARGS:-}"
read -r -a new_args <<<"${BENCH_NEW_ARGS:-}"

# run BUILD PERF TEST SIZE ITERS
run() {
    local build=$1 perf=$2 test=$3 size=$4 iters=$(($5 * scale))
    local -a args=("${old_args[@]}")
    [[ $build == new ]] && args=("${new_args[@]}")
    bench_progress "$(printf '%s %-7s %9s B' "$build" "$test" "$size")"
    bench_run "$perf" -c 0 "${args[@]}" -- localhost -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $((iters / 10)) -f csv "${args[@]}"
    # test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
    echo "$run_out" | awk -F, -v b="$build" -v t="$test" '$1 == t {
        if (t ~ /_lat$/) v = $4; else if ($2 >= 65536) v = $6; else v = $7
        printf "%s,%s,%s,%s\n", b, $1, $2, v }' >>"$raw"
}

echo "$bench_name: $repeat runs per case and build, A B alternating; load $bench_load_start" >&2
for ((r = 1; r <= repeat; r++)); do
    for c in "${case_list[@]}"; do
        IFS=: read -r test size iters <<<"$c"
        # alternate which build goes first, so that neither always follows the other
        if ((r % 2)); then
            run old "$old_perf" "$test" "$size" "$iters"
            run new "$new_perf" "$test" "$size" "$iters"
        else
            run new "$new_perf" "$test" "$size" "$iters"
            run old "$old_perf" "$test" "$size" "$iters"
        fi
    done
done

[[ -n ${BENCH_RAW:-} ]] && cp "$raw" "$BENCH_RAW"
echo "old: $old_perf ${BENCH_OLD_ARGS:-}"
echo "new: $new_perf ${BENCH_NEW_ARGS:-}"
echo "$repeat runs each, alternating; ${FERRY_TRANSPORTS:+FERRY_TRANSPORTS=$FERRY_TRANSPORTS; }load at start $bench_load_start, at end $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
printf '%-8s %9s %7s %12s %12s %8s\n' test size unit old new new/old
for c in "${case_list[@]}"; do
    IFS=: read -r test size _ <<<"$c"
    unit="M/s"
    [[ $test == *_lat ]] && unit="us"
    [[ $test == *_bw ]] && ((size >= 65536)) && unit="GB/s"
    old=$(awk -F, -v t="$test" -v s="$size" '$1 == "old" && $2 == t && $3 == s {print $4}' "$raw" |
        sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    new=$(awk -F, -v t="$test" -v s="$size" '$1 == "new" && $2 == t && $3 == s {print $4}' "$raw" |
        sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    printf '%-8s %9s %7s %12.4f %12.4f %8.3f\n' "$test" "$size" "$unit" "$old" "$new" \
        "$(awk -v a="$old" -v b="$new" 'BEGIN {print (a > 0 ? b / a : 0)}')"
done
