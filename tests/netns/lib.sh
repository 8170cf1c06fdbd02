# shellcheck shell=bash
# The multi-host test bed: "hosts" made of Linux namespaces on this machine.
#
#   source tests/netns/lib.sh
#   netns_require || exit $?          # 77 + a reason when this machine cannot do it
#   netns_setup 3                     # hosts h1 h2 h3 (trap-based cleanup is installed)
#   host_exec h2 ferry_info -e addr   # run a command "on" host h2
#   netns_link_cut h2 ... netns_link_restore h2
#   netns_loss h1 10 ... netns_loss_clear h1
#   netns_rate h1 100mbit ... netns_rate_clear h1
#   netns_mpirun h1 "h1:2,h2:2" -np 4 prog args   # mpirun.openmpi across the hosts
#   netns_teardown                    # also run by the trap on EXIT/INT/TERM/HUP
#
# What one run creates (PREFIX is NETNS_PREFIX, default fy<pid of the shell>):
#   network namespace PREFIX-sw     the "switch": bridge br0 and one port pI per host
#   network namespace PREFIX-hI     host I: lo, eth0 = 10.77.0.I/24 (NETNS_NET), the other end
#                                   of a veth pair whose switch end is pI on br0
#   holder process per host         entered by host_exec: the host's network namespace plus its
#                                   own UTS (hostname PREFIX-hI), IPC and mount namespace; in that
#                                   mount namespace /dev/shm is a private tmpfs and /etc/hosts
#                                   names every host of the run. It lives while the shell that
#                                   made it lives (tail --pid), so a killed run leaves no process.
#   /tmp/netns-PREFIX/              state: hI.pid (holder pids), hosts, hostfiles, logs
# Nothing is created in the root network namespace, and every address is inside the run's own
# namespaces: a client for a host address always runs inside a host (host_exec).
#
# The switch lives in its own namespace so that the root namespace sees no bridge, no veth and no
# address of the test bed, and so that deleting the namespaces removes every link at once.

NETNS_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NETNS_PREFIX=${NETNS_PREFIX:-fy$$}
NETNS_NET=${NETNS_NET:-10.77.0}
NETNS_STATE=${NETNS_STATE:-${TMPDIR:-/tmp}/netns-$NETNS_PREFIX}
NETNS_HOSTS=()
export NETNS_STATE NETNS_PREFIX

netns_log() {
    echo "netns: $*" >&2
}

# netns_require: return 77 (and say why) unless this process can build the test bed.
netns_require() {
    local tool
    if [ "$(id -u)" -ne 0 ]; then
        echo "netns: SKIP: needs root (network namespaces, veth, nftables, tc)"
        return 77
    fi
    for tool in ip nft unshare nsenter tc tail; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "netns: SKIP: '$tool' not found (apt-get install iproute2 nftables util-linux)"
            return 77
        fi
    done
    local probe="${NETNS_PREFIX}-probe"
    ip netns del "$probe" 2>/dev/null
    if ! ip netns add "$probe" 2>/dev/null; then
        echo "netns: SKIP: 'ip netns add' fails here (no CAP_SYS_ADMIN, or no network namespaces)"
        return 77
    fi
    local ok=1 why=""
    if ! ip netns exec "$probe" nft add table inet netns_probe 2>/dev/null; then
        ok=0 why="nftables does not work in a namespace (kernel without nf_tables?)"
    elif ! ip netns exec "$probe" unshare --uts --ipc --mount --propagation private true 2>/dev/null; then
        ok=0 why="unshare --uts --ipc --mount fails here"
    elif ! ip -n "$probe" link add netns_probe0 type veth peer name netns_probe1 2>/dev/null; then
        ok=0 why="cannot create veth pairs (kernel without veth?)"
    fi
    ip netns del "$probe" 2>/dev/null
    if [ "$ok" -eq 0 ]; then
        echo "netns: SKIP: $why"
        return 77
    fi
    return 0
}

# netns_ns NAME: the network namespace of host NAME (h1, h2, ...) or of the switch (sw).
netns_ns() {
    echo "${NETNS_PREFIX}-$1"
}

# netns_hostname NAME: the host's hostname (what mpirun and gethostname() see).
netns_hostname() {
    echo "${NETNS_PREFIX}-$1"
}

# netns_addr NAME: the host's address (h3 -> 10.77.0.3).
netns_addr() {
    echo "${NETNS_NET}.${1#h}"
}

netns_holder_pid() {
    cat "$NETNS_STATE/$1.pid" 2>/dev/null
}

# netns_is_holder PID: the pid is a holder of this run (not a recycled pid of something else).
netns_is_holder() {
    local pid=$1
    [ -n "$pid" ] && [ -r "/proc/$pid/environ" ] &&
        tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "NETNS_HOLDER=${NETNS_PREFIX}"
}

# netns_remove_prefix PREFIX: delete every namespace named PREFIX-* (and the holders in them).
netns_remove_prefix() {
    local prefix=$1 ns pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^${prefix}-"); do
        # processes still inside a host namespace of this prefix are leftovers of the same run
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            kill -KILL "$pid" 2>/dev/null
        done
        ip netns del "$ns" 2>/dev/null || netns_log "could not delete namespace $ns"
    done
}

# netns_remove_stale: leftovers of crashed runs. A run named fy<pid> whose shell is gone is
# stale; prefixes chosen by hand (NETNS_PREFIX) are only cleaned by a run with the same prefix.
netns_remove_stale() {
    local ns prefix pid
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^fy[0-9]+-(sw|h[0-9]+)$'); do
        prefix=${ns%-*}
        pid=${prefix#fy}
        if [ "$prefix" != "$NETNS_PREFIX" ] && ! kill -0 "$pid" 2>/dev/null; then
            netns_log "removing $ns, left by run $prefix (process $pid is gone)"
            netns_remove_prefix "$prefix"
            rm -rf "${TMPDIR:-/tmp}/netns-$prefix"
        fi
    done
}

# netns_teardown: remove everything this run created. Idempotent; safe after a partial setup.
netns_teardown() {
    local f pid
    for f in "$NETNS_STATE"/h*.pid; do
        [ -e "$f" ] || continue
        pid=$(cat "$f")
        netns_is_holder "$pid" && kill -KILL "$pid" 2>/dev/null
    done
    netns_remove_prefix "$NETNS_PREFIX"
    rm -rf "$NETNS_STATE"
}

netns_trap() {
    local rc=$?
    trap - EXIT INT TERM HUP
    netns_teardown
    exit "$rc"
}

# netns_start_holder NAME: start the process whose namespaces make host NAME.
netns_start_holder() {
    local name=$1 ns hostname pidfile
    ns=$(netns_ns "$name")
    hostname=$(netns_hostname "$name")
    pidfile=$NETNS_STATE/$name.pid
    # ip netns exec: the network namespace (and /sys for it); unshare: UTS, IPC and mount
    # namespaces, with private propagation so the mounts below stay inside this host. The shell
    # writes its pid, then becomes tail, which exits when the run's shell ($$) does.
    ip netns exec "$ns" unshare --uts --ipc --mount --propagation private -- \
        /bin/sh -c '
            set -e
            hostname "$1"
            mount -t tmpfs -o size=1g,mode=1777 "netns-shm-$1" /dev/shm
            mount --bind "$2" /etc/hosts
            echo $$ >"$3.tmp"
            mv "$3.tmp" "$3"
            exec env NETNS_HOLDER="$5" tail -f /dev/null --pid="$4"' \
        sh "$hostname" "$NETNS_STATE/hosts" "$pidfile" "$$" "$NETNS_PREFIX" \
        </dev/null >"$NETNS_STATE/$name.holder.log" 2>&1 &
    disown # killed by netns_teardown: no "Killed" line from the shell's job control
    local i
    for i in $(seq 100); do
        [ -s "$pidfile" ] && netns_is_holder "$(cat "$pidfile")" && return 0
        sleep 0.05
    done
    netns_log "host $name: the namespace holder did not start: $(cat "$NETNS_STATE/$name.holder.log")"
    return 1
}

# netns_setup N: make hosts h1..hN joined by a switch, and install the cleanup trap.
netns_setup() {
    local n=${1:-2} i sw ns
    [ "$n" -ge 1 ] && [ "$n" -le 250 ] || {
        netns_log "netns_setup: host count $n out of 1..250"
        return 1
    }
    trap netns_trap EXIT INT TERM HUP
    netns_remove_stale
    netns_teardown # leftovers of an earlier run with this very prefix
    mkdir -p "$NETNS_STATE" || return 1
    {
        echo "127.0.0.1 localhost"
        for i in $(seq "$n"); do
            echo "$(netns_addr "h$i") $(netns_hostname "h$i")"
        done
    } >"$NETNS_STATE/hosts"

    sw=$(netns_ns sw)
    ip netns add "$sw" || return 1
    ip -n "$sw" link set lo up &&
        ip -n "$sw" link add br0 type bridge &&
        ip -n "$sw" link set br0 up || return 1
    NETNS_HOSTS=()
    for i in $(seq "$n"); do
        ns=$(netns_ns "h$i")
        ip netns add "$ns" || return 1
        ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns" &&
            ip -n "$sw" link set "p$i" master br0 &&
            ip -n "$sw" link set "p$i" up &&
            ip -n "$ns" link set lo up &&
            ip -n "$ns" addr add "$(netns_addr "h$i")/24" dev eth0 &&
            ip -n "$ns" link set eth0 up || return 1
        netns_start_holder "h$i" || return 1
        NETNS_HOSTS+=("h$i")
    done
    # The bridge forwards at once (no STP learning delay on a fresh port): wait until every host
    # reaches every other (ARP resolved), so a test never races the links coming up.
    netns_wait_links || return 1
    netns_log "hosts ${NETNS_HOSTS[*]} up (prefix $NETNS_PREFIX, state $NETNS_STATE)"
}

# netns_wait_links: every host's eth0 has carrier and its address is usable (not tentative).
netns_wait_links() {
    local h i
    for h in "${NETNS_HOSTS[@]}"; do
        for i in $(seq 100); do
            if ip -n "$(netns_ns "$h")" -br addr show dev eth0 2>/dev/null | grep -q ' UP '; then
                break
            fi
            sleep 0.05
        done
        ip -n "$(netns_ns "$h")" -br addr show dev eth0 | grep -q ' UP ' || {
            netns_log "host $h: eth0 did not come up: $(ip -n "$(netns_ns "$h")" -br addr)"
            return 1
        }
    done
}

# host_exec NAME CMD...: run CMD on host NAME (all its namespaces, the current directory, the
# current environment).
host_exec() {
    local name=$1 pid
    shift
    pid=$(netns_holder_pid "$name")
    if ! netns_is_holder "$pid"; then
        netns_log "host_exec: no host '$name' in this run (prefix $NETNS_PREFIX)"
        return 127
    fi
    nsenter -t "$pid" -n -u -i -m --wd="$PWD" -- "$@"
}

# ---------------------------------------------------------------- faults

# netns_link_cut NAME [switch|host]: cut host NAME's cable. switch (default): its switch port goes
# down, so eth0 loses carrier and every packet to and from the host is dropped silently (no
# error reaches a socket: only timeouts tell). host: the host's own eth0 goes down (its routes
# go too: local sends fail at once with ENETUNREACH).
netns_link_cut() {
    local name=$1 where=${2:-switch}
    case $where in
    switch) ip -n "$(netns_ns sw)" link set "p${name#h}" down ;;
    host) ip -n "$(netns_ns "$name")" link set eth0 down ;;
    *)
        netns_log "netns_link_cut: 'switch' or 'host', not '$where'"
        return 1
        ;;
    esac
}

# netns_link_restore NAME: the cable back. Every host also forgets its neighbours: an ARP entry
# that failed while the cable was cut (FAILED) makes a new connect() fail at once with
# EHOSTUNREACH instead of resolving the address again (seen as the next test's ranks failing
# to connect right after a cut).
netns_link_restore() {
    local name=$1 h
    ip -n "$(netns_ns sw)" link set "p${name#h}" up &&
        ip -n "$(netns_ns "$name")" link set eth0 up &&
        ip -n "$(netns_ns "$name")" addr replace "$(netns_addr "$name")/24" dev eth0 || return 1
    for h in "${NETNS_HOSTS[@]}"; do
        ip -n "$(netns_ns "$h")" neigh flush dev eth0 2>/dev/null || true
    done
}

# netns_loss NAME PERCENT [in|out|both]: drop PERCENT % of host NAME's IP packets at random
# (nftables numgen; the kernel has no netem), outgoing by default. Replaces an earlier rule.
netns_loss() {
    local name=$1 pct=$2 dir=${3:-out} ns
    ns=$(netns_ns "$name")
    netns_loss_clear "$name"
    {
        echo "table inet netns_fault {"
        if [ "$dir" = out ] || [ "$dir" = both ]; then
            echo "  chain out { type filter hook output priority 0; policy accept;"
            echo "    numgen random mod 100 < $pct counter drop; }"
        fi
        if [ "$dir" = in ] || [ "$dir" = both ]; then
            echo "  chain in { type filter hook input priority 0; policy accept;"
            echo "    numgen random mod 100 < $pct counter drop; }"
        fi
        echo "}"
    } | ip netns exec "$ns" nft -f -
}

netns_loss_clear() {
    ip netns exec "$(netns_ns "$1")" nft delete table inet netns_fault 2>/dev/null
    return 0
}

# netns_loss_dropped NAME: packets dropped so far by the loss rules of host NAME.
netns_loss_dropped() {
    ip netns exec "$(netns_ns "$1")" nft list table inet netns_fault 2>/dev/null |
        sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}'
}

# netns_rate NAME RATE [BURST]: limit host NAME's outgoing rate (tc tbf on eth0), e.g. 100mbit.
netns_rate() {
    local name=$1 rate=$2 burst=${3:-256kb}
    ip netns exec "$(netns_ns "$name")" tc qdisc replace dev eth0 root tbf rate "$rate" \
        burst "$burst" latency 100ms
}

netns_rate_clear() {
    ip netns exec "$(netns_ns "$1")" tc qdisc del dev eth0 root 2>/dev/null
    return 0
}

# ---------------------------------------------------------------- waiting

# netns_wait_file FILE PATTERN SECONDS: until FILE has a line matching PATTERN (grep -E).
netns_wait_file() {
    local file=$1 pattern=$2 seconds=$3 end
    end=$((SECONDS + seconds))
    while [ "$SECONDS" -lt "$end" ]; do
        grep -qE "$pattern" "$file" 2>/dev/null && return 0
        sleep 0.05
    done
    netns_log "timed out after ${seconds}s waiting for /$pattern/ in $file"
    return 1
}

# ---------------------------------------------------------------- mpirun

# netns_mpirun LAUNCH_HOST SLOTS MPIRUN_ARGS...: run mpirun.openmpi on host LAUNCH_HOST with a
# hostfile made from SLOTS ("h1:2,h2:2"); remote daemons are started by rsh_agent.sh, which
# enters the target host's namespaces as ssh would log into it.
netns_mpirun() {
    local launch=$1 slots=$2 item hostfile
    shift 2
    hostfile=$NETNS_STATE/hostfile.$RANDOM
    : >"$hostfile"
    for item in ${slots//,/ }; do
        echo "$(netns_hostname "${item%%:*}") slots=${item#*:}" >>"$hostfile"
    done
    # oob/tcp and btl/tcp only on the test network (never lo or anything else); no tree spawn
    # (every daemon is started from the launch host, where the agent finds the holders); the
    # session directories of each host under its own name in the shared /tmp. No binding: every
    # "host" sees the same CPUs, and binding to cores would put rank 0 of each host on core 0,
    # two busy-polling processes sharing one core (6 ms ping-pongs).
    # LeakSanitizer (asan builds): libpmix keeps a few bytes past PMIx_Finalize (not ours); -x
    # hands the setting to the ranks on every host.
    local lsan="suppressions=$NETNS_LIB_DIR/../mp/lsan_pmix.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
    host_exec "$launch" env \
        LSAN_OPTIONS="$lsan" \
        OMPI_MCA_hwloc_base_binding_policy=none \
        OMPI_MCA_plm_rsh_agent="$NETNS_LIB_DIR/rsh_agent.sh" \
        OMPI_MCA_plm_rsh_no_tree_spawn=1 \
        OMPI_MCA_oob_tcp_if_include="${NETNS_NET}.0/24" \
        OMPI_MCA_btl_tcp_if_include="${NETNS_NET}.0/24" \
        OMPI_MCA_btl=self,tcp \
        OMPI_MCA_pml=ob1 \
        OMPI_MCA_orte_keep_fqdn_hostnames=1 \
        OMPI_MCA_rmaps_base_oversubscribe=1 \
        mpirun.openmpi --allow-run-as-root --oversubscribe --hostfile "$hostfile" \
        -x LSAN_OPTIONS "$@"
}
