#!/usr/bin/env bash
# compare_mpi.sh: Open MPI over the ferry libfabric provider beside Open MPI's own transports.
#
# In one session, alternating run by run (A B C D, A B C D, ...), REPEAT times, tag_lat
# (ping-pong, one-way latency) and tag_bw (windowed streaming) of bench/mpi_pingpong.c at 8 B,
# 4 KiB, 64 KiB, 1 MiB, 16 MiB (two mpiruns per configuration and test: 8 B and 4 KiB with
# 10000 iterations, then the larger sizes with mpi_pingpong's iterations by size) under
# mpirun -np 2 --bind-to core:
#   ferry-ofi  --mca pml cm --mca mtl ofi, provider ferry (build/ofi/libferry-fi.so)
#   ob1-cma    --mca pml ob1 --mca btl self,vader (vader's default single copy: CMA)
#   ob1-nocma  the same with --mca btl_vader_single_copy_mechanism none (copy in, copy out)
#   ucx        --mca pml ucx
# then, at 8 B, ferry's own tag_lat (ferry_perf, p50) beside libfabric's fi_pingpong -p ferry (what
# the provider adds over raw ferry). Prints tables of medians over the REPEAT runs and writes
# them to BENCH_RESULTS/compare_mpi.txt (default /tmp/ferry-bench; the path is printed), with
# the load (uptime) when it started and ended. About 2 minutes on an idle 2-core machine.
#
# Usage: bench/compare_mpi.sh [REPEAT]      (default 3: the fewest runs with a median)
# Environment: BUILD (default build), MPICC (default mpicc), BENCH_RESULTS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
repeat=${1:-3}
build=$(cd "${BUILD:-$root/build}" && pwd)
mpicc=${MPICC:-mpicc}
sizes="8 4096 65536 1048576 16777216"
run_timeout=60
out_dir=${BENCH_RESULTS:-/tmp/ferry-bench}
configs="ferry-ofi ob1-cma ob1-nocma ucx"

for tool in "$mpicc" mpirun.openmpi fi_pingpong awk timeout; do
    command -v "$tool" >/dev/null || {
        echo "compare_mpi.sh: $tool is missing (apt-get install openmpi-bin libopenmpi-dev libfabric-bin)" >&2
        exit 1
    }
done
[ -f "$build/ofi/libferry-fi.so" ] || {
    echo "compare_mpi.sh: $build/ofi/libferry-fi.so is not built" >&2
    exit 1
}

mkdir -p "$out_dir"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench_compare_mpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
raw=$work/raw.csv # config,test,size,lat_p50_us,bw_GBps
prog=$work/mpi_pingpong
"$mpicc" -std=c11 -O2 -o "$prog" "$here/mpi_pingpong.c"

run_mpi() { # CONFIG TEST SIZES (comma-separated) [mpi_pingpong options]
    local config=$1 test=$2 size=$3
    shift 3
    local args=(--allow-run-as-root --oversubscribe -np 2 --bind-to core)
    case $config in
    ferry-ofi)
        args+=(-x FI_PROVIDER_PATH="$build/ofi" -x FERRY_LOG_LEVEL=warn
            --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ferry
            --mca mtl_ofi_tag_mode ofi_tag_full)
        ;;
    ob1-cma) args+=(--mca pml ob1 --mca btl self,vader) ;;
    ob1-nocma) args+=(--mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism none) ;;
    ucx) args+=(--mca pml ucx) ;;
    esac
    local out
    if ! out=$(timeout $run_timeout mpirun.openmpi "${args[@]}" "$prog" -t "$test" -s "$size" "$@" \
        2>"$work/err"); then
        echo "compare_mpi.sh: $config $test $size failed:" >&2
        cat "$work/err" >&2
        return 0
    fi
    echo "$out" | awk -F, -v c="$config" -v t="$test" '$1 == t { printf "%s,%s,%s,%s,%s\n", c, t, $2, $4, $6 }' >>"$raw"
}

load=$(uptime)
began=$SECONDS
echo "compare_mpi.sh: $repeat rounds of $configs; $load" >&2
for ((r = 1; r <= repeat; r++)); do
    for test in tag_lat tag_bw; do
        for config in $configs; do
            run_mpi "$config" "$test" 8,4096 -n 10000 -w 1000
            run_mpi "$config" "$test" 65536,1048576,16777216
        done
    done
    echo "compare_mpi.sh: round $r of $repeat done" >&2
done

# ferry_perf tag_lat vs fi_pingpong -p ferry at 8 B, alternating
lat=$work/lat.csv # tool,usec
for ((r = 1; r <= repeat; r++)); do
    port=$((26000 + r))
    "$build/tools/ferry_perf" -p $port >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    timeout 60 "$build/tools/ferry_perf" 127.0.0.1 -p $port -t tag_lat -s 8 2>/dev/null |
        awk '$1 == "tag_lat" { print "ferry_perf," $4 }' >>"$lat" || true
    wait $server || true
    FI_PROVIDER_PATH=$build/ofi FERRY_LOG_LEVEL=warn timeout 60 fi_pingpong -p ferry -e rdm -S 8 \
        -I 20000 -B $((port + 100)) >/dev/null 2>&1 &
    server=$!
    sleep 0.5
    FI_PROVIDER_PATH=$build/ofi FERRY_LOG_LEVEL=warn timeout 60 fi_pingpong -p ferry -e rdm -S 8 \
        -I 20000 -P $((port + 100)) 127.0.0.1 2>/dev/null |
        awk '$1 == "8" { print "fi_pingpong," $(NF - 1) }' >>"$lat" || true
    wait $server || true
done

tables=$out_dir/compare_mpi.txt
{
echo "Open MPI 4.1.4, mpi_pingpong, medians of $repeat (tag_lat: one-way p50 us; tag_bw: GB/s)"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'); load at start: $load; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -F, -v configs="$configs" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n == 0 ? "-" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
{ key = $2 "," $3 "," $1; v[key] = v[key] " " ($2 == "tag_lat" ? $4 : $5); seen[$2 "," $3] = 1 }
END {
    nc = split(configs, c, " ")
    printf "%-8s %10s", "test", "size"; for (i = 1; i <= nc; i++) printf " %10s", c[i]; printf "\n"
    split("8 4096 65536 1048576 16777216", sz, " ")
    split("tag_lat tag_bw", tests, " ")
    for (t = 1; t <= 2; t++) for (s = 1; s <= 5; s++) {
        printf "%-8s %10s", tests[t], sz[s]
        for (i = 1; i <= nc; i++) printf " %10s", median(v[tests[t] "," sz[s] "," c[i]])
        printf "\n"
    }
}' "$raw"
echo
echo "8 B one-way latency (us), medians of $repeat: ferry_perf tag_lat (raw ferry) vs fi_pingpong -p ferry -e rdm"
awk -F, '{ v[$1] = v[$1] " " $2 }
END { for (k in v) { n = split(v[k], a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
        printf "%-12s %s (runs:%s)\n", k, (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2), v[k] } }' "$lat"
echo "(fi_pingpong prints usec/xfer of a ping-pong: a round trip / 2)"
} | tee "$tables"
echo "compare_mpi.sh: tables in $tables ($((SECONDS - began)) s)" >&2
