#!/usr/bin/env bash
# The sample outputs of docs/ferry_info.md, from the built tool.
#
#   bash docs/gen_ferry_info.sh FERRY_INFO [DOC]           write them into DOC
#   bash docs/gen_ferry_info.sh --check FERRY_INFO [DOC]   fail when DOC no longer matches
#
# FERRY_INFO is the built tool (build/tools/ferry_info); DOC defaults to the ferry_info.md next
# to this script. DOC holds one block per sample, between the lines
#     <!-- generated: NAME (docs/gen_ferry_info.sh) -->
#     <!-- end generated -->
# and NAME is one of the samples below (SAMPLES: the options and environment of each run).
# Every run happens in an empty directory with an environment of its own (env -i: PATH, the
# library path and the sanitizer options pass through; FERRY_LOG_LEVEL=error), so a developer's
# FERRY_* settings never reach the samples.
#
# --check (ctest docs_ferry_info) compares the blocks with fresh output after replacing in
# both what differs from machine to machine and run to run: worker ids, pids, uids, boot ids,
# namespace inodes, tcp ports and interface addresses, byte lengths of addresses and records
# (their tcp part holds one entry per interface address), the compiler and build options,
# the bootstrap methods built, the version, whether cross-memory attach works here, and the
# interfaces tcp chose. Everything else (transports, capabilities, sizes, the shm region,
# configuration variables with their defaults and descriptions, the wording) must match: a
# change there fails the check until the samples are regenerated with this script.
set -euo pipefail

usage() {
    echo "usage: bash $0 [--check] FERRY_INFO [DOC]" >&2
    exit 2
}

check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    usage
fi
tool=$(readlink -f "$1")
doc=${2:-$(dirname "$(readlink -f "$0")")/ferry_info.md}
[ -x "$tool" ] || {
    echo "gen_ferry_info: $1 is not an executable (build the tool first)" >&2
    exit 1
}
[ -f "$doc" ] || {
    echo "gen_ferry_info: no $doc" >&2
    exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-info-doc.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The samples, in the order they run: NAME|LANGUAGE|ENVIRONMENT (space-separated VAR=value)|
# OPTIONS. "a" writes the address that "e" and "json_e" read from another process.
SAMPLES=(
    "v|text||-v"
    "d|text||-d"
    "c|text|FERRY_LOG_LEVL=debug|-c"
    "a|text||-a a.addr"
    "e|text||-e a.addr"
    "json_d|json||--json -v -d"
    "json_e|json||--json -e a.addr"
)

# run NAME ENVIRONMENT OPTIONS: the tool's stdout into $work/NAME.out; stderr and a failing
# exit status are reported (a sample must succeed quietly).
run() {
    local name=$1 environment=$2 options=$3 rc=0
    local -a env_args=("PATH=$PATH" "FERRY_LOG_LEVEL=error")
    local var
    for var in LD_LIBRARY_PATH ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
        if [ -n "${!var:-}" ]; then
            env_args+=("$var=${!var}")
        fi
    done
    # shellcheck disable=SC2206 # the environment and the options are words
    env_args+=($environment)
    # shellcheck disable=SC2086 # the options are words
    (cd "$work" && env -i "${env_args[@]}" "$tool" $options >"$work/$name.out" 2>"$work/$name.err") ||
        rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$work/$name.err" ]; then
        echo "gen_ferry_info: ferry_info $options (sample $name) exited $rc:" >&2
        cat "$work/$name.err" >&2
        [ "$rc" -eq 0 ] || exit 1
    fi
}

# The machine- and run-specific values, replaced by placeholders (see the header).
normalise() {
    LC_ALL=C sed -E \
        -e 's/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/<boot-id>/g' \
        -e 's/\b[0-9a-f]{16}\b/<id>/g' \
        -e 's/\b(pid|uid) [0-9]+/\1 <\1>/g' \
        -e 's/"(pid|uid)": [0-9]+/"\1": <\1>/g' \
        -e 's/\b(net|pid|user) (ns|namespace:?) +[0-9]+/\1 \2 <ns>/g' \
        -e 's/"(net|pid|user)_ns": [0-9]+/"\1_ns": <ns>/g' \
        -e 's/(address|here) [0-9]{6,}/\1 <ns>/g' \
        -e 's/"(address|here)": "[0-9]{6,}"/"\1": "<ns>"/g' \
        -e 's/\bport [0-9]+/port <port>/g' \
        -e 's/"port": [0-9]+/"port": <port>/g' \
        -e '/port|addresses/s/\b[0-9]{1,3}(\.[0-9]{1,3}){3}\b/<ip>/g' \
        -e '/port|addresses/s/(^|[^0-9a-zA-Z_:])[0-9a-f]{0,4}(:[0-9a-f]{0,4}){2,7}/\1<ip>/g' \
        -e 's/<ip>((, | )<ip>)+/<ip>/g' \
        -e 's/\b[0-9]+(-byte address| bytes, version)/<n>\1/g' \
        -e 's/(address of|record of|id [0-9]+,) [0-9]+ bytes/\1 <n> bytes/g' \
        -e 's/"(length|address_length|record_length)": [0-9]+/"\1": <n>/g' \
        -e 's/compiler: [^,"]*/compiler: <compiler>/g' \
        -e 's/build type: [^,"]*/build type: <type>/g' \
        -e 's/sanitizers: [^"]*(, pmix: )/sanitizers: <sanitizers>\1/g' \
        -e 's/pmix: [^"]*/pmix: <pmix>/g' \
        -e 's/(\(libferry_bootstrap\): ).*/\1<methods>/' \
        -e 's/"bootstrap_methods": "[^"]*"/"bootstrap_methods": "<methods>"/' \
        -e 's/[0-9]+\.[0-9]+\.[0-9]+/<version>/g' \
        -e 's/cross-memory attach (usable|NOT usable)[^"]*/cross-memory attach <state>/g' \
        -e 's/— [^;]*;/— <interfaces>;/g'
}

# The block NAME of the document, without its fences.
doc_block() {
    awk -v name="$1" '
        $0 ~ "^<!-- generated: " name " " { inside = 1; next }
        inside && /^<!-- end generated -->/ { inside = 0; exit }
        inside && !/^```/ { print }
    ' "$doc"
}

for sample in "${SAMPLES[@]}"; do
    IFS='|' read -r name _ environment options <<<"$sample"
    run "$name" "$environment" "$options"
done

if [ "$check" -eq 1 ]; then
    failed=()
    for sample in "${SAMPLES[@]}"; do
        IFS='|' read -r name _ _ options <<<"$sample"
        if ! grep -q "^<!-- generated: $name " "$doc"; then
            echo "gen_ferry_info: $doc has no block '$name' (ferry_info $options)" >&2
            failed+=("$name")
            continue
        fi
        doc_block "$name" | normalise >"$work/$name.doc"
        normalise <"$work/$name.out" >"$work/$name.now"
        if ! diff -u --label "$name in $(basename "$doc")" --label "ferry_info $options now" \
            "$work/$name.doc" "$work/$name.now" >"$work/$name.diff"; then
            cat "$work/$name.diff"
            failed+=("$name")
        fi
    done
    if [ ${#failed[@]} -gt 0 ]; then
        echo "gen_ferry_info: $(basename "$doc") does not match what the tool prints" \
            "(samples: ${failed[*]}; machine-specific values aside). If the change is meant," \
            "regenerate: bash docs/gen_ferry_info.sh build/tools/ferry_info" >&2
        exit 1
    fi
    echo "gen_ferry_info: the ${#SAMPLES[@]} samples of $(basename "$doc") match ferry_info"
    exit 0
fi

# Write: each block replaced by its fresh output, in its fence.
for sample in "${SAMPLES[@]}"; do
    IFS='|' read -r name language _ _ <<<"$sample"
    grep -q "^<!-- generated: $name " "$doc" || {
        echo "gen_ferry_info: $doc has no block '$name': add its two marker lines" >&2
        exit 1
    }
    awk -v name="$name" -v language="$language" -v out="$work/$name.out" '
        $0 ~ "^<!-- generated: " name " " {
            print
            print "```" language
            while ((getline line < out) > 0)
                print line
            print "```"
            skip = 1
            next
        }
        skip && /^<!-- end generated -->/ { skip = 0 }
        !skip { print }
    ' "$doc" >"$work/doc.new"
    cat "$work/doc.new" >"$doc"
done
echo "gen_ferry_info: wrote ${#SAMPLES[@]} samples into $doc"
