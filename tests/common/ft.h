/* All the multi-process test helpers (one header per idea, see each for details):
 *   ft_check.h     FT_CHECK, failing and skipping, notes, watchdog, clock
 *   ft_peer.h      forking peers with a role function, reaping with a timeout, SIGKILL
 *   ft_chan.h      messages between the test's processes (addresses, tokens, results)
 *   ft_progress.h  progress/wait loops until a condition, with a deadline
 *   ft_pattern.h   byte patterns seeded by (sender, seq, size), checked to the byte
 *   ft_files.h     nothing left in /dev/shm or /tmp, nothing mapped from there
 *   ft_capture.h   capturing stderr to count ferry's log lines
 *   ft_ferry.h     context/worker/endpoint set-up and sends with retries
 *   ft_echo.h      an echo peer: "does this process still work with others?" */
#ifndef FT_H
#define FT_H

#include "ft_capture.h"
#include "ft_chan.h"
#include "ft_check.h"
#include "ft_echo.h"
#include "ft_ferry.h"
#include "ft_files.h"
#include "ft_pattern.h"
#include "ft_peer.h"
#include "ft_progress.h"

#endif
