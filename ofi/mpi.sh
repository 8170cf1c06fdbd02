#!/usr/bin/env bash
# Open MPI 4.1.4 over the ferry provider: ofi/tests/mpi_semantics.c under mpirun with the OFI
# MTL (pml cm, mtl ofi), which Debian's openmpi-mca-params.conf disables (mtl = ^ofi) unless
# named, restricted to the provider "ferry" and to its full tag mode (source rank in remote CQ
# data, directed receives), so that a missing feature fails instead of falling back.
#
#   ofi/mpi.sh [BUILD_DIR] [NP] [shm|tcp] [TAG_MODE] [TEST...]
#                                          (default: build 2 shm ofi_tag_full, all tests)
#
# The MTL needs names of at most 64 bytes, the same size in every process: the provider's are
# ferry's compact worker addresses (64 bytes). ofi/mpi_netns.sh runs the same across hosts.
#
# Checks that the MTL selected the provider "ferry" (mtl_ofi_verbose) and that the program
# passed. Exits 77 with the reason without mpicc/mpirun (apt-get install openmpi-bin
# libopenmpi-dev).
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
shm) unset FERRY_TRANSPORTS ;;
tcp) export FERRY_TRANSPORTS=tcp ;;
*)
    echo "mpi.sh: transport must be shm or tcp"
    exit 1
    ;;
esac
prog=$BUILD/ofi/mpi_semantics
"$MPICC" -O2 -Wall -Wextra -o "$prog" "$ROOT/ofi/tests/mpi_semantics.c" || exit 1
export FI_PROVIDER_PATH=$BUILD/ofi
log=$(mktemp "${TMPDIR:-/tmp}/ferry-mpi.XXXXXX")
trap 'rm -f "$log"' EXIT
ROOTARG=()
[ "$(id -u)" -eq 0 ] && ROOTARG=(--allow-run-as-root)
timeout 180 "$MPIRUN" "${ROOTARG[@]}" --oversubscribe -np "$NP" -x FI_PROVIDER_PATH \
    ${FERRY_TRANSPORTS:+-x FERRY_TRANSPORTS} --mca pml cm --mca mtl ofi \
    --mca mtl_ofi_provider_include ferry --mca mtl_ofi_tag_mode "$TAG_MODE" \
    --mca mtl_base_verbose 10 --mca mtl_ofi_verbose 10 "$prog" "$@" >"$log" 2>&1
rc=$?
grep -E "mtl:ofi|mpi_semantics|^ok |FAIL|rror" "$log" | sort | uniq -c | sed 's/^ *//' | head -40
if ! grep -qE "mtl:ofi:prov(ider)?: ferry" "$log"; then
    echo "mpi.sh: the OFI MTL did not select the provider ferry (exit $rc); the log's end:"
    tail -30 "$log"
    exit 1
fi
if [ "$rc" -ne 0 ] || ! grep -q "mpi_semantics: $NP ranks passed" "$log"; then
    echo "mpi.sh: mpi_semantics failed over ferry ($TRANSPORT, $NP ranks, exit $rc); the log's end:"
    tail -30 "$log"
    exit 1
fi
echo "mpi.sh: Open MPI over ferry ($TRANSPORT, $NP ranks, $TAG_MODE): passed"
