#!/usr/bin/env bash
# compare_seg.sh: ferry's named segments beside the physical limits of this host.
#
# In one session, REPEAT rounds (default 3) of, one run after the other:
#   physical_limits  (bench/physical_limits.c, built here with plain `cc -O2`, no ferry):
#                    a cache-line ping-pong between two processes through a MAP_SHARED
#                    anonymous mapping (one-way ns), single-thread memcpy bandwidth at 64 KiB,
#                    1 MiB, 16 MiB, 256 MiB (huge-page memory to huge-page memory, into a
#                    memfd, out of a memfd)
#   seg_map_lat      ferry_perf: a flag word ping-ponged through a mapped segment, 8 B
#   seg_dma_bw       ferry_perf: one-entry DMA queues writing 64 KiB, 1 MiB, 16 MiB, 256 MiB,
#                    with FERRY_SEGMENT_COPY_THREADS=0, 1 and 2
#   seg_dma_read_bw  the same, reading
#   put_bw, get_bw   ferry_perf --mem alloc (the peer's mapping) at the same sizes
# Servers run on core 0, clients on core 1 (the copy-thread runs leave the client unpinned: its
# threads would otherwise share core 1; their servers sleep in ferry_worker_wait). Prints one
# table of medians over the REPEAT rounds with the physical limits beside ferry's figures.
#
# Usage: bench/compare_seg.sh [REPEAT]     (default 3; see bench/README.md)
# Environment: FERRY_PERF (default build/tools/ferry_perf), CC (default cc),
# BENCH_RESULTS (a folder: keep the raw CSV there as <script>.csv, with <script>.info saying
# when, where, with which versions and under what load it ran; bench/report.sh sets it).
# Progress (run k of n, elapsed, estimated time left) goes to stderr, the tables to stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# servers on fresh ports, cleanup on exit, apt_install, cpu_busy_percent (and lib.awk)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
repeat=${1:-3}
cc=${CC:-cc}
run_timeout=120 # seconds any one client or server may take
sizes="65536 1048576 16777216 268435456"
size_list=64K,1M,16M,256M
lat_iters=200000

check_args "rounds, default 3"
need_tools "$cc" ss awk timeout

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_seg.XXXXXX")
raw=$work/raw.csv # src,test,size,mode,p50_ns,avg_ns,bw_GBps
echo "src,test,size,mode,p50_ns,avg_ns,bw_GBps" >"$raw"

physical=$work/physical_limits
physical_limits_build "$physical"

count=0
total_runs=$((10 * repeat))

# run_physical: physical_limits (ping-pong responder on core 0, measuring on core 1)
run_physical() {
    bench_progress physical_limits
    local out
    local size_args
    read -r -a size_args <<<"$sizes"
    if ! out=$(timeout $run_timeout "$physical" -r 5 -a 0 -b 1 "${size_args[@]}" 2>"$work/physical.log"); then
        echo "compare_seg.sh: physical_limits failed:" >&2
        cat "$work/physical.log" >&2
        exit 1
    fi
    # test,size,median,min,max
    echo "$out" | awk -F, 'NR > 1 {
        if ($1 ~ /_ns$/) printf "phys,%s,%s,-,%s,%s,\n", $1, $2, $3, $3
        else printf "phys,%s,%s,-,,,%s\n", $1, $2, $3 }' >>"$raw"
}

# run_ferry TEST SIZES MODE [ferry_perf client options...]
#   MODE: t0, t1, t2 (FERRY_SEGMENT_COPY_THREADS; t1 and t2 leave the client unpinned and the
#   server sleeping), or "-" (no copy threads)
run_ferry() {
    local test=$1 list=$2 mode=$3
    shift 3
    local threads=0 pin=(-c 1) extra=()
    case $mode in
    t1 | t2)
        threads=${mode#t}
        pin=()
        extra=(--wait)
        ;;
    t0) extra=(--wait) ;;
    esac
    bench_progress "$(printf 'ferry %-16s %-18s %s' "$test" "$list" "$mode")"
    local run_env=(-u FERRY_SEGMENT_DMA_CHUNK -u FERRY_SEGMENT_COPY_CHUNK
        FERRY_SEGMENT_COPY_THREADS="$threads")
    bench_run "$ferry_perf" -c 0 -- localhost "${pin[@]}" -t "$test" -s "$list" "${extra[@]}" \
        "$@" -f csv
    # test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
    echo "$run_out" | awk -F, -v mode="$mode" '$1 == "'"$test"'" {
        p50 = $4 == "" ? "" : $4 * 1000; avg = $5 == "" ? "" : $5 * 1000
        printf "ferry,%s,%s,%s,%s,%s,%s\n", $1, $2, mode, p50, avg, $6 }' >>"$raw"
}

echo "compare_seg.sh: $repeat rounds; raw results in $raw" >&2
busy_before=$(cpu_busy_percent)
start_time=$SECONDS
for ((r = 1; r <= repeat; r++)); do
    run_physical
    run_ferry seg_map_lat 8 - -n $lat_iters -w $((lat_iters / 10))
    for mode in t0 t1 t2; do
        run_ferry seg_dma_bw "$size_list" "$mode"
        run_ferry seg_dma_read_bw "$size_list" "$mode"
    done
    run_ferry put_bw "$size_list" - --mem alloc
    run_ferry get_bw "$size_list" - --mem alloc
done
elapsed=$((SECONDS - start_time))
echo "compare_seg.sh: $count runs in $elapsed s" >&2

# ------------------------------------------------------------------ report: medians
cpu=$(bench_cpu)
shmem_thp=$(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null || echo unknown)
echo
echo "ferry named segments ($ferry_perf) beside the physical limits of this host (bench/physical_limits.c, $cc -O2)"
echo "server / responder on core 0, client / measurer on core 1, medians of $repeat rounds, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "host: $cpu, $(nproc) CPUs, $(uname -r); shmem THP: $shmem_thp"
echo "CPUs busy with other work in the second before the start: ${busy_before}% (above ~10%: rerun)"
awk -F, -v sizes="$sizes" -f "$here/lib.awk" -f <(printf '%s\n' '
function max3(a, b, c,   m) { m = a; if (b != "" && (m == "" || b + 0 > m + 0)) m = b; if (c != "" && (m == "" || c + 0 > m + 0)) m = c; return m }
NR > 1 {
    k = $1 "," $2 "," $3 "," $4
    add(k ",p50", $5); add(k ",avg", $6); add(k ",bw", $7)
}
END {
    ns = split(sizes, S, " ")
    phys = median("phys,cacheline_pingpong_oneway_ns,64,-,p50")
    fp = median("ferry,seg_map_lat,8,-,p50"); fa = median("ferry,seg_map_lat,8,-,avg")
    printf "\nlatency, one way (ns): half a round trip of one cache line between the two processes\n"
    printf "%-52s %9s %9s %12s %12s\n", "", "p50", "avg", "p50/physical", "avg/physical"
    printf "%-52s %9s %9s %12s %12s\n", "physical: cache-line ping-pong (mean of a repeat)", fmt(phys, "%.1f"), "-", "1.00", "-"
    printf "%-52s %9s %9s %12s %12s\n", "ferry seg_map_lat 8 B (store + store_barrier, spin)", fmt(fp, "%.1f"), fmt(fa, "%.1f"), ratio(fp, phys), ratio(fa, phys)

    split("write read", D, " ")
    for (d = 1; d <= 2; d++) {
        t = D[d] == "write" ? "seg_dma_bw" : "seg_dma_read_bw"
        o = D[d] == "write" ? "put_bw" : "get_bw"
        f = D[d] == "write" ? "to" : "from"
        printf "\n%s bandwidth, GB/s (10^9 B/s): physical single-thread memcpy (huge pages to huge pages / %s a memfd)\n", D[d], f == "to" ? "into" : "out of"
        printf "beside ferry %s with FERRY_SEGMENT_COPY_THREADS=0/1/2 and %s --mem alloc; best/memfd = the best ferry figure / the memfd memcpy\n", t, o
        printf "%7s %8s %8s %9s %9s %9s %9s %9s %10s\n", "size", "memcpy", "memfd", "dma_t0", "dma_t1", "dma_t2", o, "t2/t1", "best/memfd"
        for (i = 1; i <= ns; i++) {
            s = S[i]
            m = median("phys,memcpy_GBps," s ",-,bw"); mf = median("phys,memcpy_" f "_memfd_GBps," s ",-,bw")
            t0 = median("ferry," t "," s ",t0,bw"); t1 = median("ferry," t "," s ",t1,bw"); t2 = median("ferry," t "," s ",t2,bw")
            p = median("ferry," o "," s ",-,bw")
            best = max3(max3(t0, t1, t2), p, "")
            printf "%7s %8s %8s %9s %9s %9s %9s %9s %10s\n", human(s), fmt(m, "%.2f"), fmt(mf, "%.2f"), fmt(t0, "%.2f"), fmt(t1, "%.2f"), fmt(t2, "%.2f"), fmt(p, "%.2f"), ratio(t2, t1), ratio(best, mf)
        }
    }
}') "$raw"
echo
echo "raw results (one line per size and run): $raw"
bench_keep_results
