# Multi-process tests: one ferry_add_test() per test (see tests/CMakeLists.txt for the options);
# they fork real peers (tests/common/ft_peer.h) and check every byte. Paths are relative to
# tests/. Each test also arms a watchdog (ft_watchdog) 5 s under its TIMEOUT, which names the
# hang and kills the test's peers.

ferry_add_test(NAME mp_am_pingpong SOURCES mp/mp_am_pingpong.c TIMEOUT 60)
# the same ping-pong, one worker to itself over the self transport
ferry_add_test(NAME am_self SOURCES mp/mp_am_pingpong.c ARGS self TIMEOUT 60
               ENV FERRY_TRANSPORTS=self)
ferry_add_test(NAME mp_am_flood SOURCES mp/mp_am_flood.c TIMEOUT 120)
ferry_add_test(NAME mp_am_backpressure SOURCES mp/mp_am_backpressure.c TIMEOUT 60)
# measures an idle waiter's CPU time and its wake-up: run alone
ferry_add_test(NAME mp_am_wait SOURCES mp/mp_am_wait.c TIMEOUT 60 LABELS perf_sensitive)
ferry_add_test(NAME mp_peer_death SOURCES mp/mp_peer_death.c TIMEOUT 60)
ferry_add_test(NAME mp_bad_input SOURCES mp/mp_bad_input.c TIMEOUT 60)
# INTERNAL: forges the uid in an address, and sends a hand-made handshake
ferry_add_test(NAME mp_other_uid SOURCES mp/mp_other_uid.c INTERNAL TIMEOUT 60)
ferry_add_test(NAME mp_close SOURCES mp/mp_close.c TIMEOUT 60)
# one-sided operations of a worker on itself (self transport: the target-executed protocol);
# INTERNAL: also sends hand-made protocol messages
ferry_add_test(NAME mp_rma_self SOURCES mp/mp_rma_self.c INTERNAL TIMEOUT 60)
