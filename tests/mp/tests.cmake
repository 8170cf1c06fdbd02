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
# put/get between two processes, every byte checked at both ends: registered (malloc'ed and
# multi-piece) and ferry_mem_alloc memory, sizes 0 .. 256 MiB, iov shapes; the second run forces
# the fallback (the target's progress performs the accesses to registered memory)
ferry_add_test(NAME mp_rma_putget SOURCES mp/mp_rma_putget.c TIMEOUT 180)
ferry_add_test(NAME mp_rma_putget_nocma SOURCES mp/mp_rma_putget.c TIMEOUT 180
               ENV FERRY_SHM_CMA=off)
# remote atomics: two hammers and the owner, on mapped (CPU atomics) and on registered memory
# (target-executed); fetch-add 64/32, post ops, swap, a CSWAP lock, mixed with the owner's own
ferry_add_test(NAME mp_rma_atomic SOURCES mp/mp_rma_atomic.c TIMEOUT 60)
# tagged messages between two processes, every byte checked: sizes on both sides of the eager
# threshold up to 64 MiB, posted and unexpected, truncation, cancel, probe + message_recv, iov
# shapes; then the same under each forced rendezvous mode
ferry_add_test(NAME mp_tag_basic SOURCES mp/mp_tag_basic.c TIMEOUT 120)
foreach(mode get put coop null)
    ferry_add_test(NAME mp_tag_basic_${mode} SOURCES mp/mp_tag_basic.c TIMEOUT 120
                   ENV FERRY_RNDV_MODE=${mode})
endforeach()
# bad one-sided input between processes (keys truncated, corrupted, forged, deregistered, used
# up; ranges past the end and overflowing; access not granted; misaligned atomics; keys of
# another peer): a clear status, nothing touched, the endpoints still work; on both paths
ferry_add_test(NAME mp_rma_bad SOURCES mp/mp_rma_bad.c TIMEOUT 60)
ferry_add_test(NAME mp_rma_bad_nocma SOURCES mp/mp_rma_bad.c TIMEOUT 60 ENV FERRY_SHM_CMA=off)
# Named segments (mp_seg_*). life: the whole life cycle with 4 importers (3 CONNECTs, NOTIFYs and
# DISCONNECTs; set_unavailable refuses the 4th; remove while connected keeps the data for the
# connected peers, then frees it: INTERNAL reads the context's registration slots), the state
# machine's illegal steps and the local bad input
ferry_add_test(NAME mp_seg_life SOURCES mp/mp_seg_life.c INTERNAL TIMEOUT 60)
# dma: transfer queues of 1 B .. 256 MiB and a 1 000-entry scatter list, written and read back,
# every byte checked by both sides, on mapped (ferry_mem_alloc) and registered memory; bad
# entries, abort, busy; _nocma: registered memory through the owner's progress
ferry_add_test(NAME mp_seg_dma SOURCES mp/mp_seg_dma.c TIMEOUT 180)
ferry_add_test(NAME mp_seg_dma_nocma SOURCES mp/mp_seg_dma.c TIMEOUT 180 ENV FERRY_SHM_CMA=off)
# death: connect timeouts (synchronous and asynchronous: the owner does not progress, then sees
# the late connects come and go), an asynchronous connect with a callback, and the owner
# SIGKILLed: LOST within 1 s, every later operation fails, the mapped memory stays readable
ferry_add_test(NAME mp_seg_death SOURCES mp/mp_seg_death.c TIMEOUT 60)
