# Unit tests: one ferry_add_test() per test (see tests/CMakeLists.txt for the options), e.g.
#   ferry_add_test(NAME test_status SOURCES unit/test_status.c INTERNAL)
# Paths are relative to tests/.

# src/core
ferry_add_test(NAME test_status SOURCES unit/test_status.c
               ENV FERRY_STATUS_HEADER=${PROJECT_SOURCE_DIR}/include/ferry/status.h)
ferry_add_test(NAME test_log SOURCES unit/test_log.c INTERNAL LABELS threads)
ferry_add_test(NAME test_config SOURCES unit/test_config.c INTERNAL LABELS threads)
ferry_add_test(NAME test_list SOURCES unit/test_list.c INTERNAL)
ferry_add_test(NAME test_pool SOURCES unit/test_pool.c INTERNAL)
# the copy routines of the direct one-sided path, each forced in turn, every byte checked
ferry_add_test(NAME test_copy_bulk SOURCES unit/test_copy_bulk.c INTERNAL)

# src/wireup
ferry_add_test(NAME test_address SOURCES unit/test_address.c INTERNAL)
ferry_add_test(NAME test_rkey SOURCES unit/test_rkey.c INTERNAL)

# include/ferry/info.h, through the public headers (libferry.so and libferry_bootstrap.so, as
# an application links them); one variable set in the environment, read back
ferry_add_test(NAME test_info SOURCES unit/test_info.c LIBS ferry_bootstrap
               ENV FERRY_WAIT_SPIN_US=7k)
