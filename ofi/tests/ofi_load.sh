#!/usr/bin/env bash
# libferry-fi.so as libfabric sees it: it loads with nothing else to find (ldd), exports only
# fi_prov_ini (ferry inside stays hidden), and fi_info -p ferry lists the provider with its
# attributes. libfabric ignores a provider whose dlopen fails without a word, hence the
# checks before fi_info.
#   ofi_load.sh PROVIDER_DIR
set -uo pipefail
dir=${1:?usage: ofi_load.sh PROVIDER_DIR}
so=$dir/libferry-fi.so
fail() {
    echo "ofi_load: FAIL: $*"
    exit 1
}
command -v fi_info >/dev/null || {
    echo "skipped: fi_info is not installed (apt-get install libfabric-bin)"
    exit 77
}
[ -f "$so" ] || fail "$so is missing"
if ldd "$so" | grep -q 'not found'; then
    ldd "$so"
    fail "$so needs libraries that are not found"
fi
ldd "$so" | grep -q libferry && fail "$so depends on libferry.so: ferry must be linked in statically"
exports=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort | tr '\n' ' ')
[ "$exports" = "fi_prov_ini " ] || fail "$so exports [$exports], not only fi_prov_ini"
export FI_PROVIDER_PATH=$dir
fi_info -l | grep -q '^ferry:' || fail "fi_info -l does not list ferry"
out=$(fi_info -p ferry -v) || fail "fi_info -p ferry failed"
for want in 'prov_name: ferry' 'type: FI_EP_RDM' 'name: ferry' 'inject_size: 128' \
    'mem_tag_format: 0x7fffffffffffffff' 'cq_data_size: 8' 'FI_TAGGED' 'FI_DIRECTED_RECV' \
    'FI_RMA' 'FI_ATOMIC' 'src_addrlen: 64'; do
    grep -q -- "$want" <<<"$out" || fail "fi_info -p ferry -v has no '$want'"
done
# hints it cannot meet: fi_info prints nothing and fails
if fi_info -p ferry -t FI_EP_MSG >/dev/null 2>&1; then
    fail "fi_info -p ferry -t FI_EP_MSG found an info"
fi
echo "ofi_load: $so loads, exports fi_prov_ini only, fi_info lists it"
