#!/usr/bin/env bash
# Check the API reference installed under a prefix (cmake --install BUILD --prefix PREFIX of a
# build with the docs on):
#   - every function the installed headers declare is exported by libferry.so or
#     libferry_bootstrap.so and has a man page that `man -M PREFIX/share/man -w NAME` finds
#     under PREFIX;
#   - `man ferry_tag_send` shows that function's documentation (its parameters and statuses);
#   - only ferry_* / FERRY_* pages are installed (no generic names such as count.3);
#   - the HTML reference is there.
#
#   bash tests/docs/check_man.sh PREFIX
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 PREFIX" >&2
    exit 2
fi
prefix=$1
mandir=$prefix/share/man
for tool in man nm; do
    if ! command -v "$tool" >/dev/null; then
        echo "check_man: $tool is not installed (apt-get install man-db binutils)" >&2
        exit 1
    fi
done

fail=0
libs=()
for name in libferry.so libferry_bootstrap.so; do
    lib=$(find "$prefix" -name "$name" -print -quit)
    if [ -z "$lib" ]; then
        echo "check_man: no $name under $prefix" >&2
        exit 1
    fi
    libs+=("$lib")
done

# The public functions: those declared in the installed headers (a declaration starts at the
# beginning of a line; comments and function-pointer typedefs do not match).
mapfile -t symbols < <(sed -n 's/^[a-z][^(]*[ *]\(ferry_[a-z0-9_]*\)(.*/\1/p' \
    "$prefix"/include/ferry/*.h | sort -u)
if [ ${#symbols[@]} -lt 20 ]; then
    echo "check_man: only ${#symbols[@]} functions declared in $prefix/include/ferry" >&2
    exit 1
fi
mapfile -t exported < <(nm -D --defined-only "${libs[@]}" | awk '$2 == "T" { print $3 }' | sort -u)
missing=()
for sym in "${symbols[@]}"; do
    if ! printf '%s\n' "${exported[@]}" | grep -qx -- "$sym"; then
        echo "check_man: $sym is declared in a public header but not exported" >&2
        fail=1
    fi
    page=$(man -M "$mandir" -w "$sym" 2>/dev/null) || page=
    case "$page" in
    "$mandir"/man3/*) ;;
    *) missing+=("$sym") ;;
    esac
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "check_man: ${#missing[@]} public function(s) without a man page in $mandir:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    fail=1
fi
echo "check_man: ${#symbols[@]} public functions, $((${#symbols[@]} - ${#missing[@]})) with a man page"

# The page itself: man follows the link page (.so) to the group's page.
echo "check_man: man -M $mandir -w ferry_tag_send: $(man -M "$mandir" -w ferry_tag_send)"
text=$(MANWIDTH=100 man -M "$mandir" -P cat ferry_tag_send 2>/dev/null | col -b) || text=
for want in "ferry_tag_send (ferry_ep_t" "Parameters" "Return values" "FERRY_ERR_NO_RESOURCE"; do
    if ! grep -qF -- "$want" <<<"$text"; then
        echo "check_man: 'man ferry_tag_send' does not show '$want'" >&2
        fail=1
    fi
done

mapfile -t stray < <(find "$mandir" -type f ! -name 'ferry*' ! -name 'FERRY*')
if [ ${#stray[@]} -gt 0 ]; then
    echo "check_man: pages that are not ferry's installed:" >&2
    printf '  %s\n' "${stray[@]}" >&2
    fail=1
fi

html=$(find "$prefix/share/doc" -path '*/html/index.html' -print -quit 2>/dev/null || true)
if [ -z "$html" ]; then
    echo "check_man: no html/index.html under $prefix/share/doc" >&2
    fail=1
else
    echo "check_man: HTML reference: $html"
fi

[ "$fail" -eq 0 ] && echo "check_man: OK"
exit "$fail"
