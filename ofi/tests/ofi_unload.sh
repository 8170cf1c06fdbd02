#!/usr/bin/env bash
# The provider frees ferry's process-lifetime state when libfabric dlcloses it (at exit, in
# fi_fini): ofi_unload (a domain opened and closed) under valgrind, whose leak check runs after
# the destructors; a "definitely lost" block fails. Exits 77 without valgrind.
#   ofi_unload.sh PROGRAM
set -uo pipefail
program=${1:?usage: ofi_unload.sh PROGRAM}
command -v valgrind >/dev/null || {
    echo "skipped: valgrind is not installed (apt-get install valgrind)"
    exit 77
}
valgrind --quiet --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
    --error-exitcode=99 "$program"
rc=$?
case $rc in
0) echo "ofi_unload: no block lost when the provider is unloaded" ;;
99) echo "ofi_unload: FAIL: valgrind found blocks lost (above) when the provider is unloaded" ;;
esac
exit $rc
