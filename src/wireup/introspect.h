/* The public introspection API (include/ferry/info.h): helpers shared by its files
 *   introspect.c         transports, worker facts, addresses decoded, the endpoint choice
 *   introspect_config.c  configuration variables */
#ifndef FY_WIREUP_INTROSPECT_H
#define FY_WIREUP_INTROSPECT_H

#include <stdbool.h>
#include <stddef.h>

/* Is the caller's structure usable: not NULL, and its size member (the first, a size_t) at
 * least min_size, the size of the structure's first version? Logs a warning naming call and
 * type when not. */
bool fy_info_struct_ok(const char *call, const char *type, const void *info, size_t min_size);

/* Hand a structure the library filled (full_size bytes, this library's version) to the caller:
 * the caller's size member says how many bytes it has; members beyond full_size are zeroed,
 * and the size member keeps the caller's value. */
void fy_info_copy_out(void *info, void *filled, size_t full_size);

#endif
