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

# a free port for rank 0's bootstrap listener: below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, 32768 and up), where another test's outgoing connection may
# hold it without listening ("Address already in use" in a full-suite run), and used by no
# socket in any state
port=
for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 12000))
    if ! ss -Htan "( sport = :$p )" | grep -q .; then
        port=$p
        break
    fi
done
if [ -z "$port" ]; then
    echo "local_job.sh: no free TCP port found" >&2
    exit 1
fi

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
