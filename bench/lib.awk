# Shared by the bench/compare_*.sh reports (awk -f bench/lib.awk -f PROGRAM): every figure is
# collected per key with add() and reported as the median of its runs.
# median(key): the median of the values added under key ("" when none)
# fmt(v, f): v printed with format f, or "-" when empty; ratio(a, b): a / b to 2 places, or "-"
# human(s): a byte count as 8, 4K, 1M
# overlap(a, b): whether the runs under keys a and b overlap (the highest of a's reaches the
# lowest of b's): a median below b's that the spread of runs cannot tell from a tie
function median(key,   n, i, j, t, a) {
    if (vals[key] == "") return ""
    n = split(vals[key], a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { if (v != "") vals[key] = vals[key] (vals[key] == "" ? "" : " ") v }
function fmt(v, f) { return v == "" ? "-" : sprintf(f, v) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "-" : sprintf("%.2f", a / b) }
function human(s) { return s >= 1048576 ? (s / 1048576) "M" : s >= 1024 ? (s / 1024) "K" : s }
function overlap(a, b,   na, nb, x, y, i, hi, lo) {
    if (vals[a] == "" || vals[b] == "") return 0
    na = split(vals[a], x, " "); nb = split(vals[b], y, " ")
    hi = x[1] + 0; for (i = 2; i <= na; i++) if (x[i] + 0 > hi) hi = x[i] + 0
    lo = y[1] + 0; for (i = 2; i <= nb; i++) if (y[i] + 0 < lo) lo = y[i] + 0
    return hi >= lo
}
