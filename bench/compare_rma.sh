#!/usr/bin/env bash
# compare_rma.sh: ferry_perf against UCX's ucx_perftest (UCT), one-sided operations over shared
# memory.
#
# In one session, alternating ferry and UCX run by run (A B A B ...), REPEAT times:
#   put_lat  at 8 B, 4 KiB, 64 KiB, 1 MiB, 16 MiB, 64 MiB: ferry (--mem alloc: stores into the
#            peer's mapping) vs UCX put_lat -x posix -d memory -D short (8 B) / -D bcopy (larger)
#   put_bw   at 8 B, every power of two from 4 KiB to 1 MiB (issue 14), 16 MiB, 64 MiB:
#            ferry --mem alloc, ferry --mem register (cross-memory attach)
#            vs UCX put_bw -x cma -d memory -D zcopy and -x posix -d memory -D bcopy
#   get_bw   the same, vs UCX get -x cma -D zcopy and -x posix -D bcopy
# and at 8 B: ferry atomic_lat (fetch-add on the mapping) vs UCX fadd -x posix -d memory;
# then ferry alone: the fallback path (--mem register, FERRY_SHM_CMA=off in both processes),
# put_bw and get_bw at 64 KiB, 1 MiB, 16 MiB.
# Servers run on core 0, clients on core 1. Prints tables of medians over the REPEAT runs and
# a summary of the issue's targets.
#
# Usage: bench/compare_rma.sh [REPEAT]     (default 5; see bench/README.md)
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
ferry_info=$(dirname "$ferry_perf")/ferry_info
run_timeout=120 # seconds any one client or server may take
sizes="8 4096 65536 1048576 16777216 67108864"
bw_sizes="8 4096 8192 16384 32768 65536 131072 262144 524288 1048576 16777216 67108864"
fallback_sizes="65536 1048576 16777216"

check_args "runs per configuration, default 5"
command -v ucx_perftest >/dev/null || apt_install ucx-utils
need_tools ucx_perftest ucx_info ss awk timeout
# UCX's transports here: posix (mapped shared memory) and cma, both on device "memory".
ucx_need_transports posix cma

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_rma.XXXXXX")
raw=$work/raw.csv # lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
echo "lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps" >"$raw"

# Iterations per run: enough for a stable median, few enough for a ~6 minute default session.
lat_iters() {
    case $1 in
    8) echo 100000 ;;
    4096) echo 50000 ;;
    65536) echo 10000 ;;
    1048576) echo 2000 ;;
    16777216) echo 60 ;;
    67108864) echo 16 ;;
    esac
}
bw_iters() {
    case $1 in
    8) echo 200000 ;;
    4096 | 8192) echo 100000 ;;
    16384 | 32768) echo 40000 ;;
    65536) echo 20000 ;;
    131072 | 262144) echo 8000 ;;
    524288 | 1048576) echo 2000 ;;
    16777216) echo 100 ;;
    67108864) echo 30 ;;
    esac
}
fallback_iters() {
    case $1 in
    65536) echo 2000 ;;
    1048576) echo 200 ;;
    16777216) echo 16 ;;
    esac
}
atomic_iters=200000

nsizes=$(wc -w <<<"$sizes")
nbw=$(wc -w <<<"$bw_sizes")
nfallback=$(wc -w <<<"$fallback_sizes")
count=0
total_runs=$(((nsizes * 2 + nbw * 8 + 2 + nfallback * 2) * repeat))

# run_ferry TEST SIZE ITERS MODE   (MODE: alloc, register, fallback)
run_ferry() {
    local test=$1 size=$2 iters=$3 mode=$4
    local mem=$mode cma=on
    if [[ $mode == fallback ]]; then
        mem=register
        cma=off
    fi
    local run_env=("${ferry_env[@]}" "FERRY_SHM_CMA=$cma")
    iters=$((iters * scale))
    bench_progress "$(printf 'ferry %-10s %9s B %s' "$test" "$size" "$mode")"
    bench_run "$ferry_perf" -c 0 -- localhost -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $(((iters + 9) / 10)) --mem "$mem" -f csv
    ferry_record "$test" "$mode" "$run_out"
}

# run_ucx TEST SIZE ITERS TL LAYOUT   (TEST: put_lat, put_bw, get, fadd; LAYOUT "" for atomics)
run_ucx() {
    local test=$1 size=$2 iters=$3 tl=$4 layout=$5
    local name=$test mode=$tl${layout:+-$layout}
    local extra=()
    [[ -n $layout ]] && extra=(-D "$layout")
    case $test in
    get) name=get_bw ;;
    fadd) name=atomic_lat ;;
    esac
    iters=$((iters * scale))
    bench_progress "$(printf 'ucx   %-10s %9s B %s' "$test" "$size" "$mode")"
    # put_lat is one way, half the round trip, like ferry's; get and fadd latencies are of one
    # operation, like ferry's get_lat and atomic_lat
    bench_run ucx_perftest -c 0 -- localhost -c 1 -t "$test" -x "$tl" -d memory "${extra[@]}" \
        -s "$size" -n "$iters" -w $(((iters + 9) / 10))
    ucx_record "$name" "$size" "$mode" "$run_out"
}

echo "compare_rma.sh: $repeat runs per configuration; raw results in $raw" >&2
busy_before=$(cpu_busy_percent)
start_time=$SECONDS
for ((r = 1; r <= repeat; r++)); do
    for size in $sizes; do
        layout=bcopy
        ((size <= 8)) && layout=short
        n=$(lat_iters "$size")
        run_ferry put_lat "$size" "$n" alloc
        run_ucx put_lat "$size" "$n" posix "$layout"
    done
    for size in $bw_sizes; do
        n=$(bw_iters "$size")
        run_ferry put_bw "$size" "$n" alloc
        run_ucx put_bw "$size" "$n" cma zcopy
        run_ferry put_bw "$size" "$n" register
        run_ucx put_bw "$size" "$n" posix bcopy
        run_ferry get_bw "$size" "$n" alloc
        run_ucx get "$size" "$n" cma zcopy
        run_ferry get_bw "$size" "$n" register
        run_ucx get "$size" "$n" posix bcopy
    done
    run_ferry atomic_lat 8 $atomic_iters alloc
    run_ucx fadd 8 $atomic_iters posix ""
    for size in $fallback_sizes; do
        n=$(fallback_iters "$size")
        run_ferry put_bw "$size" "$n" fallback
        run_ferry get_bw "$size" "$n" fallback
    done
done
elapsed=$((SECONDS - start_time))
echo "compare_rma.sh: $count runs in $elapsed s" >&2

# ------------------------------------------------------------------ report: medians
cpu=$(bench_cpu)
cma_line=$("$ferry_info" -d 2>/dev/null | grep -o 'cross-memory attach usable: .*' || true)
echo
echo "ferry ($ferry_perf) vs UCX $(bench_version ucx) (ucx_perftest, UCT: posix and cma on device memory)"
echo "one-sided operations over shared memory, server on core 0, client on core 1, medians of $repeat runs each, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "host: $cpu, $(nproc) CPUs, $(uname -r); ferry: ${cma_line:-ferry_info -d says nothing about cross-memory attach}"
echo "CPUs busy with other work in the second before the start: ${busy_before}% (above ~10%: rerun)"
awk -F, -v sizes="$sizes" -v bw_sizes="$bw_sizes" -v fsizes="$fallback_sizes" -f "$here/lib.awk" -f <(printf '%s\n' '
NR > 1 {
    k = $1 "," $2 "," $3 "," $4
    add(k ",p50", $5); add(k ",avg", $6); add(k ",bw", $7); add(k ",rate", $8)
}
END {
    ns = split(sizes, S, " ")
    printf "\nput_lat: ping-pong of puts, one-way latency (us); ferry --mem alloc vs UCX posix (short at 8 B, bcopy above)\n"
    printf "ratio = ferry / UCX: below 1, ferry is faster\n"
    printf "%9s %11s %11s %8s %11s %11s %8s\n", "size", "ferry_p50", "ucx_p50", "ratio", "ferry_avg", "ucx_avg", "ratio"
    for (i = 1; i <= ns; i++) {
        s = S[i]; u = (s <= 8) ? "posix-short" : "posix-bcopy"
        fp = median("ferry,put_lat," s ",alloc,p50"); up = median("ucx,put_lat," s "," u ",p50")
        fa = median("ferry,put_lat," s ",alloc,avg"); ua = median("ucx,put_lat," s "," u ",avg")
        printf "%9s %11s %11s %8s %11s %11s %8s\n", human(s), fmt(fp, "%.3f"), fmt(up, "%.3f"), ratio(fp, up), fmt(fa, "%.3f"), fmt(ua, "%.3f"), ratio(fa, ua)
        if (s == 8) { lat8_f = fp; lat8_u = up }
    }
    nb = split(bw_sizes, B, " ")
    split("put_bw get_bw", T, " ")
    for (t = 1; t <= 2; t++) {
        test = T[t]
        printf "\n%s: GB/s (10^9 B/s); ferry alloc = loads/stores on the mapping, ferry register = cross-memory attach;\n", test
        printf "UCX = %s -d memory, -x cma -D zcopy and -x posix -D bcopy; best = the faster UCX;\n", test == "put_bw" ? "put_bw" : "get"
        printf "ratio = ferry / UCX: above 1, ferry is faster\n"
        printf "%9s %12s %12s %12s %12s %10s %10s %9s\n", "size", "ferry_alloc", "ferry_reg", "ucx_cma", "ucx_posix", "alloc/best", "reg/cma", "reg/best"
        for (i = 1; i <= nb; i++) {
            s = B[i]
            fa = median("ferry," test "," s ",alloc,bw"); fr = median("ferry," test "," s ",register,bw")
            u = median("ucx," test "," s ",cma-zcopy,bw"); up = median("ucx," test "," s ",posix-bcopy,bw")
            best = (up != "" && (u == "" || up > u)) ? up : u
            printf "%9s %12s %12s %12s %12s %10s %10s %9s\n", human(s), fmt(fa, "%.3f"), fmt(fr, "%.3f"), fmt(u, "%.3f"), fmt(up, "%.3f"), ratio(fa, best), ratio(fr, u), ratio(fr, best)
            if (s >= 65536) {
                big++
                if (fa == "" || u == "" || fa < u) miss_alloc = miss_alloc sprintf(" %s %s (%s)", test, human(s), ratio(fa, u))
                if (fr == "" || u == "" || fr < u) miss_reg = miss_reg sprintf(" %s %s (%s)", test, human(s), ratio(fr, u))
            }
            if (s >= 4096 && s <= 1048576) {
                mid++
                kb = "ucx," test "," s "," (best == up ? "posix-bcopy" : "cma-zcopy") ",bw"
                if (fa == "" || best == "" || fa < best) miss_mid_alloc = miss_mid_alloc sprintf(" %s %s (%s%s)", test, human(s), ratio(fa, best), overlap("ferry," test "," s ",alloc,bw", kb) ? ", runs overlap" : "")
                if (fr == "" || u == "" || fr < u) miss_mid_reg = miss_mid_reg sprintf(" %s %s (%s%s)", test, human(s), ratio(fr, u), overlap("ferry," test "," s ",register,bw", "ucx," test "," s ",cma-zcopy,bw") ? ", runs overlap" : "")
            }
        }
    }
    printf "\natomic_lat: one 8-byte fetch-add at a time (us); ferry --mem alloc (CPU atomic on the mapping) vs UCX fadd -x posix\n"
    printf "%9s %11s %11s %8s %11s %11s %8s\n", "size", "ferry_p50", "ucx_p50", "ratio", "ferry_avg", "ucx_avg", "ratio"
    af = median("ferry,atomic_lat,8,alloc,p50"); au = median("ucx,atomic_lat,8,posix,p50")
    aaf = median("ferry,atomic_lat,8,alloc,avg"); aau = median("ucx,atomic_lat,8,posix,avg")
    printf "%9s %11s %11s %8s %11s %11s %8s\n", 8, fmt(af, "%.3f"), fmt(au, "%.3f"), ratio(af, au), fmt(aaf, "%.3f"), fmt(aau, "%.3f"), ratio(aaf, aau)
    nf = split(fsizes, F, " ")
    printf "\nferry fallback (--mem register, FERRY_SHM_CMA=off: copies through shared buffers by the target'"'"'s progress), GB/s\n"
    printf "%9s %12s %12s %14s %14s\n", "size", "put_bw", "get_bw", "put/cma_path", "get/cma_path"
    for (i = 1; i <= nf; i++) {
        s = F[i]
        fp = median("ferry,put_bw," s ",fallback,bw"); fg = median("ferry,get_bw," s ",fallback,bw")
        printf "%9s %12s %12s %14s %14s\n", human(s), fmt(fp, "%.3f"), fmt(fg, "%.3f"), ratio(fp, median("ferry,put_bw," s ",register,bw")), ratio(fg, median("ferry,get_bw," s ",register,bw"))
    }
    printf "\ntargets (issue 3), on these medians:\n"
    printf "  large put/get bandwidth >= UCX cma at every size >= 64 KiB (%d cases):\n", big
    printf "    ferry --mem alloc:    %s\n", miss_alloc == "" ? "met" : "NOT met at" miss_alloc
    printf "    ferry --mem register: %s\n", miss_reg == "" ? "met" : "NOT met at" miss_reg
    printf "  issue 14: put/get bandwidth 4 KiB .. 1 MiB >= UCX (%d cases):\n", mid
    printf "    ferry --mem alloc >= best of UCX cma and posix: %s\n", miss_mid_alloc == "" ? "met" : "NOT met at" miss_mid_alloc
    printf "    ferry --mem register >= UCX cma:                %s\n", miss_mid_reg == "" ? "met" : "NOT met at" miss_mid_reg
    printf "  8 B put latency <= UCX (p50 %s vs %s us): %s\n", fmt(lat8_f, "%.3f"), fmt(lat8_u, "%.3f"), (lat8_f != "" && lat8_u != "" && lat8_f <= lat8_u) ? "met" : "NOT met"
    printf "  fetch-add latency <= UCX (p50 %s vs %s us): %s\n", fmt(af, "%.3f"), fmt(au, "%.3f"), (af != "" && au != "" && af <= au) ? "met" : "NOT met"
}') "$raw"
echo
echo "raw results (one line per run): $raw"
bench_keep_results
