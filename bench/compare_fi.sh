#!/usr/bin/env bash
# compare_fi.sh: libfabric's fi_pingpong over the ferry provider beside libfabric's own shm and
# tcp providers (issue 13).
#
# In one session, alternating run by run (A B C D, A B C D, ...), REPEAT times, at 8 B, 4 KiB,
# 64 KiB, 1 MiB, 16 MiB, fi_pingpong -e rdm -m tagged (a ping-pong; server on core 0, client on
# core 1, control socket on 127.0.0.1). fi_pingpong has no warm-up and times every round trip
# of its run, so each size's run is long enough for the figure to be the steady one (8 B and
# 4 KiB: 20000 round trips, 64 KiB 10000, 1 MiB 2000, 16 MiB 100); the rows 64K-first and
# 1M-first are short runs of a fresh pair of processes (500 and 50 round trips), which hold the
# start: ferry measures its choices on its first messages of each size class (eager or
# rendezvous, plain or non-temporal stores: docs/ARCHITECTURE.md), libfabric's providers do not:
#   ferry-shm  -p ferry (build/ofi/libferry-fi.so through FI_PROVIDER_PATH): ferry's shm
#   ferry-tcp  -p ferry with FERRY_TRANSPORTS=tcp (loopback)
#   fi-shm     -p shm (libfabric's shared-memory provider)
#   fi-tcp     -p tcp (libfabric's tcp provider, ofi_rxm over it for RDM)
# Prints tables of medians over the REPEAT runs: one-way latency (fi_pingpong's usec/xfer) and
# its MB/sec (10^6 B/s over both directions of the ping-pong: not a streaming figure), with the
# ratios ferry-shm / fi-shm and ferry-tcp / fi-tcp.
#
# Usage: bench/compare_fi.sh [REPEAT]     (default 3: the fewest runs with a median)
# Environment: BUILD (default build), BENCH_RESULTS (a folder: the tables go to
# BENCH_RESULTS/compare_fi.txt and the raw CSV to compare_fi.csv; default /tmp/ferry-bench).
# The path is printed at the end. About 3 minutes on an idle 2-core machine at REPEAT 3.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"
repeat=${1:-3}
run_timeout=60
sizes="8 4096 65536 64K-first 1048576 1M-first 16777216" # rows
configs="ferry-shm ferry-tcp fi-shm fi-tcp"
command -v fi_pingpong >/dev/null || apt_install libfabric-bin
provider_setup "runs per configuration, default 3" fi_pingpong taskset ss awk timeout
# raw: config,row,usec_per_xfer,MBps

iters_of() { # ROW: round trips of its run
    case $1 in
    8 | 4096) echo 20000 ;;
    65536) echo 10000 ;;
    64K-first) echo 500 ;;
    1048576) echo 2000 ;;
    1M-first) echo 50 ;;
    *) echo 100 ;;
    esac
}

bytes_of() { # ROW: its message size
    case $1 in
    64K-first) echo 65536 ;;
    1M-first) echo 1048576 ;;
    *) echo "$1" ;;
    esac
}

# run_fi CONFIG ROW: one fi_pingpong pair (fi_pingpong_run) of the row's size and round trips;
# its usec/xfer and MB/sec become a line of raw.
run_fi() {
    local config=$1 row=$2 prov env=()
    case $config in
    ferry-shm) prov=ferry env=(FI_PROVIDER_PATH="$build/ofi" FERRY_LOG_LEVEL=warn) ;;
    ferry-tcp) prov=ferry env=(FI_PROVIDER_PATH="$build/ofi" FERRY_LOG_LEVEL=warn FERRY_TRANSPORTS=tcp) ;;
    fi-shm) prov=shm ;;
    fi-tcp) prov=tcp ;;
    esac
    bench_progress "$config" "$row"
    fi_pingpong_run "$prov" "$(bytes_of "$row")" "$(iters_of "$row")" "${env[@]}" || return 0
    echo "$fi_line" | awk -v c="$config" -v s="$row" '{ printf "%s,%s,%s,%s\n", c, s, $7, $6 }' >>"$raw"
}

nsizes=$(wc -w <<<"$sizes")
nconfigs=$(wc -w <<<"$configs")
total_runs=$((nsizes * nconfigs * repeat))
count=0
busy_before=$(cpu_busy_percent)
load=$(uptime)
start_time=$SECONDS
echo "compare_fi.sh: $repeat rounds of $configs; $load; CPUs ${busy_before} % busy" >&2
for ((r = 1; r <= repeat; r++)); do
    for row in $sizes; do
        for config in $configs; do
            run_fi "$config" "$row"
        done
    done
done

tables=$out_dir/compare_fi.txt
{
    echo "fi_pingpong -e rdm -m tagged, medians of $repeat alternating runs ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo "load at start: $load; CPUs ${busy_before} % busy; at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "libfabric $(bench_version libfabric); ferry provider $build/ofi/libferry-fi.so ($(git -C "$root" describe --always --dirty 2>/dev/null || true))"
    awk -F, -v configs="$configs" -v sizes="$sizes" -f "$here/lib.awk" -f <(printf '%s\n' '
    { add("lat," $2 "," $1, $3); add("bw," $2 "," $1, $4) }
    END {
        nc = split(configs, c, " "); ns = split(sizes, s, " ")
        for (k = 1; k <= 2; k++) {
            printf "\n%s\n", k == 1 ? "one-way latency, usec/xfer (lower is better)" : "ping-pong MB/sec (higher is better)"
            printf "%9s", "size"; for (i = 1; i <= nc; i++) printf " %10s", c[i]
            printf " %14s %14s\n", "ferry/fi shm", "ferry/fi tcp"
            for (j = 1; j <= ns; j++) {
                printf "%9s", s[j]
                for (i = 1; i <= nc; i++) {
                    m[i] = median((k == 1 ? "lat," : "bw,") s[j] "," c[i])
                    printf " %10s", m[i] == "" ? "-" : m[i]
                }
                printf " %14s %14s\n", ratio(m[1], m[3]), ratio(m[2], m[4])
            }
        }
    }') "$raw"
} >"$tables"
cp "$raw" "$out_dir/compare_fi.csv"
cat "$tables"
echo "compare_fi.sh: tables in $tables, raw runs in $out_dir/compare_fi.csv ($(bench_duration $((SECONDS - start_time))))" >&2
