#!/usr/bin/env bash
# Open MPI 4.1.4 over the ferry provider: ofi/tests/mpi_semantics.c under mpirun with the OFI
# MTL (pml cm, mtl ofi), which Debian's openmpi-mca-params.conf disables (mtl = ^ofi) unless
# named, restricted to the provider "ferry" and by default to the full tag mode (source rank in
# remote CQ data, directed receives), so that a missing feature fails instead of falling back.
# TAG_MODE auto is Open MPI's default (it picks ofi_tag_full here); in ofi_tag_1 Open MPI 4.1.4's
# MPI_Ssend hangs (ofi/README.md, "Open MPI 4.1.4").
#
#   ofi/mpi.sh [BUILD_DIR] [NP] [shm|tcp|hosts] [TAG_MODE] [TEST...]
#                                          (default: build 2 shm ofi_tag_full, all tests)
#
#   shm    every rank on this host, ferry's shm between them
#   tcp    every rank on this host, FERRY_TRANSPORTS=tcp (loopback)
#   hosts  two "hosts" of network namespaces (tests/netns/lib.sh: hosts h1 and h2 on a private
#          switch, 10.77.0.1 and 10.77.0.2, their own hostname, IPC and /dev/shm, created here
#          and removed on exit): mpirun runs on h1 and starts h2's daemon through
#          tests/netns/rsh_agent.sh (nsenter instead of ssh); NP/2 ranks on h2, the rest on h1:
#          shm between the ranks of a host, tcp across. Needs root, ip, nft, unshare, nsenter:
#          exits 77 with the reason without them.
#
# The MTL needs names of at most 64 bytes, the same size in every process: the provider's are
# ferry's compact worker addresses (64 bytes), which reach other hosts too.
#
# Checks that the MTL selected the provider "ferry" (mtl_ofi_verbose) in every rank (with
# hosts: on both hosts) and that the program passed. Exits 77 with the reason without
# mpicc/mpirun (apt-get install openmpi-bin libopenmpi-dev).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd) || exit 1
NP=${2:-2}
TRANSPORT=${3:-shm}
TAG_MODE=${4:-ofi_tag_full}
shift $(($# < 4 ? $# : 4))
MPICC=$(command -v mpicc.openmpi || command -v mpicc) || {
    echo "mpi.sh: skipped: no mpicc (apt-get install libopenmpi-dev)"
    exit 77
}
MPIRUN=$(command -v mpirun.openmpi || command -v mpirun) || {
    echo "mpi.sh: skipped: no mpirun (apt-get install openmpi-bin)"
    exit 77
}
[ -f "$BUILD/ofi/libferry-fi.so" ] || {
    echo "mpi.sh: skipped: $BUILD/ofi/libferry-fi.so is not built"
    exit 77
}
case $TRANSPORT in
shm | hosts) unset FERRY_TRANSPORTS ;;
tcp) export FERRY_TRANSPORTS=tcp ;;
*)
    echo "mpi.sh: transport must be shm, tcp or hosts"
    exit 1
    ;;
esac
if [ "$TRANSPORT" = hosts ]; then
    # shellcheck source=tests/netns/lib.sh
    source "$ROOT/tests/netns/lib.sh"
    netns_require || {
        rc=$?
        echo "mpi.sh: skipped: the network namespaces of two hosts cannot be made here (above)"
        exit "$rc"
    }
    command -v mpirun.openmpi >/dev/null || {
        echo "mpi.sh: skipped: no mpirun.openmpi (apt-get install openmpi-bin)"
        exit 77
    }
fi
# a directory of this run's own (runs may go in parallel), under /tmp, which the hosts share
work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-mpi.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
prog=$work/mpi_semantics
log=$work/log
"$MPICC" -O2 -Wall -Wextra -o "$prog" "$ROOT/ofi/tests/mpi_semantics.c" || exit 1
export FI_PROVIDER_PATH=$BUILD/ofi
MCA=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ferry
    --mca mtl_ofi_tag_mode "$TAG_MODE" --mca mtl_base_verbose 10 --mca mtl_ofi_verbose 10
    --output-filename "$work/ranks")
if [ "$TRANSPORT" = hosts ]; then
    netns_setup 2 || exit 1
    # netns_setup's trap removes the namespaces on exit; the log goes too
    trap 'rc=$?; rm -rf "$work"; (exit $rc); netns_trap' EXIT INT TERM HUP
    on_h2=$((NP / 2))
    # --timeout: mpirun ends the job (every daemon and rank) after that long
    # ferry's debug log says which transport each connection took
    netns_mpirun h1 "h1:$((NP - on_h2)),h2:$on_h2" --timeout 180 -np "$NP" -x FI_PROVIDER_PATH \
        -x FERRY_LOG_LEVEL=debug "${MCA[@]}" "$prog" "$@" >"$log" 2>&1
    rc=$?
else
    ROOTARG=()
    [ "$(id -u)" -eq 0 ] && ROOTARG=(--allow-run-as-root)
    timeout 180 "$MPIRUN" "${ROOTARG[@]}" --oversubscribe -np "$NP" -x FI_PROVIDER_PATH \
        ${FERRY_TRANSPORTS:+-x FERRY_TRANSPORTS} "${MCA[@]}" "$prog" "$@" >"$log" 2>&1
    rc=$?
fi
grep -E "mtl:ofi|mpi_semantics|^ok |FAIL|rror" "$log" | sed -E 's/^\[[^]]*\] //' | sort |
    uniq -c | sed 's/^ *//' | head -40
# The checks read each rank's own output (--output-filename): mpirun's merged log may hold a
# line cut by another rank's, which could count as a rank of its own or hide a line checked for.
# ranks.log: every rank's files, one after the other, each line whole
for f in "$work"/ranks/1/rank.*/std*; do
    [ -f "$f" ] && cat "$f" && echo
done >"$work/ranks.log"
# ranks whose MTL said it runs on ferry (the provider include list is ferry alone: "component
# ofi selected" means ferry too)
SELECTED_RE="mtl:ofi:provider: ferry|select: component ofi selected"
selected=0
for dir in "$work"/ranks/1/rank.*; do
    grep -qsE "$SELECTED_RE" "$dir"/std* && selected=$((selected + 1))
done
if [ "$selected" -ne "$NP" ]; then
    echo "mpi.sh: the OFI MTL selected the provider ferry in $selected of $NP ranks (exit $rc);" \
        "the log's end:"
    tail -30 "$log"
    exit 1
fi
if [ "$TRANSPORT" = hosts ]; then
    # either of the MTL's lines (above) for a rank of the host
    for h in h1 h2; do
        if ! grep -qE "^\[$(netns_hostname $h):[0-9]+\] .*($SELECTED_RE)" "$work/ranks.log"; then
            echo "mpi.sh: no rank on host $h ($(netns_hostname $h)) selected ferry; the log's end:"
            tail -30 "$log"
            exit 1
        fi
    done
    # across the hosts tcp on the test network; inside a host (2 ranks or more there) shm
    tcp=$(grep -cE "tcp: connection with ${NETNS_NET//./\\.}\.[0-9]+:[0-9]+ .*established" "$work/ranks.log")
    shm=$(grep -c "shm: connected to pid" "$work/ranks.log")
    echo "mpi.sh: ferry connections: $tcp tcp (established, counted on both sides), $shm shm"
    if [ "$tcp" -eq 0 ] || { [ "$((NP / 2))" -ge 2 ] && [ "$shm" -eq 0 ]; }; then
        echo "mpi.sh: expected tcp across the hosts and shm inside each; ferry's log:"
        grep -E "tcp: |shm: " "$work/ranks.log" | head -20
        exit 1
    fi
fi
if [ "$rc" -ne 0 ] || ! grep -q "mpi_semantics: $NP ranks passed" "$work/ranks.log"; then
    echo "mpi.sh: mpi_semantics failed over ferry ($TRANSPORT, $NP ranks, exit $rc); the log's end:"
    tail -30 "$log"
    exit 1
fi
where=$TRANSPORT
[ "$TRANSPORT" = hosts ] && where="2 hosts: $((NP - NP / 2)) on h1, $((NP / 2)) on h2"
echo "mpi.sh: Open MPI over ferry ($where, $NP ranks, $TAG_MODE${1:+, tests: $*}): passed"
