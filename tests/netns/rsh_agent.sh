#!/bin/sh
# Open MPI's plm_rsh_agent for the namespace test bed (tests/netns/lib.sh): "ssh HOST COMMAND"
# where HOST is a host of the run (hostname PREFIX-hI) and logging in means entering the
# namespaces of that host's holder process. mpirun calls it as
#     rsh_agent.sh [ssh-like options] HOSTNAME COMMAND-WORDS...
# and the command words form one shell command line, as for ssh. NETNS_STATE (exported by
# lib.sh, inherited through mpirun) names the run's state directory with the holders' pids.
set -u
while [ $# -gt 0 ]; do
    case $1 in
    -x | -q | -T | -n) shift ;;   # ssh options mpirun may add: meaningless here
    -o | -p | -l) shift 2 ;;
    *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "rsh_agent.sh: usage: rsh_agent.sh HOST COMMAND..." >&2
    exit 255
fi
host=$1
shift
: "${NETNS_STATE:?rsh_agent.sh: NETNS_STATE is not set (run through tests/netns/lib.sh)}"
: "${NETNS_PREFIX:?rsh_agent.sh: NETNS_PREFIX is not set (run through tests/netns/lib.sh)}"
name=${host#"$NETNS_PREFIX"-}
name=${name%%.*}
pidfile=$NETNS_STATE/$name.pid
if [ ! -s "$pidfile" ]; then
    echo "rsh_agent.sh: unknown host '$host' (no $pidfile)" >&2
    exit 255
fi
pid=$(cat "$pidfile")
if [ -n "${NETNS_AGENT_LOG:-}" ]; then
    echo "rsh_agent.sh: $host -> holder $pid: $*" >>"$NETNS_AGENT_LOG"
fi
# A login starts in the home directory with a login shell: / is enough for orted.
exec nsenter -t "$pid" -n -u -i -m --wd=/ -- /bin/sh -c "$*"
