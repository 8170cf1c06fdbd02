#!/usr/bin/env bash
# compare_mpi.sh: Open MPI over the ferry libfabric provider beside Open MPI's own transports.
#
# In one session, REPEAT rounds; in each round, alternating run by run (A B C D, A B C D):
#   1. tag_lat (ping-pong) and tag_bw (windowed streaming) of bench/mpi_pingpong.c at 8 B,
#      4 KiB, 64 KiB, 1 MiB, 16 MiB (four mpiruns per configuration and test: 8 B and 4 KiB
#      with 10000 iterations, five runs of each in the mpirun, 64 KiB with 10000, 1 MiB with
#      1000, 16 MiB with 50; warm-up a tenth, as in compare_tag.sh: it holds the automatic
#      choice's calibration), and the start of a run at 64 KiB on its own, row "64K-first":
#      its first 1000 iterations after 100 (most of the calibration measured; the row 64 KiB
#      was until session 12)
#      under mpirun -np 2 --bind-to core:
#        ferry-ofi  --mca pml cm --mca mtl ofi, provider ferry (build/ofi/libferry-fi.so)
#        ob1-cma    --mca pml ob1 --mca btl self,vader (vader's default single copy: CMA)
#        ob1-nocma  the same with --mca btl_vader_single_copy_mechanism none (copy in, copy out)
#        ucx        --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any (UCX's shm)
#      Every configuration runs the same program and reports the same figures: tag_lat the
#      p50 of the run's round trips / 2, tag_bw bytes / time.
#   2. what looking for a message that is not there costs (mpi_pingpong -t poll: the mean time
#      of one MPI_Test of a receive nothing matches, 2000000 of them): a message that arrives
#      while a rank polls waits half of that on average before the rank sees it.
#   3. at 8 B, what the provider adds over raw ferry: ferry_perf tag_lat (raw ferry) beside
#      fi_pingpong -p ferry -e rdm -m tagged (the provider), both pinned server on core 0,
#      client on core 1, 20000 measured round trips after 2000 (ferry_perf) or fi_pingpong's
#      own warm-up ones. fi_pingpong reports only the mean (usec/xfer: the run's time / round
#      trips / 2), so ferry_perf's figure is its mean too (lat_avg_us), not its p50.
# Prints tables of the medians over the REPEAT rounds' runs (8 B and 4 KiB: 5 x REPEAT), with the load average at the start and
# the end (the machine may be shared: only same-run ratios mean anything), and writes them to
# BENCH_RESULTS/compare_mpi.txt, every run to compare_mpi.csv (default /tmp/ferry-bench; the
# path is printed). About 3 minutes on an idle 2-core machine at REPEAT 3.
#
# Usage: bench/compare_mpi.sh [REPEAT]      (default 3: the fewest runs with a median)
# Environment: BUILD (default build), MPICC (default mpicc), BENCH_RESULTS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
repeat=${1:-3}
mpicc=${MPICC:-mpicc}
run_timeout=60
configs="ferry-ofi ob1-cma ob1-nocma ucx"
raw_iters=20000
# (Debian: openmpi-bin libopenmpi-dev libfabric-bin)
provider_setup "rounds, default 3" "$mpicc" mpirun.openmpi fi_pingpong taskset ss awk timeout
# raw: config,test,size,value (tag_lat: one-way us; tag_bw: GB/s)
prog=$work/mpi_pingpong
mpi_pingpong_build "$prog"

run_mpi() { # CONFIG TEST SIZES (comma-separated) [mpi_pingpong options]; MPI_ROW: the row's name
    local config=$1 test=$2 size=$3 row=${MPI_ROW:-}
    shift 3
    local args=(--allow-run-as-root --oversubscribe -np 2 --bind-to core)
    # shellcheck disable=SC2054 # self,vader is one word: the list of BTLs
    case $config in
    ferry-ofi)
        args+=(-x FI_PROVIDER_PATH="$build/ofi" -x FERRY_LOG_LEVEL=warn
            --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ferry
            --mca mtl_ofi_tag_mode ofi_tag_full)
        ;;
    ob1-cma) args+=(--mca pml ob1 --mca btl self,vader) ;;
    ob1-nocma) args+=(--mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism none) ;;
    # Open MPI 4.1's pml ucx gives way unless UCX finds one of pml_ucx_devices (default mlx*,
    # InfiniBand): "PML ucx cannot be selected" without these two on this machine
    ucx) args+=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any) ;;
    esac
    bench_progress "$config" "$test" "$size B"
    local out
    if ! out=$(timeout $run_timeout mpirun.openmpi "${args[@]}" "$prog" -t "$test" -s "$size" "$@" \
        2>"$work/err"); then
        echo "compare_mpi.sh: $config $test $size failed:" >&2
        cat "$work/err" >&2
        return 0
    fi
    # mpi_pingpong's CSV: test,size,iterations,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps
    echo "$out" | awk -F, -v c="$config" -v t="$test" -v row="$row" '$1 == t {
        printf "%s,%s,%s,%s\n", c, t, row != "" ? row : $2, t == "tag_bw" ? $6 : $4 }' >>"$raw"
}

# run_raw TOOL: one run of 8-byte ping-pongs, pinned (server core 0, client core 1); its
# one-way mean latency becomes a line "TOOL,raw_lat,8,us" of raw.
run_raw() {
    local tool=$1 out env=(FI_PROVIDER_PATH="$build/ofi" FERRY_LOG_LEVEL=warn)
    bench_progress "$tool" "tag_lat 8 B"
    case $tool in
    ferry_perf)
        next_port
        start_server "$work/server.log" "$ferry_perf" -c 0 -p "$port"
        out=$(timeout $run_timeout "$ferry_perf" 127.0.0.1 -c 1 -p "$port" -t tag_lat -s 8 \
            -n $raw_iters -w $((raw_iters / 10)) -f csv 2>&1) || out="failed: $out"
        # test,size,iterations,lat_p50_us,lat_avg_us,...: the mean, as fi_pingpong's
        out=$(echo "$out" | awk -F, '$1 == "tag_lat" { print $5 }')
        finish_server || true
        ;;
    fi_pingpong)
        # usec/xfer, the mean
        out=
        fi_pingpong_run ferry 8 $raw_iters "${env[@]}" && out=$(echo "$fi_line" | awk '{ print $7 }')
        ;;
    esac
    if [[ -z $out ]]; then
        echo "compare_mpi.sh: $tool 8 B gave no result; its server said:" >&2
        cat "$work/server.log" >&2
        return 0
    fi
    echo "$tool,raw_lat,8,$out" >>"$raw"
}

nconfigs=$(wc -w <<<"$configs")
total_runs=$(((nconfigs * 9 + 2) * repeat))
count=0
busy_before=$(cpu_busy_percent)
load=$(cut -d' ' -f1-3 /proc/loadavg)
start_time=$SECONDS
echo "compare_mpi.sh: $repeat rounds of $configs, then ferry_perf and fi_pingpong; load average $load; CPUs ${busy_before} % busy" >&2
for ((r = 1; r <= repeat; r++)); do
    for test in tag_lat tag_bw; do
        for config in $configs; do
            # 10000 messages of 8 B stream in 1 to 3 ms: one descheduling of either rank
            # (a few ms on a loaded machine) divides a run's figure by 10 to 100, and the
            # first run of an mpirun over the provider grows ferry's pools (ofi/README.md),
            # so each mpirun measures 8 B and 4 KiB five times; the table takes the median
            run_mpi "$config" "$test" 8,8,8,8,8,4096,4096,4096,4096,4096 -n 10000 -w 1000
            run_mpi "$config" "$test" 65536 -n 10000 -w 1000
            MPI_ROW=64K-first run_mpi "$config" "$test" 65536 -n 1000 -w 100
            run_mpi "$config" "$test" 1048576 -n 1000 -w 100
            run_mpi "$config" "$test" 16777216 -n 50 -w 5
        done
    done
    for config in $configs; do
        run_mpi "$config" poll 0
    done
    run_raw ferry_perf
    run_raw fi_pingpong
done

tables=$out_dir/compare_mpi.txt
{
    echo "Open MPI $(bench_version openmpi) over the ferry provider beside its own transports: bench/compare_mpi.sh $repeat"
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(bench_cpu)), ferry $(git -C "$root" describe --always --dirty 2>/dev/null || true), libfabric $(bench_version libfabric)"
    echo "load average at the start: $load (CPUs ${busy_before} % busy), at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "(the machine is shared with other developers' builds and tests: compare within a table, not across sessions)"
    awk -F, -v configs="$configs" -v repeat="$repeat" -v iters="$raw_iters" -f "$here/lib.awk" \
        -f <(printf '%s\n' '
    { add($2 "," $3 "," $1, $4) }
    END {
        nc = split(configs, c, " ")
        split("8 4096 65536 64K-first 1048576 16777216", sz, " ")
        split("tag_lat tag_bw", tests, " ")
        for (t = 1; t <= 2; t++) {
            if (t == 1)
                printf "\nmpi_pingpong tag_lat: one-way latency, us: each run its p50 of round trips / 2; the median of the runs of %d rounds (8 B, 4 KiB: 5 a round) (lower is better)\n", repeat
            else
                printf "\nmpi_pingpong tag_bw: GB/s (10^9 B/s), each run bytes / time; the median of the runs of %d rounds (8 B, 4 KiB: 5 a round) (higher is better)\n", repeat
            printf "%9s", "size"; for (i = 1; i <= nc; i++) printf " %10s", c[i]
            printf " %15s\n", "ferry-ofi/best"
            for (s = 1; s <= 6; s++) {
                printf "%9s", sz[s]
                best = ""
                for (i = 1; i <= nc; i++) {
                    m[i] = median(tests[t] "," sz[s] "," c[i])
                    printf " %10s", m[i] == "" ? "-" : m[i]
                    if (i > 1 && m[i] != "" && (best == "" || (t == 1 ? m[i] + 0 < best + 0 : m[i] + 0 > best + 0)))
                        best = m[i]
                }
                printf " %15s\n", (m[1] == "" || best == "" || best + 0 == 0) ? "-" : sprintf("%.2f", m[1] / best)
            }
        }
        printf "\nempty MPI_Test, ns: mpi_pingpong -t poll, a receive nothing matches, 2000000 tests; the median of %d runs (lower is better)\n", repeat
        printf "%9s", ""; for (i = 1; i <= nc; i++) printf " %10s", c[i]
        printf " %15s\n", "ferry-ofi/best"
        printf "%9s", "MPI_Test"
        best = ""
        for (i = 1; i <= nc; i++) {
            m[i] = median("poll,0," c[i])
            printf " %10s", m[i] == "" ? "-" : sprintf("%.1f", m[i] * 1000)
            if (i > 1 && m[i] != "" && (best == "" || m[i] + 0 < best + 0))
                best = m[i]
        }
        printf " %15s\n", (m[1] == "" || best == "" || best + 0 == 0) ? "-" : sprintf("%.2f", m[1] / best)
        printf "\n8 B one-way latency, us: each run its mean over %d round trips / 2 (fi_pingpong gives only the mean); the median of %d runs\n", iters, repeat
        split("ferry_perf fi_pingpong", tool, " ")
        split("raw ferry (ferry_perf tag_lat)|the provider (fi_pingpong -p ferry -e rdm -m tagged)", what, "|")
        for (i = 1; i <= 2; i++) {
            m[i] = median("raw_lat,8," tool[i])
            printf "%-55s %8s   runs: %s\n", what[i], m[i] == "" ? "-" : m[i], vals["raw_lat,8," tool[i]]
        }
        if (m[1] != "" && m[2] != "" && m[1] + 0 > 0)
            printf "%-55s %8.2f\n", "provider / raw ferry", m[2] / m[1]
    }') "$raw"
} >"$tables"
cp "$raw" "$out_dir/compare_mpi.csv"
cat "$tables"
echo "compare_mpi.sh: tables in $tables, every run in $out_dir/compare_mpi.csv ($(bench_duration $((SECONDS - start_time))))" >&2
