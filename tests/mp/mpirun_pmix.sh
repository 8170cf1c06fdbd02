#!/usr/bin/env bash
# mpirun_pmix: a 4-rank job under Open MPI's mpirun that finds its ranks through PMIx
# (libferry_bootstrap's pmix method): every rank runs mp_bootstrap_job (worker addresses
# allgathered with PMIx_Put/Commit/Fence/Get, all-to-all active messages with every byte
# checked, barrier), then the example ferry_hello_bootstrap the same way, then ferry_perf as a
# 2-rank job (rank 0 serves, rank 1 measures am_lat; the result line is checked).
#   mpirun_pmix.sh <mp_bootstrap_job> <ferry_hello_bootstrap> <ferry_perf or -> <ON|OFF: pmix>
# Exit 77 (skipped) when mpirun.openmpi or the pmix method is missing.
set -uo pipefail

job=$1 hello=$2 perf=$3 have_pmix=$4
if [ "$have_pmix" != "ON" ]; then
    echo "mpirun_pmix: skipped: libferry_bootstrap was built without PMIx (apt-get install libpmix-dev, FERRY_WITH_PMIX)"
    exit 77
fi
if ! command -v mpirun.openmpi >/dev/null; then
    echo "mpirun_pmix: skipped: no mpirun.openmpi (apt-get install openmpi-bin)"
    exit 77
fi

# --allow-run-as-root: CI runs as root; --oversubscribe: 4 ranks on a 2-core machine.
# The MCA settings keep Open MPI to this host's loopback and shared memory (no probing of
# other networks). Ranks inherit FERRY_* from here.
run() {
    local np=$1
    shift
    timeout 70 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" \
        --mca btl self,vader --mca oob_tcp_if_include lo "$@"
}

out=$(run 4 "$job" pmix 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then
    echo "mpirun_pmix: mpirun of mp_bootstrap_job failed (exit $rc)"
    exit 1
fi
n=$(grep -c "all-to-all passed" <<<"$out")
if [ "$n" -ne 4 ]; then
    echo "mpirun_pmix: $n of 4 ranks passed"
    exit 1
fi

out=$(run 4 "$hello" 2>&1)
rc=$?
echo "$out"
n=$(grep -c "every byte right" <<<"$out")
if [ $rc -ne 0 ] || [ "$n" -ne 4 ]; then
    echo "mpirun_pmix: ferry_hello_bootstrap under mpirun: exit $rc, $n of 4 ranks greeted"
    exit 1
fi

if [ "$perf" != "-" ]; then
    out=$(run 2 "$perf" -t am_lat -s 8,4096 -n 2000 -f csv 2>&1)
    rc=$?
    echo "$out"
    n=$(grep -cE "^am_lat,(8|4096),2000," <<<"$out")
    if [ $rc -ne 0 ] || [ "$n" -ne 2 ]; then
        echo "mpirun_pmix: ferry_perf -t am_lat under mpirun -np 2: exit $rc, $n of 2 result lines"
        exit 1
    fi
fi
echo "mpirun_pmix: passed"
