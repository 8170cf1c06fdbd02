# shellcheck shell=bash
# free_port (sourced, not run): sets port to a TCP port that no socket on this host uses in any
# state, chosen at random below the kernel's ephemeral range (net.ipv4.ip_local_port_range),
# where an outgoing connection of another program may hold a port without listening on it
# ("Address already in use"). Random, not counted up from a fixed first port: scripts that run
# at the same time (benchmarks, tests) do not walk the same sequence. The port may still be
# taken before its user binds it: a user that waits for it to listen checks that the listener
# is its own (bench/lib.sh's wait_listening). Returns 1 with a message when 100 tries found none.
# Shared by bench/lib.sh and tests/netns/local_job.sh.
# shellcheck disable=SC2034 # port is the caller's
free_port() {
    local low=20000 high ephemeral try p
    read -r ephemeral _ </proc/sys/net/ipv4/ip_local_port_range
    high=$((ephemeral > low + 1000 ? ephemeral - 1 : 32767)) # (an odd range: the usual one)
    for ((try = 0; try < 100; try++)); do
        p=$((low + (RANDOM * 32768 + RANDOM) % (high - low + 1)))
        if ! ss -Htan "( sport = :$p )" | grep -q .; then
            port=$p
            return 0
        fi
    done
    echo "free_port: no free TCP port in $low-$high after 100 tries (ss -tan)" >&2
    return 1
}
