/* Capturing this process's stderr (fd 2) to count ferry's log lines, e.g. "one warning per
 * dropped AM id". Everything written is still echoed to the real stderr at once (a helper
 * process tees it), so sanitizer reports and ctest's error-line check see it all.
 * Do not spawn peers while capturing. */
#ifndef FT_CAPTURE_H
#define FT_CAPTURE_H

#include <stddef.h>

void ft_capture_begin(void);

/* What was captured so far (may lag the writes by a moment: poll it with a deadline).
 * Returns a malloc'ed, NUL-terminated string. */
char *ft_capture_text(void);

/* Restore fd 2 and return everything captured (malloc'ed). */
char *ft_capture_end(void);

/* Failure path: restore fd 2 if a capture is active (called by ft_fail). */
void ft_capture_abort(void);

/* Occurrences of needle in text. */
size_t ft_count(const char *text, const char *needle);

#endif
