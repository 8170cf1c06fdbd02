#!/usr/bin/env bash
# mpirun_pmix: a 4-rank job under Open MPI's mpirun that finds its ranks through PMIx
# (libferry_bootstrap's pmix method): every rank runs mp_bootstrap_job (worker addresses
# allgathered with PMIx_Put/Commit/Fence/Get, all-to-all active messages with every byte
# checked, barrier), then the example ferry_hello_bootstrap the same way.
#   mpirun_pmix.sh <mp_bootstrap_job> <ferry_hello_bootstrap> <ON|OFF: pmix built>
# Exit 77 (skipped) when mpirun.openmpi or the pmix method is missing.
set -uo pipefail

job=$1 hello=$2 have_pmix=$3
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
    timeout 100 mpirun.openmpi --allow-run-as-root --oversubscribe -np 4 \
        --mca btl self,vader --mca oob_tcp_if_include lo "$@"
}

out=$(run "$job" pmix 2>&1)
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

out=$(run "$hello" 2>&1)
rc=$?
echo "$out"
n=$(grep -c "every byte right" <<<"$out")
if [ $rc -ne 0 ] || [ "$n" -ne 4 ]; then
    echo "mpirun_pmix: ferry_hello_bootstrap under mpirun: exit $rc, $n of 4 ranks greeted"
    exit 1
fi
echo "mpirun_pmix: passed"
