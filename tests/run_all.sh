#!/usr/bin/env bash
# The test command: builds and checks everything (meant to stay under 15 minutes on 2 cores).
#
#   bash tests/run_all.sh
#
# Steps (each one passes or fails; a failure does not stop the later steps):
#   build     build/       gcc, -Werror, RelWithDebInfo; the whole ctest suite
#                          (tests labelled perf_sensitive run alone, after the others)
#   asan      build-asan/  AddressSanitizer + UndefinedBehaviorSanitizer; the whole suite
#   tsan      build-tsan/  ThreadSanitizer; the tests labelled threads
#   fuzz      build-fuzz/  clang + libFuzzer; each fuzz target for FERRY_FUZZ_SECONDS (20)
#   consumer  install build/ to a temporary prefix; build tests/consumer with find_package and
#             with pkg-config, and run both
#   docs      build-docs/  the library and its API reference (Doxygen, FERRY_BUILD_DOCS=ON):
#             any Doxygen warning fails (an undocumented public symbol or parameter); install
#             to a temporary prefix and check the man pages (tests/docs/check_man.sh)
#   format    clang-format --dry-run over the sources: fails on any unformatted file
# The last line is the summary: "N passed, N failed, N skipped".
#
# Environment: JOBS (default: nproc), FERRY_FUZZ_SECONDS (default 20),
# FERRY_STEPS (default: all; e.g. FERRY_STEPS="build consumer").

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 1

JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FERRY_FUZZ_SECONDS:-20}
STEPS=${FERRY_STEPS:-"build asan tsan fuzz consumer docs format"}
# These two configure this script, not ferry: ferry warns about FERRY_* names it does not know,
# and tests that count warnings would see them.
unset FERRY_STEPS FERRY_FUZZ_SECONDS

passed=0
failed=0
skipped=0
results=()

# step NAME FUNCTION: run FUNCTION, record pass (0), skip (77) or fail (anything else).
step() {
    local name=$1 fn=$2 rc start
    case " $STEPS " in
    *" $name "*) ;;
    *)
        results+=("skipped  $name (not in FERRY_STEPS)")
        skipped=$((skipped + 1))
        return
        ;;
    esac
    echo
    echo "=================================================================== $name"
    start=$SECONDS
    "$fn"
    rc=$?
    local took="$((SECONDS - start))s"
    if [ "$rc" -eq 0 ]; then
        results+=("passed   $name ($took)")
        passed=$((passed + 1))
    elif [ "$rc" -eq 77 ]; then
        results+=("skipped  $name ($took)")
        skipped=$((skipped + 1))
    else
        results+=("FAILED   $name ($took)")
        failed=$((failed + 1))
    fi
    echo "=================================================================== $name: exit $rc ($took)"
}

# configure_build DIR COMPILER CMAKE_ARGS...: configure and build one tree with that C compiler.
# A tree configured with another compiler is configured afresh (CMake would otherwise drop the
# -D options of the run that changes the compiler).
configure_build() {
    local dir=$1 cc=$2 want have
    shift 2
    want=$(readlink -f "$(command -v "$cc")") || {
        echo "run_all: compiler $cc not found"
        return 1
    }
    if [ -f "$dir/CMakeCache.txt" ]; then
        have=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt")
        have=$(readlink -f "$(command -v "$have" || echo "$have")")
        if [ "$have" != "$want" ]; then
            echo "run_all: $dir was configured with $have, not $want: configuring afresh"
            rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
        fi
    fi
    CC=$cc cmake -S "$ROOT" -B "$dir" "$@" || return 1
    cmake --build "$dir" -j "$JOBS" || return 1
}

# tests_count DIR [CTEST_ARGS...]: how many tests ctest would run.
tests_count() {
    local dir=$1
    shift
    ctest --test-dir "$dir" -N "$@" 2>/dev/null | sed -n 's/^Total Tests: \([0-9]*\)$/\1/p'
}

# run_suite DIR: the whole suite, perf_sensitive tests alone at the end.
run_suite() {
    local dir=$1 rc=0 total
    total=$(tests_count "$dir")
    if [ "${total:-0}" -eq 0 ]; then
        echo "run_all: no test is registered in $dir (tests/unit/tests.cmake, tests/mp/tests.cmake)"
        return 1
    fi
    ctest --test-dir "$dir" --output-on-failure --no-tests=ignore -j "$JOBS" -LE perf_sensitive || rc=1
    ctest --test-dir "$dir" --output-on-failure --no-tests=ignore -j 1 -L perf_sensitive || rc=1
    return $rc
}

# Every option is given, so that what an earlier hand-made configure left in a cache does not
# change what this script checks. The API reference is built and checked by the docs step
# only (a documentation warning there does not stop the test suites).
ALL_PARTS=(-DFERRY_BUILD_TESTS=ON -DFERRY_BUILD_TOOLS=ON -DFERRY_BUILD_EXAMPLES=ON -DFERRY_FUZZ=OFF
    -DFERRY_BUILD_DOCS=OFF)

step_build() {
    configure_build build gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_WERROR=ON \
        -DFERRY_SANITIZE= "${ALL_PARTS[@]}" || return 1
    run_suite build
}

# Sanitizer builds: -O1 -g with assertions on.
SAN_FLAGS=(-DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DFERRY_WERROR=OFF "${ALL_PARTS[@]}")

step_asan() {
    configure_build build-asan gcc "${SAN_FLAGS[@]}" -DFERRY_SANITIZE=address,undefined || return 1
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_suite build-asan
}

step_tsan() {
    configure_build build-tsan gcc "${SAN_FLAGS[@]}" -DFERRY_SANITIZE=thread || return 1
    local count
    count=$(tests_count build-tsan -L threads)
    if [ "${count:-0}" -eq 0 ]; then
        echo "run_all: no test carries the label 'threads': nothing to run under ThreadSanitizer"
        return 77
    fi
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        ctest --test-dir build-tsan --output-on-failure -j "$JOBS" -L threads
}

step_fuzz() {
    if ! command -v clang >/dev/null; then
        echo "run_all: clang is not installed (apt-get install clang libclang-rt-14-dev)"
        return 1
    fi
    configure_build build-fuzz clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_WERROR=OFF \
        -DFERRY_SANITIZE= -DFERRY_FUZZ=ON -DFERRY_FUZZ_SECONDS="$FUZZ_SECONDS" \
        -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_TOOLS=OFF -DFERRY_BUILD_EXAMPLES=OFF \
        -DFERRY_BUILD_DOCS=OFF || return 1
    local count
    count=$(tests_count build-fuzz -L fuzz)
    if [ "${count:-0}" -eq 0 ]; then
        echo "run_all: no fuzz target (tests/fuzz/*.c)"
        return 77
    fi
    ctest --test-dir build-fuzz --output-on-failure -j "$JOBS" -L fuzz
}

step_consumer() {
    if [ ! -f build/CMakeCache.txt ]; then
        echo "run_all: build/ is not configured (the build step did not run)"
        return 1
    fi
    cmake --build build -j "$JOBS" || return 1
    local tmp rc=0
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-consumer.XXXXXX") || return 1
    (
        set -e
        cmake --install build --prefix "$tmp/prefix"
        echo "--- find_package(ferry) and pkg-config, through CMake"
        cmake -S tests/consumer -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix"
        cmake --build "$tmp/build"
        "$tmp/build/consumer"
        "$tmp/build/consumer_pc"
        "$tmp/build/consumer_bootstrap"
        "$tmp/build/consumer_bootstrap_pc"
        # ferry.pc carries no rpath (README, "Using an installed ferry"): a program built with
        # it against a prefix outside the loader's path finds libferry.so through
        # LD_LIBRARY_PATH, or through the rpath its own link line adds. Both ways are run.
        echo "--- cc \$(pkg-config --cflags --libs ferry), run with LD_LIBRARY_PATH"
        pcdir=$(dirname "$(find "$tmp/prefix" -name ferry.pc | head -n 1)")
        libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir ferry)
        # shellcheck disable=SC2046 # the flags are words
        cc -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_cc" tests/consumer/consumer.c \
            $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs ferry)
        LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/consumer_cc"
        echo "--- cc \$(pkg-config --cflags --libs ferry) -Wl,-rpath,<libdir>, run without LD_LIBRARY_PATH"
        # shellcheck disable=SC2046 # the flags are words
        cc -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_cc_rpath" tests/consumer/consumer.c \
            $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs ferry) -Wl,-rpath,"$libdir"
        env -u LD_LIBRARY_PATH "$tmp/consumer_cc_rpath"
        echo "--- cc \$(pkg-config --cflags --libs ferry-bootstrap)"
        # shellcheck disable=SC2046 # the flags are words
        cc -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer_bootstrap_cc" \
            tests/consumer/consumer_bootstrap.c \
            $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs ferry-bootstrap)
        LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/consumer_bootstrap_cc"
    )
    # not "( ... ) || rc=1": bash ignores set -e inside a subshell on the left of ||, and every
    # command but the last could fail unnoticed (the consumer's find_package did, for a while)
    rc=$?
    rm -rf "$tmp"
    return $rc
}

# The API reference: Doxygen fails the build on any warning (docs/api/Doxyfile.in); the
# installed man pages are then checked against the public headers.
step_docs() {
    if ! command -v doxygen >/dev/null; then
        echo "run_all: doxygen is not installed (apt-get install doxygen)"
        return 1
    fi
    configure_build build-docs gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFERRY_WERROR=ON \
        -DFERRY_SANITIZE= -DFERRY_FUZZ=OFF -DFERRY_BUILD_DOCS=ON -DFERRY_BUILD_TESTS=OFF \
        -DFERRY_BUILD_TOOLS=OFF -DFERRY_BUILD_EXAMPLES=OFF || return 1
    local tmp rc=0
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-docs.XXXXXX") || return 1
    cmake --install build-docs --prefix "$tmp/prefix" >/dev/null || rc=1
    if [ "$rc" -eq 0 ]; then
        bash tests/docs/check_man.sh "$tmp/prefix" || rc=1
    fi
    rm -rf "$tmp"
    return $rc
}

step_format() {
    if ! command -v clang-format >/dev/null; then
        echo "run_all: clang-format is not installed: format not checked"
        return 77
    fi
    local f bad=()
    while IFS= read -r -d '' f; do
        clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
    done < <(find include src tools examples tests ofi -type f \( -name '*.c' -o -name '*.h' \) -print0 |
        sort -z)
    if [ ${#bad[@]} -gt 0 ]; then
        echo "run_all: ${#bad[@]} file(s) not clang-formatted (fix with clang-format -i):"
        printf '  %s\n' "${bad[@]}"
        return 1
    fi
    echo "run_all: all sources are clang-formatted"
    return 0
}

step build step_build
step asan step_asan
step tsan step_tsan
step fuzz step_fuzz
step consumer step_consumer
step docs step_docs
step format step_format

echo
echo "=================================================================== summary"
printf '  %s\n' "${results[@]}"
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
