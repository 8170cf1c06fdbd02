# Multi-process tests: one ferry_add_test() per test (see tests/CMakeLists.txt for the options);
# they fork/exec real peers and check every byte, e.g.
#   ferry_add_test(NAME mp_am_pingpong SOURCES mp/mp_am_pingpong.c TIMEOUT 120 LABELS threads)
# Paths are relative to tests/.
