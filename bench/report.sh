#!/usr/bin/env bash
# report.sh: ferry's performance beside its peers, as plots.
#
# Runs the comparison scripts one after the other (compare_am.sh, compare_tag.sh,
# compare_rma.sh, compare_tcp.sh), keeps what each produced in the report folder, and draws
# one PNG per script with gnuplot: latency and bandwidth against message size, log scales,
# ferry beside every peer, the machine, date, versions and load in the title.
#
# Usage:
#   bash bench/report.sh [REPEAT]        run the scripts (REPEAT runs per configuration,
#                                        default 5: about 20 minutes on an idle machine), then
#                                        plot
#   bash bench/report.sh --plot [DIR]    only plot, from the CSV files already in DIR
#                                        (default: the report folder)
# Environment: BENCH_REPORT_DIR (the report folder, default docs/perf), BENCH_REPORT_SCRIPTS
# (which scripts to run, default "am tag rma tcp"), and what the scripts read (FERRY_PERF,
# BENCH_ITERS_SCALE, ...; see bench/README.md).
#
# For each script NAME the report folder holds: NAME.csv (one line per run), NAME.info (when,
# where, which versions, the load), NAME.txt (the tables it printed), NAME_medians.csv (the
# medians plotted) and NAME.png. A script's files are replaced only when it succeeded.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
source "$here/lib.sh"

out=${BENCH_REPORT_DIR:-$root/docs/perf}
scripts=${BENCH_REPORT_SCRIPTS:-"am tag rma tcp"}
plot_only=0
repeat=5
case ${1:-} in
--plot)
    plot_only=1
    out=${2:-$out}
    ;;
"") ;;
*) repeat=$1 ;;
esac
if ! [[ $repeat =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [REPEAT] | --plot [DIR]   (REPEAT: runs per configuration, default 5)" >&2
    exit 2
fi
for s in $scripts; do
    [[ -f $here/compare_$s.sh ]] || { echo "report.sh: no bench/compare_$s.sh" >&2; exit 2; }
done

command -v gnuplot >/dev/null || apt_install gnuplot-nox
command -v gnuplot >/dev/null || { echo "report.sh: gnuplot is missing" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_report.XXXXXX")
trap 'cleanup; rm -rf "$tmp"' EXIT

# ------------------------------------------------------------------ run the scripts

if ((plot_only == 0)); then
    read -r load1 _ </proc/loadavg
    echo "report.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) (uptime) at the start" >&2
    if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
        echo "report.sh: the machine is busy (load $load1 > 0.5): the figures will be noise;" \
            "the plots say so in their titles" >&2
    fi
    n=$(wc -w <<<"$scripts")
    k=0
    report_start=$SECONDS
    for s in $scripts; do
        k=$((k + 1))
        echo "report.sh: [$k/$n, $(bench_duration $((SECONDS - report_start))) elapsed]" \
            "compare_$s.sh $repeat" >&2
        mkdir -p "$tmp/run_$s"
        BENCH_RESULTS=$tmp/run_$s bash "$here/compare_$s.sh" "$repeat" | tee "$tmp/run_$s/compare_$s.txt"
        cp "$tmp/run_$s/compare_$s."{csv,info,txt} "$out/"
    done
    echo "report.sh: $n scripts in $(bench_duration $((SECONDS - report_start)))" >&2
fi

# ------------------------------------------------------------------ plot

# info FILE KEY: a value of a NAME.info file
info() {
    sed -n "s/^$2=//p" "$1" | head -n 1
}

# The series of each plot, one per line: PANEL|LABEL|LIB|TEST|MODES|FIELD
#   PANEL   which graph (lat, bw, ...: see panel_title); LIB, TEST: the CSV's columns;
#   MODES   the CSV's mode column (several, comma-separated, make one series: UCX's short
#           layout at 8 B and bcopy above); FIELD p50, avg, bw or rate (medians over the runs)
declare -A series what
series[am]='lat|ferry|ferry|am_lat|busy|p50
lat|ferry, sleeping (--wait)|ferry|am_lat|wait|p50
lat|UCX posix (short / bcopy)|ucx|am_lat|short,bcopy|p50
bw|ferry|ferry|am_bw|busy|bw
bw|UCX posix (short / bcopy)|ucx|am_bw|short,bcopy|bw'
series[tag]='lat|ferry|ferry|tag_lat|auto|p50
lat|UCX sm (CMA)|ucx|tag_lat|sm|p50
lat|UCX posix|ucx|tag_lat|posix|p50
lat|Open MPI vader (CMA)|mpi|tag_lat|cma|p50
lat|Open MPI vader, no CMA|mpi|tag_lat|nocma|p50
bw|ferry|ferry|tag_bw|auto|bw
bw|UCX sm (CMA)|ucx|tag_bw|sm|bw
bw|UCX posix|ucx|tag_bw|posix|bw
bw|Open MPI vader (CMA)|mpi|tag_bw|cma|bw
bw|Open MPI vader, no CMA|mpi|tag_bw|nocma|bw'
series[rma]='lat|ferry put (mapped)|ferry|put_lat|alloc|p50
lat|UCX put posix (short / bcopy)|ucx|put_lat|posix-short,posix-bcopy|p50
lat|ferry fetch-add, one operation (mapped)|ferry|atomic_lat|alloc|p50
lat|UCX fetch-add posix, one operation|ucx|atomic_lat|posix|p50
put|ferry put, mapped (--mem alloc)|ferry|put_bw|alloc|bw
put|ferry put, CMA (--mem register)|ferry|put_bw|register|bw
put|ferry put, no CMA (fallback)|ferry|put_bw|fallback|bw
put|UCX put cma zcopy|ucx|put_bw|cma-zcopy|bw
put|UCX put posix bcopy|ucx|put_bw|posix-bcopy|bw
get|ferry get, mapped (--mem alloc)|ferry|get_bw|alloc|bw
get|ferry get, CMA (--mem register)|ferry|get_bw|register|bw
get|ferry get, no CMA (fallback)|ferry|get_bw|fallback|bw
get|UCX get cma zcopy|ucx|get_bw|cma-zcopy|bw
get|UCX get posix bcopy|ucx|get_bw|posix-bcopy|bw'
series[tcp]='lat|ferry|ferry|tag_lat|tcp|p50
lat|UCX tcp|ucx|tag_lat|tcp|p50
lat|libfabric tcp (fi_pingpong, mean)|fi|tag_lat|tcp|p50
bw|ferry|ferry|tag_bw|tcp|bw
bw|UCX tcp|ucx|tag_bw|tcp|bw
bw|libfabric tcp (fi_pingpong: ping-pong, for reference)|fi|tag_lat|tcp|bw'

what[am]="active messages over shared memory"
what[tag]="tagged messages over shared memory"
what[rma]="one-sided operations over shared memory"
what[tcp]="tagged messages over TCP (loopback)"

panel_title() { # PANEL
    case $1 in
    lat) echo "latency: one way, p50, median of the runs (lower is better)" ;;
    bw) echo "bandwidth: streaming, median of the runs (higher is better)" ;;
    put) echo "put bandwidth: median of the runs (higher is better)" ;;
    get) echo "get bandwidth: median of the runs (higher is better)" ;;
    esac
}
panel_ylabel() { # PANEL
    case $1 in
    lat) echo "one-way latency (µs)" ;;
    *) echo "bandwidth (GB/s = 10^9 B/s)" ;;
    esac
}

# human SIZE: 8, 4K, 1M
human() {
    local s=$1
    if ((s >= 1048576)); then echo "$((s / 1048576))M"; elif ((s >= 1024)); then echo "$((s / 1024))K"; else echo "$s"; fi
}

# Colours: ferry's series in warm colours (its first one solid and thick, its variants
# dashed), the peers' in cool ones.
ferry_colours=('#d62728' '#ff7f0e' '#8c564b')
peer_colours=('#1f77b4' '#2ca02c' '#9467bd' '#17becf' '#7f7f7f')

# medians CSV OUT: lib,test,mode,size,runs,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps, the
# medians over the runs of each configuration (sorted by lib, test, mode, size).
medians() {
    awk -F, -f "$here/lib.awk" -f <(printf '%s\n' '
NR > 1 {
    k = $1 "," $2 "," $4 "," $3
    if (!(k in runs)) keys[++nk] = k
    runs[k]++
    add(k ",p50", $5); add(k ",avg", $6); add(k ",bw", $7); add(k ",rate", $8)
}
END {
    print "lib,test,mode,size,runs,lat_p50_us,lat_avg_us,bw_GBps,msgrate_Mps"
    for (i = 1; i <= nk; i++) {
        k = keys[i]
        printf "%s,%d,%s,%s,%s,%s\n", k, runs[k], median(k ",p50"), median(k ",avg"), median(k ",bw"), median(k ",rate")
    }
}') "$1" | { read -r head && echo "$head" && sort -t, -k1,1 -k2,2 -k3,3 -k4,4n; } >"$2"
}

# series_data MEDIANS LIB TEST MODES FIELD OUT: "size value" lines of one series
series_data() {
    awk -F, -v lib="$2" -v test="$3" -v modes="$4" -v field="$5" '
BEGIN { n = split(modes, m, ","); for (i = 1; i <= n; i++) want[m[i]] = 1
        col = field == "p50" ? 6 : field == "avg" ? 7 : field == "bw" ? 8 : 9 }
NR > 1 && $1 == lib && $2 == test && ($3 in want) && $col != "" { print $4, $col }' "$1" |
        sort -n >"$6"
}

# xtics SIZES...: gnuplot's tic list for the message sizes present (more than 10 sizes: every
# size gets a tic, every other one a label, so that the labels do not overlap)
xtics() {
    local s list="" i=0 label
    for s in "$@"; do
        label=$(human "$s")
        if [ $# -gt 10 ] && [ $((i % 2)) -eq 1 ]; then
            label=""
        fi
        list+="${list:+, }\"$label\" $s"
        i=$((i + 1))
    done
    echo "($list)"
}

# ytics FILE...: on a short range (up to 3 decades) of the values in column 2 of the files, tics
# at 1, 2 and 5 of each decade (gnuplot labels only the decades of a log axis); else the default.
ytics() {
    awk '$2 > 0 { if (min == "" || $2 < min) min = $2; if ($2 > max) max = $2 }
    END {
        if (min == "" || max / min > 1000) { print "set ytics autofreq"; exit }
        list = ""
        for (e = int(log(min) / log(10)) - 1; e <= int(log(max) / log(10)) + 1; e++)
            for (i = 1; i <= 3; i++) {
                v = (i == 1 ? 1 : i == 2 ? 2 : 5) * 10 ^ e
                if (v >= min / 1.3 && v <= max * 1.3) list = list (list == "" ? "" : ", ") sprintf("\"%g\" %g", v, v)
            }
        print "set ytics (" list ")"
    }' "$@"
}

# plot FAMILY: NAME.png from NAME.csv and NAME.info in $out
plot() {
    local fam=$1 name=compare_$1
    local csv=$out/$name.csv inf=$out/$name.info
    if [[ ! -f $csv || ! -f $inf ]]; then
        echo "report.sh: no $csv (or $name.info): $name not plotted" >&2
        return 0
    fi
    medians "$csv" "$out/${name}_medians.csv"

    # panels in order of first appearance, the series of each, and the sizes present
    local panels=() panel label lib test modes field i=0 style
    local -A plots=() nferry=() npeer=() files=()
    while IFS='|' read -r panel label lib test modes field; do
        i=$((i + 1))
        series_data "$out/${name}_medians.csv" "$lib" "$test" "$modes" "$field" "$tmp/$fam.$i.dat"
        [[ -s $tmp/$fam.$i.dat ]] || continue
        [[ -n ${plots[$panel]:-} ]] || panels+=("$panel")
        if [[ $lib == ferry ]]; then
            local f=${nferry[$panel]:-0}
            style="lc rgb '${ferry_colours[f % 3]}' lw $((f == 0 ? 3 : 2)) pt 7 ps 1.3"
            ((f == 0)) || style+=" dt 2"
            nferry[$panel]=$((f + 1))
        else
            local p=${npeer[$panel]:-0}
            style="lc rgb '${peer_colours[p % 5]}' lw 2 pt $((5 + 2 * (p % 3))) ps 1.1"
            [[ $label == *"for reference"* ]] && style+=" dt 3"
            npeer[$panel]=$((p + 1))
        fi
        plots[$panel]+="${plots[$panel]:+, }'$tmp/$fam.$i.dat' using 1:2 with linespoints $style title '$label'"
        files[$panel]+=" $tmp/$fam.$i.dat"
    done <<<"${series[$fam]}"
    if [[ ${#panels[@]} -eq 0 ]]; then
        echo "report.sh: $csv holds no series to plot" >&2
        return 0
    fi
    local sizes
    mapfile -t sizes < <(awk -F, 'NR > 1 { print $4 }' "$out/${name}_medians.csv" | sort -nu)

    local ferry commit ucx ompi fab peers load busy title
    ferry=$(info "$inf" ferry)
    commit=$(info "$inf" ferry_commit)
    ucx=$(info "$inf" ucx)
    ompi=$(info "$inf" openmpi)
    fab=$(info "$inf" libfabric)
    peers="UCX ${ucx:-?}"
    [[ $fam == tag ]] && peers+=", Open MPI ${ompi:-?}"
    [[ $fam == tcp ]] && peers+=", libfabric ${fab:-?}"
    load=$(info "$inf" load_start)
    busy=$(info "$inf" cpu_busy_before)
    title="${ferry%% (*}${commit:+ ($commit)}: ${what[$fam]}, beside $peers"
    title+="\\n$(info "$inf" cpu), $(info "$inf" nproc) CPUs, Linux $(info "$inf" kernel)"
    title+="\\n$(info "$inf" date); medians of $(info "$inf" repeat) runs each;"
    title+=" load average at the start ${load:-?} (uptime), CPUs busy ${busy:-?}%"
    # busy: other work had the CPUs in the second before the start (the load average also
    # counts the report's own earlier runs, so it decides only when that was not measured)
    if { [[ -n $busy ]] && awk -v b="$busy" 'BEGIN { exit !(b > 10) }'; } ||
        { [[ -z $busy ]] && awk -v l="${load%% *}" 'BEGIN { exit !(l > 0.5) }'; }; then
        title+=": a busy machine, the figures are noise"
    fi

    local np=${#panels[@]} width
    width=$((np * 640))
    {
        echo "set terminal pngcairo size $width,640 font 'Sans,10' noenhanced"
        echo "set output '$out/$name.png'"
        echo "set logscale xy"
        echo "set autoscale noextend"
        echo "set offsets graph 0.03, graph 0.03, graph 0.06, graph 0.06"
        echo "set xtics $(xtics "${sizes[@]}")"
        echo "set mxtics default"
        echo "set format y '%g'"
        echo "set grid xtics ytics mytics lc rgb '#dddddd'"
        echo "set key Left reverse box opaque samplen 3 spacing 1.1 font 'Sans,9'"
        echo "set xlabel 'message size (bytes)'"
        echo "set multiplot layout 1,$np title \"$title\" font 'Sans,10'"
        for panel in "${panels[@]}"; do
            # the key where the lines are not: latency and bandwidth grow with the size
            if [[ $panel == lat ]]; then echo "set key top left"; else echo "set key bottom right"; fi
            echo "set title '$(panel_title "$panel")'"
            echo "set ylabel '$(panel_ylabel "$panel")'"
            # shellcheck disable=SC2086 # the file names are words
            ytics ${files[$panel]}
            echo "plot ${plots[$panel]}"
        done
        echo "unset multiplot"
    } >"$tmp/$fam.gp"
    gnuplot "$tmp/$fam.gp"
    echo "report.sh: $out/$name.png" >&2
}

for s in $scripts; do
    plot "$s"
done
