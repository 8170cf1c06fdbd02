#!/usr/bin/env bash
# libfabric's conformance suite (fabtests v1.17.0, the quick set) over the ferry provider.
#
#   ofi/fabtests.sh [BUILD_DIR] [shm|tcp]        (default: build, shm)
#
# Builds fabtests outside the repository with ../shared/fabtests/build.sh (FERRY_FABTESTS_SRC
# overrides where; a git worktree also looks beside its main checkout) once, into
# FERRY_FABTESTS_PREFIX (default /tmp/fabtests-ferry), and runs
#   runfabtests.sh -t quick -b -f ofi/ferry.exclude ferry
# with FI_PROVIDER_PATH=BUILD_DIR/ofi, over shm or with FERRY_TRANSPORTS=tcp. The runner's
# cleanup kills every process whose name starts with fi_, so it runs only inside a private PID
# namespace (unshare --pid --fork --mount-proc). Prints the runner's table and one line
# "fabtests <transport>: N passed, N failed, N excluded or not run"; exits 0 when none failed,
# 1 otherwise, 77 (skipped, with the reason) when fabtests' sources (../shared/fabtests),
# unshare, or the provider are missing.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || {
    echo "fabtests.sh: no build directory ${1:-$ROOT/build}"
    exit 1
}
TRANSPORT=${2:-shm}
# ../shared/fabtests beside the repository (or beside the main checkout of a git worktree)
SRC=${FERRY_FABTESTS_SRC:-$ROOT/../shared/fabtests}
if [ -z "${FERRY_FABTESTS_SRC:-}" ] && [ ! -d "$SRC" ]; then
    common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
    [ -n "$common" ] && SRC=$(dirname "$common")/../shared/fabtests
fi
PREFIX=${FERRY_FABTESTS_PREFIX:-/tmp/fabtests-ferry}
TEST_TIMEOUT=${FERRY_FABTESTS_TEST_TIMEOUT:-60}

skip() {
    echo "fabtests.sh: skipped: $*"
    exit 77
}

case $TRANSPORT in
shm) unset FERRY_TRANSPORTS ;;
tcp) export FERRY_TRANSPORTS=tcp ;;
*)
    echo "fabtests.sh: transport must be shm or tcp, not $TRANSPORT"
    exit 1
    ;;
esac

[ -x "$SRC/build.sh" ] || skip "$SRC/build.sh is absent (fabtests v1.17.0 lives in ../shared/fabtests)"
[ -f "$BUILD/ofi/libferry-fi.so" ] || skip "$BUILD/ofi/libferry-fi.so is not built (FERRY_WITH_OFI)"
command -v unshare >/dev/null || skip "unshare is not installed (apt-get install util-linux)"
unshare --pid --fork --mount-proc true 2>/dev/null ||
    skip "unshare --pid --fork --mount-proc fails here (needs root): the runner must not see other fi_* processes"
for tool in autoconf automake libtoolize; do
    command -v $tool >/dev/null ||
        skip "$tool is not installed (apt-get install autoconf automake libtool libfabric-dev)"
done

# A DL provider that fails to dlopen is silently ignored by libfabric: check the file first.
export FI_PROVIDER_PATH=$BUILD/ofi
if ! fi_info -l 2>/dev/null | grep -q '^ferry:'; then
    echo "fabtests.sh: fi_info -l does not list ferry from $FI_PROVIDER_PATH (does it load? ldd it)"
    exit 1
fi

if ! "$SRC/build.sh" "$PREFIX" >"$BUILD/fabtests-build.log" 2>&1; then
    cat "$BUILD/fabtests-build.log"
    echo "fabtests.sh: building fabtests into $PREFIX failed"
    exit 1
fi

# The runner writes its temporary files into the current directory.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ferry-fabtests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1
echo "fabtests.sh: $PREFIX/bin/runfabtests.sh -t quick -b -f ofi/ferry.exclude ferry ($TRANSPORT)"
unshare --pid --fork --mount-proc "$PREFIX/bin/runfabtests.sh" -p "$PREFIX/bin" \
    -T "$TEST_TIMEOUT" -t quick -b -f "$ROOT/ofi/ferry.exclude" ferry | tee "$WORK/out"
pass=$(sed -n 's/^# Total Pass *\([0-9]*\)$/\1/p' "$WORK/out")
fail=$(sed -n 's/^# Total Fail *\([0-9]*\)$/\1/p' "$WORK/out")
other=$(grep -cE ':\s+(Excluded|Notrun)$' "$WORK/out")
if [ -z "$pass" ] || [ -z "$fail" ]; then
    echo "fabtests.sh: the runner printed no summary"
    exit 1
fi
echo "fabtests $TRANSPORT: $pass passed, $fail failed, $other excluded or not run"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
