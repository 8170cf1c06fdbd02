#!/usr/bin/env bash
# libfabric's conformance suite (fabtests v1.17.0) over the ferry provider.
#
#   ofi/fabtests.sh [BUILD_DIR] [shm|tcp] [quick|ci]      (default: build, shm, quick)
#
# Builds fabtests outside the repository with ../shared/fabtests/build.sh (FERRY_FABTESTS_SRC
# overrides where; a git worktree also looks beside its main checkout) once, into
# FERRY_FABTESTS_PREFIX (default /tmp/fabtests-ferry), and runs them with
# FI_PROVIDER_PATH=BUILD_DIR/ofi, over shm or with FERRY_TRANSPORTS=tcp:
#   quick  the whole quick suite with fabtests' own runner,
#            runfabtests.sh -t quick -b -f ofi/ferry.exclude ferry
#          (about 15 minutes on a loaded 2-core machine). The runner's cleanup kills every
#          process whose name starts with fi_, so it runs only inside a private PID namespace
#          (unshare --pid --fork --mount-proc). Prints the runner's table and one line
#          "fabtests <transport>: N passed, N failed, N excluded or not run".
#   ci     the entries of ofi/fabtests.ci (what ctest runs: one test per feature, smaller
#          sizes), FERRY_FABTESTS_JOBS (default 2) at a time, each pair on its own out-of-band
#          port; this script starts and ends every process itself (by pid). Prints one line per
#          test with its time and the output of a failing one.
# Exits 0 when none failed, 1 otherwise, 77 (skipped, with the reason) when fabtests' sources
# (../shared/fabtests), unshare, or the provider are missing.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" 2>/dev/null && pwd) || {
    echo "fabtests.sh: no build directory ${1:-$ROOT/build}"
    exit 1
}
TRANSPORT=${2:-shm}
MODE=${3:-quick}
# ../shared/fabtests beside the repository (or beside the main checkout of a git worktree)
SRC=${FERRY_FABTESTS_SRC:-$ROOT/../shared/fabtests}
if [ -z "${FERRY_FABTESTS_SRC:-}" ] && [ ! -d "$SRC" ]; then
    common=$(git -C "$ROOT" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)
    [ -n "$common" ] && SRC=$(dirname "$common")/../shared/fabtests
fi
PREFIX=${FERRY_FABTESTS_PREFIX:-/tmp/fabtests-ferry}
# per test (quick) or per process (ci): a quick-suite benchmark zeroes 1 GiB per process before
# it starts, which alone took over a minute on a loaded 2-core machine
TEST_TIMEOUT=${FERRY_FABTESTS_TEST_TIMEOUT:-300}
# this script's settings are not ferry's: ferry would warn about unknown FERRY_* variables
export -n FERRY_FABTESTS_SRC FERRY_FABTESTS_PREFIX FERRY_FABTESTS_TEST_TIMEOUT FERRY_FABTESTS_JOBS

skip() {
    echo "fabtests.sh: skipped: $*"
    exit 77
}

case $MODE in
quick | ci) ;;
*)
    echo "fabtests.sh: the mode must be quick or ci, not $MODE"
    exit 1
    ;;
esac
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
if [ "$MODE" = quick ]; then
    command -v unshare >/dev/null || skip "unshare is not installed (apt-get install util-linux)"
    unshare --pid --fork --mount-proc true 2>/dev/null ||
        skip "unshare --pid --fork --mount-proc fails here (needs root): the runner must not see other fi_* processes"
else
    command -v ss >/dev/null || skip "ss is not installed (apt-get install iproute2)"
fi
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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ferry-fabtests.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

# ---------------------------------------------------------------- ci: ofi/fabtests.ci
# run_one INDEX KIND PROGRAM ARGS...: one entry, its output in $WORK/INDEX.*, its verdict in
# $WORK/INDEX.result ("pass SECONDS" or "fail SECONDS why").
run_one() {
    run_one_on_port "$((FABTESTS_PORT_BASE + $1))" "$@"
    if grep -q '^fail' "$WORK/$1.result" && grep -qs 'Address already in use' "$WORK/$1.server"; then
        echo "fabtests.sh: entry $1's port $((FABTESTS_PORT_BASE + $1)) was taken: once more on another" >&2
        run_one_on_port "$((FABTESTS_PORT_BASE + 50 + $1))" "$@"
    fi
}

# run_one_on_port PORT INDEX KIND PROGRAM ARGS...: run_one with the out-of-band port given.
run_one_on_port() {
    local port=$1 index=$2 kind=$3 program=$4
    shift 4
    local bin=$PREFIX/bin/$program out=$WORK/$index start=$SECONDS s_rc c_rc verdict
    case $kind in
    unit | neg)
        timeout "$TEST_TIMEOUT" "$bin" "$@" -p ferry >"$out.server" 2>&1
        s_rc=$?
        if [ "$kind" = unit ]; then
            [ $s_rc -eq 0 ] && verdict=pass || verdict="fail exit $s_rc"
        else
            [ $s_rc -eq 61 ] && verdict=pass || verdict="fail exit $s_rc, not 61 (FI_ENODATA)"
        fi
        ;;
    cs)
        timeout "$TEST_TIMEOUT" "$bin" "$@" -p ferry -E="$port" >"$out.server" 2>&1 &
        local server=$!
        # the client connects once: wait until the server listens on its port
        local waited=0
        until ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; do
            if ! kill -0 $server 2>/dev/null || [ $waited -ge 200 ]; then
                break
            fi
            sleep 0.1
            waited=$((waited + 1))
        done
        timeout "$TEST_TIMEOUT" "$bin" "$@" -p ferry -E="$port" 127.0.0.1 >"$out.client" 2>&1
        c_rc=$?
        if [ $c_rc -ne 0 ]; then
            # the client failed: give the server a moment to notice, then end it
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                kill -0 $server 2>/dev/null || break
                sleep 0.3
            done
            kill -9 $server 2>/dev/null
        fi
        wait $server
        s_rc=$?
        if [ $s_rc -eq 0 ] && [ $c_rc -eq 0 ]; then
            verdict=pass
        else
            verdict="fail server exit $s_rc, client exit $c_rc"
        fi
        ;;
    *) verdict="fail unknown kind $kind" ;;
    esac
    # a passing test whose ferry logged an error fails too (as every ctest)
    if [ "$verdict" = pass ] && cat "$out".server "$out".client 2>/dev/null | grep -q '\] ERROR '; then
        verdict="fail ferry logged an error"
    fi
    echo "${verdict%% *} $((SECONDS - start)) ${verdict#* }" >"$out.result"
}

if [ "$MODE" = ci ]; then
    JOBS=${FERRY_FABTESTS_JOBS:-2}
    TEST_TIMEOUT=${FERRY_FABTESTS_TEST_TIMEOUT:-120}
    # Tests without a size option (fi_recv_cancel, fi_multi_ep) still zero 1 GiB per process:
    # transparent huge pages for malloc's large blocks make that about twice as fast.
    export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.hugetlb=1}
    # ports of this run: far from fabtests' defaults (3000, 9228), apart for each process,
    # and below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 and up),
    # where another test's outgoing connection may hold the port ("bind: Address already in
    # use"). An entry whose server still finds its port taken is run once more on another.
    FABTESTS_PORT_BASE=$((20000 + ($$ % 120) * 100))
    mapfile -t entries < <(grep -vE '^[[:space:]]*(#|$)' "$ROOT/ofi/fabtests.ci")
    echo "fabtests.sh: ${#entries[@]} tests of ofi/fabtests.ci over $TRANSPORT, $JOBS at a time"
    began=$SECONDS
    running=0
    for i in "${!entries[@]}"; do
        if [ $running -ge "$JOBS" ]; then
            wait -n
            running=$((running - 1))
        fi
        # shellcheck disable=SC2086 # an entry is words
        run_one "$i" ${entries[$i]} &
        running=$((running + 1))
    done
    wait
    pass=0
    fail=0
    for i in "${!entries[@]}"; do
        read -r verdict seconds why <"$WORK/$i.result" || verdict=fail
        printf '%-60s %4s %3ss %s\n' "${entries[$i]}" "$verdict" "$seconds" "${why:-}"
        if [ "$verdict" = pass ]; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            for side in server client; do
                [ -s "$WORK/$i.$side" ] || continue
                echo "  --- $side:"
                tail -n 20 "$WORK/$i.$side" | sed 's/^/  /'
            done
        fi
    done
    echo "fabtests $TRANSPORT (ci): $pass passed, $fail failed in $((SECONDS - began)) s"
    [ "$fail" -eq 0 ]
    exit
fi

# ---------------------------------------------------------------- quick: runfabtests.sh
# The runner writes its temporary files into the current directory.
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
