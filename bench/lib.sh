# shellcheck shell=bash
# Shared by the bench/compare_*.sh scripts (sourced, not run): background servers on fresh TCP
# ports, and their cleanup. The sourcing script sets run_timeout (seconds any one client or
# server may take) and calls next_port before each run (it sets port).
# Also: the progress line of every run (bench_progress), and the results a run leaves in
# $BENCH_RESULTS (bench_keep_results).

bench_name=$(basename "$0")
server_pid=
# the repository, and what every script measures unless told otherwise
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ferry_perf=${FERRY_PERF:-$root/build/tools/ferry_perf}
scale=${BENCH_ITERS_SCALE:-1} # multiplies every iteration count

cleanup() {
    if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=tools/free_port.sh
source "$root/tools/free_port.sh"

# The port of the next run: a new free one every run (no TIME_WAIT surprises), at random, so
# that two scripts running at the same time do not pick the same sequence.
next_port() {
    free_port || exit 1
}

# listener_of PORT PID: whether the TCP listener on PORT belongs to process PID or one of its
# descendants (the server under timeout, env, taskset). Another script's server may listen on
# the same port: its clients must not measure ours, nor ours its.
listener_of() {
    local pid p
    for pid in $(ss -Hltnp "( sport = :$1 )" | grep -o 'pid=[0-9]*' | cut -d= -f2); do
        p=$pid
        while [[ -n $p && $p -gt 1 ]]; do
            [[ $p == "$2" ]] && return 0
            p=$(awk '$1 == "PPid:" { print $2 }' "/proc/$p/status" 2>/dev/null)
        done
    done
    return 1
}

# Wait until server $2 (or a process under it) listens on TCP port $1 (at most 10 s) while it
# is alive.
wait_listening() {
    local deadline=$((SECONDS + 10))
    until listener_of "$1" "$2"; do
        if ! kill -0 "$2" 2>/dev/null; then
            return 1
        fi
        if ((SECONDS >= deadline)); then
            return 1
        fi
        sleep 0.02
    done
}

# start_server LOG CMD...: runs CMD in the background, waits for it to listen on $port.
# shellcheck disable=SC2154 # run_timeout and port belong to the sourcing script
start_server() {
    local log=$1
    shift
    timeout "$run_timeout" "$@" >"$log" 2>&1 &
    server_pid=$!
    if ! wait_listening "$port" "$server_pid"; then
        echo "$bench_name: server did not listen on port $port: $*" >&2
        ss -Hltnp "( sport = :$port )" | sed 's/^/  listening there instead: /' >&2
        cat "$log" >&2
        exit 1
    fi
}

# Wait for the server of the run that just ended; its exit status.
finish_server() {
    local rc=0
    wait "$server_pid" || rc=$?
    server_pid=
    return $rc
}

# ferry_env: env(1) arguments that clear the FERRY_* variables choosing a path, so that nothing
# inherited picks another one; a script starts its run_env with them.
# shellcheck disable=SC2034 # used by the sourcing scripts
ferry_env=(-u FERRY_RNDV_MODE -u FERRY_RNDV_THRESH -u FERRY_SHM_CMA -u FERRY_TCP_IFACE
    -u FERRY_TRANSPORTS)

# bench_run PROGRAM SERVER_OPTION... -- CLIENT_ARGUMENT...: one client/server run of a
# benchmark program (ferry_perf or ucx_perftest) on a fresh port: the server is
# "PROGRAM -p PORT SERVER_OPTION...", the client "PROGRAM CLIENT_ARGUMENT... -p PORT" (the host is
# among the client's arguments), both under "env ${run_env[@]}" (the caller's array of env(1)
# arguments, -u VAR and VAR=VALUE; may be unset). What the client printed on stdout is left in
# run_out (the function runs in the calling shell: no subshell, so the port and the server's pid
# are kept); its stderr stays in $work/client.log. Exits with both logs when the client fails,
# or when a ferry_perf server fails (ucx_perftest's server status carries no information).
# shellcheck disable=SC2154 # work, run_timeout and run_env belong to the sourcing script
bench_run() {
    local program=$1 server=()
    shift
    while (($#)) && [[ $1 != -- ]]; do
        server+=("$1")
        shift
    done
    (($#)) && shift
    local env=(env "${run_env[@]}")
    next_port
    start_server "$work/server.log" "${env[@]}" "$program" -p "$port" "${server[@]}"
    if ! run_out=$("${env[@]}" timeout "$run_timeout" "$program" "$@" -p "$port" \
        2>"$work/client.log"); then
        echo "$bench_name: client failed: ${run_env[*]} $program $* -p $port" >&2
        echo "$run_out" >&2
        cat "$work/client.log" "$work/server.log" >&2
        exit 1
    fi
    if ! finish_server && [[ $program != ucx_perftest ]]; then
        echo "$bench_name: server failed: ${run_env[*]} $program -p $port ${server[*]}" >&2
        cat "$work/server.log" >&2
        exit 1
    fi
}

# fi_pingpong_run PROVIDER SIZE ITERS [VAR=VALUE...]: one fi_pingpong pair, ITERS round trips of
# SIZE-byte tagged messages on RDM endpoints of PROVIDER (server on core 0, client on core 1 to
# 127.0.0.1, their control connection on a fresh port), both under env VAR=VALUE...; sets
# fi_line to its result "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec" (usec/xfer:
# one way, the run's time over both directions' transfers; MB/sec: 10^6 B/s over both
# directions). Returns 1 with the client's output and the server's log on stderr when the
# client fails or prints no result.
# shellcheck disable=SC2154 # work and run_timeout belong to the sourcing script
fi_pingpong_run() {
    local prov=$1 size=$2 iters=$3 out
    shift 3
    local args=(-p "$prov" -e rdm -m tagged -I "$iters" -S "$size")
    next_port
    start_server "$work/server.log" env "$@" taskset -c 0 fi_pingpong "${args[@]}" -B "$port"
    if ! out=$(timeout "$run_timeout" env "$@" taskset -c 1 fi_pingpong "${args[@]}" -P "$port" \
        127.0.0.1 2>&1); then
        echo "$bench_name: fi_pingpong -p $prov, $size B: the client failed:" >&2
        echo "$out" >&2
        cat "$work/server.log" >&2
        finish_server || true
        return 1
    fi
    finish_server || true
    # the line after the header (its bytes column says 4k, 64k, 1m, 16m, not the size)
    fi_line=$(echo "$out" | awk '$1 == "bytes" { getline; if (NF == 8) print; exit }')
    if [[ -z $fi_line ]]; then
        echo "$bench_name: fi_pingpong -p $prov, $size B: no result line:" >&2
        echo "$out" >&2
        return 1
    fi
}

# ferry_record TEST MODE CSV: ferry_perf's CSV (test,size,iterations,lat_p50_us,lat_avg_us,
# bw_GBps,msgrate_Mps) as a line of $raw (lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,
# msgrate_Mps).
# shellcheck disable=SC2154 # raw belongs to the sourcing script
ferry_record() {
    echo "$3" | awk -F, -v test="$1" -v mode="$2" '$1 == test {
        printf "ferry,%s,%s,%s,%s,%s,%s,%s\n", $1, $2, mode, $4, $5, $6, $7 }' >>"$raw"
}

# ucx_record TEST SIZE MODE OUTPUT: the "Final:" line of ucx_perftest's OUTPUT as a line of $raw.
# The figures are of the whole run ("overall"), not of its last report interval; UCX's MB is
# 2^20 bytes; its latency is one way (half the round trip) like ferry's. A TEST ending in _lat
# records latencies, any other a bandwidth and message rate.
ucx_record() {
    local line
    line=$(ucx_final_line "$4") || exit 1
    # "Final: iters lat_p50 lat_avg lat_overall MB/s_avg MB/s_overall msg/s_avg msg/s_overall"
    echo "$line" | awk -v test="$1" -v size="$2" -v mode="$3" '{
        if (test ~ /_lat$/)
            printf "ucx,%s,%s,%s,%s,%s,,\n", test, size, mode, $3, $5
        else
            printf "ucx,%s,%s,%s,,,%.4f,%.4f\n", test, size, mode, $7 * 1048576 / 1e9, $9 / 1e6
    }' >>"$raw"
}

# The "Final:" line of ucx_perftest's output $1, "Final: iters lat_p50 lat_avg lat_overall
# MB/s_avg MB/s_overall msg/s_avg msg/s_overall" (avg: the last report interval, overall: the
# whole run; UCX's MB is 2^20 bytes); fails (status 1) when there is none: call it as
# line=$(ucx_final_line "$out") || exit 1
ucx_final_line() {
    local line
    line=$(echo "$1" | grep '^Final:' | tail -1)
    if [[ -z $line ]]; then
        echo "$bench_name: no 'Final:' line from ucx_perftest:" >&2
        echo "$1" >&2
        return 1
    fi
    echo "$line"
}

# need_tools TOOL...: exit with a message naming the first TOOL that is not installed.
need_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$bench_name: $tool is missing" >&2; exit 1; }
    done
}

# ucx_need_transports TL...: exit unless UCX has each transport TL here (ucx_info -d).
ucx_need_transports() {
    local tl
    for tl in "$@"; do
        if ! ucx_info -d 2>/dev/null | grep -q "Transport: $tl\$"; then
            echo "$bench_name: UCX has no '$tl' transport here (ucx_info -d)" >&2
            exit 1
        fi
    done
}

# apt_install PACKAGE...: Debian packages, refreshing the package lists only when needed.
apt_install() {
    echo "$bench_name: installing $*" >&2
    if ! apt-get install -y "$@" >/dev/null 2>&1; then
        apt-get update >/dev/null && apt-get install -y "$@" >/dev/null
    fi
}

# Percentage of CPU time (all CPUs) spent busy during one second: other work on the machine.
cpu_busy_percent() {
    local a b
    read -r -a a < <(grep '^cpu ' /proc/stat)
    sleep 1
    read -r -a b < <(grep '^cpu ' /proc/stat)
    local total=0 idle=$(((b[4] + b[5]) - (a[4] + a[5])))
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    echo $((total > 0 ? 100 * (total - idle) / total : 0))
}

# check_args REPEAT_NOTE: the sourcing script's $repeat (a positive integer), its $scale when it
# has one (BENCH_ITERS_SCALE), and $ferry_perf (built); exits with a usage message otherwise.
# shellcheck disable=SC2154 # repeat, ferry_perf and root belong to the sourcing script
check_args() {
    if ! [[ $repeat =~ ^[1-9][0-9]*$ ]]; then
        echo "usage: $0 [REPEAT]   (REPEAT: $1)" >&2
        exit 2
    fi
    if [[ -n ${scale:-} ]] && ! [[ $scale =~ ^[1-9][0-9]*$ ]]; then
        echo "$bench_name: BENCH_ITERS_SCALE must be a positive integer" >&2
        exit 2
    fi
    if [[ ! -x $ferry_perf ]]; then
        echo "$bench_name: $ferry_perf not found; build first:" >&2
        echo "  cmake -S $root -B $root/build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build $root/build -j" >&2
        exit 1
    fi
}

# provider_setup REPEAT_NOTE TOOL...: the set-up of the scripts that measure the libfabric
# provider (compare_fi.sh, compare_mpi.sh), after they set repeat: build (BUILD, default build)
# and its ferry_perf (checked by check_args with REPEAT_NOTE), the provider
# $build/ofi/libferry-fi.so and each TOOL, else exit; out_dir (BENCH_RESULTS, default
# /tmp/ferry-bench, created), work (a temporary folder, removed on exit with the servers) and
# raw ($work/raw.csv, empty).
# shellcheck disable=SC2034 # out_dir and raw are the sourcing script's
provider_setup() {
    local note=$1
    shift
    build=$(cd "${BUILD:-$root/build}" && pwd)
    ferry_perf=$build/tools/ferry_perf
    check_args "$note"
    need_tools "$@"
    if [[ ! -f $build/ofi/libferry-fi.so ]]; then
        echo "$bench_name: $build/ofi/libferry-fi.so is not built" >&2
        exit 1
    fi
    out_dir=${BENCH_RESULTS:-/tmp/ferry-bench}
    mkdir -p "$out_dir"
    work=$(mktemp -d "${TMPDIR:-/tmp}/bench_${bench_name%.sh}.XXXXXX")
    trap 'cleanup; rm -rf "$work"' EXIT
    raw=$work/raw.csv
    : >"$raw"
}

# mpi_pingpong_build OUT: bench/mpi_pingpong.c with ferry_perf's clock.c, parse.c and keyed.c,
# built with $mpicc (Open MPI's compiler wrapper: a benchmark dependency, not a CMake one) into
# OUT; exits with the compiler's messages when it fails.
# shellcheck disable=SC2154 # mpicc and work belong to the sourcing script
mpi_pingpong_build() {
    local perf=$root/tools/ferry_perf
    if ! "$mpicc" -std=c11 -O2 -Wall -Wextra -Werror -o "$1" "$root/bench/mpi_pingpong.c" \
        "$perf/clock.c" "$perf/parse.c" "$perf/keyed.c" 2>"$work/mpicc.log"; then
        echo "$bench_name: $mpicc failed to build bench/mpi_pingpong.c:" >&2
        cat "$work/mpicc.log" >&2
        exit 1
    fi
}

# physical_limits_build OUT: bench/physical_limits.c (plain C, no ferry) built with ${CC:-cc}
# into OUT; exits with the compiler's messages when it fails.
# shellcheck disable=SC2154 # work belongs to the sourcing script
physical_limits_build() {
    if ! "${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -o "$1" "$root/bench/physical_limits.c" \
        2>"$work/cc.log"; then
        echo "$bench_name: ${CC:-cc} failed to build bench/physical_limits.c:" >&2
        cat "$work/cc.log" >&2
        exit 1
    fi
}

# The load average (1, 5, 15 minutes) when the script started: the benchmark's figures mean
# little when other work shares the machine.
bench_load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# A duration in seconds as M:SS (or H:MM:SS).
bench_duration() {
    local t=$1
    if ((t >= 3600)); then
        printf '%d:%02d:%02d' $((t / 3600)) $((t % 3600 / 60)) $((t % 60))
    else
        printf '%d:%02d' $((t / 60)) $((t % 60))
    fi
}

# bench_progress WHAT...: the progress line of the run about to start, on stderr:
#   [ 12/190  1:05 elapsed, ~15:10 left] ferry tag_bw 4096 B auto
# The sourcing script sets total_runs (runs in the session), count (runs so far, from 0) and
# start_time ($SECONDS when the runs began); the estimate assumes the remaining runs take as
# long as the average one so far.
# shellcheck disable=SC2154 # total_runs and start_time belong to the sourcing script
bench_progress() {
    count=$((count + 1))
    local elapsed=$((SECONDS - start_time)) left=""
    if ((count > 1)); then
        left=", ~$(bench_duration $((elapsed * (total_runs - count + 1) / (count - 1)))) left"
    fi
    printf '[%3d/%d %6s elapsed%s] %s\n' "$count" "$total_runs" "$(bench_duration "$elapsed")" \
        "$left" "$*" >&2
}

# tag_iters_of TEST SIZE: the iterations of a run of TEST at SIZE: the sourcing script's
# lat_iters SIZE for tag_lat, its bw_iters SIZE otherwise, times BENCH_ITERS_SCALE.
tag_iters_of() {
    local n
    if [[ $1 == tag_lat ]]; then n=$(lat_iters "$2"); else n=$(bw_iters "$2"); fi
    echo $((n * scale))
}

# run_progress LIB TEST SIZE [MODE]: bench_progress in columns ("ferry tag_lat    4096 B auto").
run_progress() {
    bench_progress "$(printf '%-5s %-7s %9s B%s' "$1" "$2" "$3" "${4:+ $4}")"
}

# bench_cpu: the CPU's model name.
bench_cpu() {
    awk -F: '/model name/ {gsub(/^ +/, "", $2); print $2; exit}' /proc/cpuinfo
}

# bench_version TOOL: the version of a peer library, or nothing when its tool is missing.
bench_version() {
    case $1 in
    ucx) ucx_info -v 2>/dev/null | awk '/Version/ {print $3; exit}' ;;
    openmpi) ompi_info 2>/dev/null | awk -F: '/Open MPI:/ {gsub(/ /, "", $2); print $2; exit}' ;;
    libfabric) fi_info --version 2>/dev/null | awk '/libfabric:/ {print $2; exit}' ;;
    esac
}

# bench_keep_results: with BENCH_RESULTS=DIR set, keep this session's raw CSV as
# DIR/<script>.csv (one line per run: lib,test,size,mode,lat_p50_us,lat_avg_us,bw_GBps,
# msgrate_Mps; compare_seg.sh: its own columns) and describe the session in DIR/<script>.info
# (key=value lines: when, where, which versions, how loaded). bench/report.sh plots from them.
# shellcheck disable=SC2154 # raw, repeat, ferry_perf, root, busy_before belong to the script
bench_keep_results() {
    [[ -n ${BENCH_RESULTS:-} ]] || return 0
    local stem=${bench_name%.sh} ferry_info
    ferry_info=$(dirname "$ferry_perf")/ferry_info
    mkdir -p "$BENCH_RESULTS"
    cp "$raw" "$BENCH_RESULTS/$stem.csv"
    {
        echo "script=$bench_name"
        echo "repeat=$repeat"
        echo "iters_scale=${scale:-1}"
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "elapsed_s=$((SECONDS - start_time))"
        echo "cpu=$(bench_cpu)"
        echo "nproc=$(nproc)"
        echo "kernel=$(uname -r)"
        echo "load_start=$bench_load_start"
        echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)"
        echo "cpu_busy_before=${busy_before:-}"
        echo "ferry=$("$ferry_info" -v 2>/dev/null | head -n 1)"
        echo "ferry_commit=$(git -C "$root" describe --always --dirty 2>/dev/null || true)"
        echo "ucx=$(bench_version ucx)"
        echo "openmpi=$(bench_version openmpi)"
        echo "libfabric=$(bench_version libfabric)"
    } >"$BENCH_RESULTS/$stem.info"
    echo "$bench_name: kept $BENCH_RESULTS/$stem.csv and $stem.info" >&2
}
