#!/usr/bin/env bash
# compare_tag.sh: tagged messages, ferry_perf against UCX's ucx_perftest (UCP) and Open MPI.
#
# In one session, alternating run by run (A B C D E ...), REPEAT times, at 8 B and every power
# of two from 4 KiB to 64 MiB (--short: 8 B, 4 KiB, 64 KiB, 1 MiB, 16 MiB, 64 MiB), tag_lat
# (ping-pong) and tag_bw (windowed streaming) of:
#   ferry      ferry_perf -t tag_lat|tag_bw (automatic rendezvous mode)
#   ucx-sm     ucx_perftest -t tag_lat|tag_bw, UCX_TLS=sm,self (cross-memory attach)
#   ucx-posix  the same with UCX_TLS=posix,self (no cross-memory attach)
#   mpi        bench/mpi_pingpong.c on Open MPI (ob1, btl vader: its default single copy)
#   mpi-nocma  the same with --mca btl_vader_single_copy_mechanism none (copy in, copy out)
# then ferry's tag_bw with each FERRY_RNDV_MODE (get, put, coop, null, split; with
# FERRY_RNDV_THRESH=4096, so that every size runs the mode, not eager) at 64 KiB, 256 KiB,
# 1 MiB and 16 MiB. For every size it prints how ferry's automatic choice moved the messages
# (the client's counters: eager, coop, split, ...) and flags a size whose bandwidth falls more
# than 10 % below the size before it. Each round starts with bench/physical_limits.c -2: the
# cache-line ping-pong between the two cores (which placement the vCPUs have: ~31, ~50 or
# ~225 ns) and, from 1 MiB, two processes copying halves at once: copy2 (memcpy in a shared
# mapping) and cma2 (the copies a SPLIT transfer makes: the receiver's process_vm_readv of one
# half, the sender's process_vm_writev of the other, between private buffers); a fall that the
# physical copy of ferry's mode at that size shows as well (cma2 where it used SPLIT, copy2
# elsewhere: the last-level cache edge) is marked "edge", not "DROP".
# Servers run on core 0, clients on core 1 (MPI: rank 0, the server, on core 0). Prints tables
# of medians over the REPEAT runs with ratios to the best peer, and the issue's targets.
#
# Usage: bench/compare_tag.sh [--short] [REPEAT]     (default 5; see bench/README.md)
# Environment: FERRY_PERF (default build/tools/ferry_perf),
# BENCH_ITERS_SCALE (multiplies every iteration count, default 1), MPICC
# (default mpicc),
# BENCH_SIZES, BENCH_MODE_SIZES (replace the sizes of the main runs and of the forced-mode runs,
# e.g. "65536 131072 262144": powers of two from 4096 to 67108864, and 8),
# BENCH_RESULTS (a folder: keep the raw CSV there as <script>.csv, with <script>.info saying
# when, where, with which versions and under what load it ran; bench/report.sh sets it).
# Progress (run k of n, elapsed, estimated time left) goes to stderr, the tables to stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# servers on fresh ports, cleanup on exit, apt_install, cpu_busy_percent (and lib.awk)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
short=0
if [[ ${1:-} == --short ]]; then
    short=1
    shift
fi
repeat=${1:-5}
mpicc=${MPICC:-mpicc}
run_timeout=120 # seconds any one client, server or mpirun may take
window=16       # sends (and receives) in flight in tag_bw: ferry_perf's PERF_TAG_WINDOW
if ((short)); then
    sizes="8 4096 65536 1048576 16777216 67108864"
    mode_sizes="1048576 16777216"
else
    sizes="8"
    for ((s = 4096; s <= 67108864; s *= 2)); do sizes="$sizes $s"; done
    mode_sizes="65536 262144 1048576 16777216"
fi
# a focused session: BENCH_SIZES and BENCH_MODE_SIZES (sizes with an iteration count below)
sizes=${BENCH_SIZES:-$sizes}
mode_sizes=${BENCH_MODE_SIZES:-$mode_sizes}
modes="get put coop null split"

check_args "runs per configuration, default 5 (--short first: the six fixed sizes only)"

command -v ucx_perftest >/dev/null || apt_install ucx-utils
if ! command -v "$mpicc" >/dev/null || ! command -v mpirun.openmpi >/dev/null; then
    apt_install openmpi-bin libopenmpi-dev
fi
need_tools ucx_perftest ucx_info "$mpicc" mpirun.openmpi ompi_info ss awk timeout
# UCX's shared-memory transports: posix (mapped segments) and cma (cross-memory attach).
ucx_need_transports posix cma

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_tag.XXXXXX")
raw=$work/raw.csv # lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
echo "lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps" >"$raw"
# how ferry's automatic runs moved their messages: test,size,then "mode count" pairs from the
# client's counters (ferry_perf -v: "tagged of LO..HI B: coop N split M"), warm-up included
modes_csv=$work/modes.csv
: >"$modes_csv"

# The MPI program: built here, with Open MPI's compiler wrapper (not a CMake dependency).
mpi_prog=$work/mpi_pingpong
mpi_pingpong_build "$mpi_prog"
physical=$work/physical_limits
physical_limits_build "$physical"
mpirun_args=(--allow-run-as-root --oversubscribe -np 2 --bind-to core --mca pml ob1
    --mca btl "self,vader")

# Iterations per run: enough for a stable median, few enough for a short session; a tenth of
# them is the warm-up, which holds the automatic choice's calibration at 8 KiB .. 1 MiB (up to
# six blocks of max(16, 2 MiB / size) messages and the sends between them).
lat_iters() {
    case $1 in
    8) echo 100000 ;;
    4096) echo 50000 ;;
    8192) echo 40000 ;;
    16384) echo 20000 ;;
    32768 | 65536) echo 10000 ;;
    131072) echo 6000 ;;
    262144) echo 4000 ;;
    524288 | 1048576) echo 3000 ;;
    2097152) echo 500 ;;
    4194304) echo 250 ;;
    8388608) echo 120 ;;
    16777216) echo 60 ;;
    33554432) echo 30 ;;
    67108864) echo 16 ;;
    esac
}
bw_iters() {
    case $1 in
    8) echo 200000 ;;
    4096) echo 100000 ;;
    8192) echo 50000 ;;
    16384) echo 30000 ;;
    32768 | 65536) echo 20000 ;;
    131072) echo 10000 ;;
    262144) echo 6000 ;;
    524288) echo 4000 ;;
    1048576) echo 3000 ;;
    2097152) echo 1000 ;;
    4194304) echo 500 ;;
    8388608) echo 200 ;;
    16777216) echo 100 ;;
    33554432) echo 60 ;;
    67108864) echo 30 ;;
    esac
}

nsizes=$(wc -w <<<"$sizes")
nmodes=$(($(wc -w <<<"$modes") * $(wc -w <<<"$mode_sizes")))
count=0
total_runs=$(((nsizes * 2 * 5 + nmodes + 1) * repeat))
copy_sizes=""
for size in $sizes; do ((size >= 1048576)) && copy_sizes="$copy_sizes $size"; done

# run_physical: physical_limits -2 (responder and copy helper on core 0, measurer on core 1):
# the ping-pong floor as phys,pingpong,64 (lat_p50_us), copy2 and cma2 at copy_sizes (bw_GBps)
run_physical() {
    bench_progress physical_limits -2$copy_sizes
    local out size_args
    read -r -a size_args <<<"${copy_sizes:-1048576}"
    if ! out=$(timeout $run_timeout "$physical" -2 -r 5 -a 0 -b 1 "${size_args[@]}" \
        2>"$work/physical.log"); then
        echo "compare_tag.sh: physical_limits failed:" >&2
        cat "$work/physical.log" >&2
        exit 1
    fi
    echo "$out" | awk -F, 'NR > 1 {
        if ($1 ~ /_ns$/) printf "phys,pingpong,64,-,%.4f,,,\n", $3 / 1000
        else printf "phys,%s,%s,-,,,%s,\n", $1 ~ /^cma2/ ? "cma2" : "copy2", $2, $3 }' >>"$raw"
}

# run_ferry TEST SIZE MODE   (MODE: auto, or a FERRY_RNDV_MODE)
run_ferry() {
    local test=$1 size=$2 mode=$3
    local iters run_env=("${ferry_env[@]}")
    iters=$(tag_iters_of "$test" "$size")
    [[ $mode != auto ]] && run_env+=("FERRY_RNDV_MODE=$mode" FERRY_RNDV_THRESH=4096)
    run_progress ferry "$test" "$size" "$mode"
    bench_run "$ferry_perf" -c 0 -- localhost -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $(((iters + 9) / 10)) -f csv -v
    ferry_record "$test" "$mode" "$run_out"
    [[ $mode == auto ]] || return 0
    awk -v test="$test" -v size="$size" '$1 == "tagged" && $2 == "of" {
        split($3, r, /\.\./); if (size + 0 < r[1] + 0 || size + 0 > r[2] + 0) next
        line = test "," size; for (i = 5; i < NF; i += 2) line = line "," $i " " $(i + 1)
        print line }' "$work/client.log" >>"$modes_csv"
}

# run_ucx TEST SIZE TLS   (TLS: sm or posix; with self for the loopback)
run_ucx() {
    local test=$1 size=$2 tls=$3
    local iters extra=() run_env=("UCX_TLS=$tls,self")
    iters=$(tag_iters_of "$test" "$size")
    [[ $test == tag_bw ]] && extra=(-O "$window")
    run_progress ucx "$test" "$size" "$tls"
    bench_run ucx_perftest -c 0 -- localhost -c 1 -t "$test" -s "$size" -n "$iters" \
        -w $(((iters + 9) / 10)) "${extra[@]}"
    ucx_record "$test" "$size" "$tls" "$run_out"
}

# run_mpi TEST SIZE MODE   (MODE: cma = vader's default single copy, nocma = none)
run_mpi() {
    local test=$1 size=$2 mode=$3
    local iters extra=()
    iters=$(tag_iters_of "$test" "$size")
    [[ $mode == nocma ]] && extra=(--mca btl_vader_single_copy_mechanism none)
    run_progress mpi "$test" "$size" "$mode"
    local out
    if ! out=$(timeout $run_timeout mpirun.openmpi "${mpirun_args[@]}" "${extra[@]}" \
        "$mpi_prog" -t "$test" -s "$size" -n "$iters" -w $(((iters + 9) / 10)) \
        2>"$work/mpi.log"); then
        echo "compare_tag.sh: mpirun failed ($mode):" >&2
        echo "$out" >&2
        cat "$work/mpi.log" >&2
        exit 1
    fi
    echo "$out" | awk -F, -v test="$test" -v mode="$mode" '$1 == test {
        printf "mpi,%s,%s,%s,%s,%s,%s,%s\n", $1, $2, mode, $4, $5, $6, $7 }' >>"$raw"
}

echo "compare_tag.sh: $repeat runs per configuration; raw results in $raw" >&2
busy_before=$(cpu_busy_percent)
start_time=$SECONDS
for ((r = 1; r <= repeat; r++)); do
    run_physical
    for size in $sizes; do
        for test in tag_lat tag_bw; do
            run_ferry "$test" "$size" auto
            run_ucx "$test" "$size" sm
            run_ucx "$test" "$size" posix
            run_mpi "$test" "$size" cma
            run_mpi "$test" "$size" nocma
        done
    done
    for size in $mode_sizes; do
        for mode in $modes; do
            run_ferry tag_bw "$size" "$mode"
        done
    done
done
elapsed=$((SECONDS - start_time))
echo "compare_tag.sh: $count runs in $elapsed s" >&2

# ------------------------------------------------------------------ report: medians
cpu=$(bench_cpu)
ucx_version=$(bench_version ucx)
ompi_version=$(bench_version openmpi)
single_copy=$(ompi_info --param btl vader --level 9 2>/dev/null |
    awk -F'"' '/"btl_vader_single_copy_mechanism"/ {print $4; exit}')
echo
echo "tagged messages: ferry ($ferry_perf) vs UCX $ucx_version (ucx_perftest, UCP) vs Open MPI $ompi_version (bench/mpi_pingpong.c)"
echo "shared memory, servers on core 0, clients on core 1, busy polling, medians of $repeat runs each, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "host: $cpu, $(nproc) CPUs, $(uname -r); tag_bw window: $window sends / receives in flight"
echo "peers: ucx-sm = UCX_TLS=sm,self; ucx-posix = UCX_TLS=posix,self (no CMA); mpi = ob1/vader, single copy '${single_copy:-?}' (default);"
echo "       mpi-nocma = vader with btl_vader_single_copy_mechanism none"
echo "CPUs busy with other work in the second before the start: ${busy_before}% (above ~10%: rerun)"
awk -F, -v sizes="$sizes" -v msizes="$mode_sizes" -v modes="$modes" -v mfile="$modes_csv" \
    -f "$here/lib.awk" -f <(printf '%s\n' '
# How the automatic runs of test at size s moved their messages: the mode of most of them and
# its share over all runs (warm-up and calibration included), or "-".
function mode_of(test, s,   k, m, bestm, bestc) {
    k = test "," s; bestm = ""; bestc = 0
    for (m in MC) {
        split(m, q, SUBSEP)
        if (q[1] == k && MC[m] > bestc) { bestc = MC[m]; bestm = q[2] }
    }
    return bestm == "" ? "-" : sprintf("%s %d%%", bestm, int(100 * bestc / MT[k] + 0.5))
}
# The best peer of test at size for figure f (p50: lowest; bw: highest): sets best, best_name.
function best_peer(test, s, f,   p, v) {
    best = ""; best_name = "-"
    for (p = 1; p <= np; p++) {
        v = median(P[p] "," test "," s "," M[p] "," f)
        if (v == "") continue
        if (best == "" || (f == "p50" ? v + 0 < best + 0 : v + 0 > best + 0)) { best = v; best_name = N[p] }
    }
}
FILENAME == mfile {
    for (i = 3; i <= NF; i++) { split($i, q, " "); MC[$1 "," $2, q[1]] += q[2]; MT[$1 "," $2] += q[2] }
    next
}
FNR > 1 {
    k = $1 "," $2 "," $3 "," $4
    add(k ",p50", $5); add(k ",avg", $6); add(k ",bw", $7); add(k ",rate", $8)
}
END {
    np = split("ucx ucx mpi mpi", P, " "); split("sm posix cma nocma", M, " ")
    split("ucx-sm ucx-posix mpi mpi-nocma", N, " ")
    ns = split(sizes, S, " ")

    n = split(vals["phys,pingpong,64,-,p50"], F, " "); floors = ""
    for (i = 1; i <= n; i++) floors = floors sprintf("%s%.0f", i > 1 ? ", " : "", F[i] * 1000)
    printf "\ncache-line ping-pong between the two cores, one way (bench/physical_limits.c, each round): %s ns\n", n ? floors : "-"
    printf "\ntag_lat: ping-pong, one-way latency (us), p50; ratio = ferry / best peer (< 1: ferry faster)\n"
    printf "%6s %9s %9s %9s %9s %9s %10s %6s  %s\n", "size", "ferry", "ucx-sm", "ucx-posix", "mpi", "mpi-nocma", "best", "ratio", "ferry mode"
    for (i = 1; i <= ns; i++) {
        s = S[i]; f = median("ferry,tag_lat," s ",auto,p50"); best_peer("tag_lat", s, "p50")
        line = sprintf("%6s %9s", human(s), fmt(f, "%.3f"))
        for (p = 1; p <= np; p++) line = line sprintf(" %9s", fmt(median(P[p] ",tag_lat," s "," M[p] ",p50"), "%.3f"))
        printf "%s %10s %6s  %s\n", line, best_name, ratio(f, best), mode_of("tag_lat", s)
        if (s == 8) { lat8 = f; lat8_best = best; lat8_name = best_name }
    }
    printf "(averages, which include preemptions, are in the raw CSV: lat_avg_us)\n"

    printf "\ntag_bw: streaming, GB/s (10^9 B/s); ratio = ferry / best peer (> 1: ferry faster)\n"
    printf "(drop: ferry'"'"'s bandwidth more than 10 %% below the size before: DROP, or edge when the physical\n"
    printf " two-process copy of ferry'"'"'s mode at that size fell at least as much there, less 10 %%: the cache\n"
    printf " edge, not the protocol; that copy is cma2 (GB/s: SPLIT'"'"'s two kernel copies, process_vm_readv of\n"
    printf " one half and process_vm_writev of the other) where ferry used split, copy2 (memcpy of the halves\n"
    printf " in a shared mapping) elsewhere; ferry mode: how its automatic runs moved the messages, warm-up\n"
    printf " and calibration included)\n"
    printf "%6s %9s %9s %9s %9s %9s %10s %6s %12s %7s %7s %5s  %s\n", "size", "ferry", "ucx-sm", "ucx-posix", "mpi", "mpi-nocma", "best", "ratio", "ferry_Mmsg/s", "copy2", "cma2", "drop", "ferry mode"
    prev = ""
    for (i = 1; i <= ns; i++) {
        s = S[i]; f = median("ferry,tag_bw," s ",auto,bw"); best_peer("tag_bw", s, "bw")
        c = median("phys,copy2," s ",-,bw"); k = median("phys,cma2," s ",-,bw"); mode = mode_of("tag_bw", s)
        # the physical copy of the mode ferry used here, at this size and the one before
        ref = mode ~ /^split/ ? "cma2" : "copy2"
        r = median("phys," ref "," s ",-,bw"); rprev = i > 1 ? median("phys," ref "," S[i - 1] ",-,bw") : ""
        line = sprintf("%6s %9s", human(s), fmt(f, "%.3f"))
        for (p = 1; p <= np; p++) line = line sprintf(" %9s", fmt(median(P[p] ",tag_bw," s "," M[p] ",bw"), "%.3f"))
        drop = (s > 8 && prev != "" && f != "" && f + 0 < 0.9 * prev) ? "DROP" : ""
        # a fall of the machine: that copy fell here too, and ferry fell no more than 10 % beyond it
        if (drop != "" && r != "" && rprev != "" && r + 0 < rprev + 0 && f / prev >= 0.9 * r / rprev) {
            drop = "edge"
            edges = edges sprintf(" %s (%s after %s GB/s; %s %s after %s)", human(s), fmt(f, "%.3f"), fmt(prev, "%.3f"), ref, fmt(r, "%.1f"), fmt(rprev, "%.1f"))
        }
        if (drop == "DROP") drops = drops sprintf(" %s (%s after %s GB/s)", human(s), fmt(f, "%.3f"), fmt(prev, "%.3f"))
        if (s > 8) prev = f
        printf "%s %10s %6s %12s %7s %7s %5s  %s\n", line, best_name, ratio(f, best), fmt(median("ferry,tag_bw," s ",auto,rate"), "%.4f"), fmt(c, "%.1f"), fmt(k, "%.1f"), drop, mode
        bw_f[s] = f; bw_best[s] = best; bw_name[s] = best_name
        if (s >= 65536) {
            big++
            if (f == "" || best == "" || f + 0 < best + 0) miss = miss sprintf(" %s (%s, best %s)", human(s), ratio(f, best), best_name)
        }
    }

    nm = split(modes, MO, " "); nz = split(msizes, Z, " ")
    printf "\neach mode'"'"'s bandwidth: ferry tag_bw with FERRY_RNDV_MODE (FERRY_RNDV_THRESH=4096), GB/s\n"
    printf "(auto: the main runs above; ratio columns = mode / best peer)\n"
    line = sprintf("%6s", "size")
    for (m = 1; m <= nm; m++) line = line sprintf(" %8s", MO[m])
    printf "%s %8s %10s %9s", line, "auto", "best peer", "(GB/s)"
    for (m = 1; m <= nm; m++) printf " %7s", MO[m] "/best"
    printf "\n"
    for (i = 1; i <= nz; i++) {
        s = Z[i]; best_peer("tag_bw", s, "bw")
        line = sprintf("%6s", human(s))
        for (m = 1; m <= nm; m++) line = line sprintf(" %8s", fmt(median("ferry,tag_bw," s "," MO[m] ",bw"), "%.3f"))
        line = line sprintf(" %8s %10s %9s", fmt(median("ferry,tag_bw," s ",auto,bw"), "%.3f"), best_name, fmt(best, "%.3f"))
        for (m = 1; m <= nm; m++) line = line sprintf(" %7s", ratio(median("ferry,tag_bw," s "," MO[m] ",bw"), best))
        printf "%s\n", line
    }

    printf "\ntargets (issue 4), on these medians:\n"
    printf "  must: 8 B latency <= best peer (ferry %s us, %s %s us): %s\n", fmt(lat8, "%.3f"), lat8_name, fmt(lat8_best, "%.3f"), (lat8 != "" && lat8_best != "" && lat8 + 0 <= lat8_best + 0) ? "met" : "NOT met"
    printf "  must: bandwidth >= best peer at every size >= 64 KiB (%d sizes): %s\n", big, miss == "" ? "met" : "NOT met at" miss
    printf "  issue 14: no size from 4 KiB on whose bandwidth falls > 10 %% below the size before: %s\n", drops == "" ? "met" : "NOT met at" drops
    if (edges != "") printf "            falls the physical copy of ferry'"'"'s mode shows as well (the cache edge):%s\n", edges
    s = 16777216
    printf "  aim:  bandwidth >= 1.3 x best peer at 16 MiB (ferry %s GB/s, %s %s GB/s, x%s): %s\n", fmt(bw_f[s], "%.3f"), bw_name[s], fmt(bw_best[s], "%.3f"), ratio(bw_f[s], bw_best[s]), (bw_f[s] != "" && bw_best[s] != "" && bw_f[s] + 0 >= 1.3 * bw_best[s]) ? "met" : "not met"
}') "$modes_csv" "$raw"
echo
echo "raw results (one line per run): $raw"
bench_keep_results
