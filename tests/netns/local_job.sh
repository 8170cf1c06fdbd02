#!/usr/bin/env bash
# local_job.sh N SECONDS PROG [ARGS...]: N ranks of PROG on this host, found through the
# bootstrap's tcp method on loopback (FERRY_BOOTSTRAP_ROOT/_RANK/_SIZE), each under a timeout of
# SECONDS; exits 0 when every rank exited 0, else 1 (and every rank's output is printed, prefixed
# with its rank). The transports are what the environment says (FERRY_TRANSPORTS=tcp: tcp
# between the ranks; by default shm).
set -uo pipefail

if [ $# -lt 3 ]; then
    echo "usage: $0 N SECONDS PROG [ARGS...]" >&2
    exit 2
fi
n=$1 seconds=$2
shift 2

# a free port for rank 0's bootstrap listener (tools/free_port.sh: random, below the kernel's
# ephemeral range, used by no socket in any state)
# shellcheck source=tools/free_port.sh
source "$(dirname "$0")/../../tools/free_port.sh"
port=
free_port || exit 1

logs=$(mktemp -d "${TMPDIR:-/tmp}/local_job.XXXXXX")
pids=()
for ((r = 0; r < n; r++)); do
    FERRY_BOOTSTRAP_ROOT=127.0.0.1:$port FERRY_BOOTSTRAP_RANK=$r FERRY_BOOTSTRAP_SIZE=$n \
        timeout -k 5 "$seconds" "$@" >"$logs/$r.log" 2>&1 &
    pids+=($!)
done
rc=0
for ((r = 0; r < n; r++)); do
    if ! wait "${pids[$r]}"; then
        rc=1
    fi
done
for ((r = 0; r < n; r++)); do
    sed "s/^/[rank $r] /" "$logs/$r.log"
done
rm -rf "$logs"
exit $rc
