/* ferry_info: what ferry sees on this host — version and build, transports and their
 * capabilities, configuration variables, and why an endpoint to a given worker address would
 * use one transport or none. The output is described in docs/ferry_info.md.
 *
 *   ferry_info [-v] [-d] [-c] [-s NAME=value]... [-a FILE [--compact]] [-e ADDRESS_FILE]
 *              [--json]
 *
 * With no option: -v -d. Exit status: 0 done, 1 something asked could not be done (or -e found
 * the address invalid or unreachable), 2 bad usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ferry/bootstrap.h>
#include <ferry/ferry.h>
#include <ferry/info.h>

#include "info.h"

static const char info_usage_short[] =
    "usage: ferry_info [-v] [-d] [-c] [-x] [-s NAME=value]... [-a FILE [--compact]] "
    "[-e ADDRESS_FILE] [--json] (ferry_info --help explains)\n";

static const char info_usage[] =
    "Usage: ferry_info [-v] [-d] [-c] [-x] [-s NAME=value]... [-a FILE [--compact]]\n"
    "                  [-e ADDRESS_FILE] [--json]\n"
    "Show what ferry sees on this host (with no option: -v -d).\n"
    "  -v               version and build options\n"
    "  -d               transports: capabilities, why one is unusable, per-worker facts\n"
    "  -c               configuration variables: type, default, value in effect, meaning\n"
    "  -x               counters: tagged messages of 8 B, 64 KiB and 4 MiB between two workers\n"
    "                   of this process, then both workers' counters (transport, mode taken)\n"
    "  -s NAME=value    a setting of this process's context (ferry_context_params_t.config; it\n"
    "                   wins over the environment); -c then shows that context's values\n"
    "  -a FILE          write the address of a worker of this process to FILE\n"
    "  --compact        -a writes the compact address (FERRY_ADDRESS_COMPACT_SIZE bytes)\n"
    "  -e ADDRESS_FILE  which transport an endpoint to that worker address (full or compact)\n"
    "                   would use, and why (with -a on the same file: this very worker)\n"
    "  --json           print everything as one JSON object\n"
    "  -h, --help       this text\n"
    "Exit status: 0 done; 1 something asked could not be done, or -e found the address\n"
    "invalid or unreachable; 2 bad usage.\n";

/* ---------------------------------------------------------------- shared context and worker */

ferry_context_t *info_context(info_t *info, ferry_status_t *status_p)
{
    if (!info->context_tried) {
        info->context_tried = true;
        ferry_context_params_t params = {.config = info->settings};
        info->context_status = ferry_context_create(&params, &info->context);
        if (info->context_status != FERRY_OK)
            info->context = NULL;
    }
    if (status_p != NULL)
        *status_p = info->context_status;
    return info->context;
}

ferry_worker_t *info_worker(info_t *info, ferry_status_t *status_p)
{
    ferry_status_t status;
    ferry_context_t *context = info_context(info, &status);

    if (context == NULL) {
        if (status_p != NULL)
            *status_p = status;
        return NULL;
    }
    if (!info->worker_tried) {
        info->worker_tried = true;
        info->worker_status = ferry_worker_create(context, NULL, &info->worker);
        if (info->worker_status != FERRY_OK)
            info->worker = NULL;
    }
    if (status_p != NULL)
        *status_p = info->worker_status;
    return info->worker;
}

static void info_cleanup(info_t *info)
{
    ferry_worker_destroy(info->worker);
    info->worker = NULL;
    ferry_context_destroy(info->context);
    info->context = NULL;
}

bool info_worker_address(info_t *info, const void **address_p, size_t *length_p,
                         ferry_address_info_t *decoded)
{
    ferry_worker_t *worker = info_worker(info, NULL);

    if (worker == NULL)
        return false;
    if (info->compact) {
        if (ferry_worker_address_compact(worker, info->compact_address) != FERRY_OK)
            return false;
        *address_p = info->compact_address;
        *length_p = sizeof(info->compact_address);
    } else if (ferry_worker_address(worker, address_p, length_p) != FERRY_OK) {
        return false;
    }
    *decoded = (ferry_address_info_t){.size = sizeof(*decoded)};
    return ferry_address_decode(*address_p, *length_p, decoded) == FERRY_OK;
}

/* ---------------------------------------------------------------- helpers */

const char *info_transports_setting(void)
{
    static ferry_config_info_t var;
    var.size = sizeof(var);
    if (ferry_config_lookup("FERRY_TRANSPORTS", &var) == FERRY_OK)
        return var.value;
    const char *value = getenv("FERRY_TRANSPORTS");
    return value != NULL && value[0] != '\0' ? value : "all";
}

void info_flags_each(unsigned flags, void (*fn)(const char *name, void *arg), void *arg)
{
    for (unsigned bit = 0; bit < 32; bit++) {
        unsigned flag = 1u << bit;
        if (!(flags & flag))
            continue;
        const char *name = ferry_transport_cap_name(flag);
        if (name != NULL) {
            fn(name, arg);
        } else {
            char hex[16];
            snprintf(hex, sizeof(hex), "0x%x", flag);
            fn(hex, arg);
        }
    }
}

typedef struct info_flags_buffer {
    char *buffer;
    size_t length;
    size_t used;
} info_flags_buffer_t;

static void info_flags_append(const char *name, void *arg)
{
    info_flags_buffer_t *b = arg;
    if (b->used >= b->length)
        return;
    int n = snprintf(b->buffer + b->used, b->length - b->used, "%s%s", b->used ? " " : "", name);
    if (n > 0)
        b->used += (size_t)n;
}

void info_flags_string(unsigned flags, char *buffer, size_t length)
{
    info_flags_buffer_t b = {buffer, length, 0};
    if (length == 0)
        return;
    buffer[0] = '\0';
    info_flags_each(flags, info_flags_append, &b);
    if (b.used == 0)
        snprintf(buffer, length, "none");
}

void info_id_text(uint64_t id, char *buffer, size_t length)
{
    snprintf(buffer, length, "%016" PRIx64, id);
}

/* Is text a decimal number that fits 64 bits? */
static bool info_is_number(const char *text, uint64_t *value)
{
    char *end;
    if (text[0] < '0' || text[0] > '9' || strlen(text) > 19)
        return false;
    errno = 0;
    *value = strtoull(text, &end, 10);
    return errno == 0 && *end == '\0';
}

void info_fields_json(info_json_t *json, const ferry_address_record_info_t *record)
{
    for (size_t i = 0; i < record->field_count && i < FERRY_INFO_FIELDS_MAX; i++) {
        const ferry_info_field_t *field = &record->fields[i];
        uint64_t number;
        if (info_is_number(field->value, &number))
            info_json_uint(json, field->key, number);
        else
            info_json_string(json, field->key, field->value);
    }
}

/* ---------------------------------------------------------------- -v */

int info_show_version(info_t *info)
{
    char header_version[32];
    snprintf(header_version, sizeof(header_version), "%d.%d.%d", FERRY_VERSION_MAJOR,
             FERRY_VERSION_MINOR, FERRY_VERSION_PATCH);
    if (info->json_mode) {
        info_json_object_begin(&info->json, "version");
        info_json_string(&info->json, "library", ferry_version_string());
        info_json_string(&info->json, "headers", header_version);
        info_json_string(&info->json, "build_options", ferry_build_options());
        info_json_string(&info->json, "bootstrap_methods", ferry_bootstrap_methods_built());
        info_json_object_end(&info->json);
    } else {
        printf("ferry %s (headers %s)\n", ferry_version_string(), header_version);
        printf("build: %s\n", ferry_build_options());
        printf("bootstrap methods (libferry_bootstrap): %s\n", ferry_bootstrap_methods_built());
    }
    return 0;
}

/* ---------------------------------------------------------------- -a */

int info_write_address(info_t *info, const char *path)
{
    ferry_status_t status;
    ferry_worker_t *worker = info_worker(info, &status);
    ferry_address_info_t decoded;
    const void *address = NULL;
    size_t length = 0;
    int saved_errno = 0;
    const char *failed_call = NULL;
    char id[24];

    if (worker != NULL && !info_worker_address(info, &address, &length, &decoded))
        status = FERRY_ERR_INVALID_ADDRESS; /* cannot be: the library wrote it */
    if (worker == NULL || status != FERRY_OK) {
        if (info->json_mode) {
            info_json_object_begin(&info->json, "address_written");
            info_json_string(&info->json, "file", path);
            info_json_bool(&info->json, "ok", false);
            info_json_string(&info->json, "error", ferry_status_name(status));
            info_json_object_end(&info->json);
        }
        fprintf(stderr, "ferry_info: -a %s: no worker address: %s (%s)\n", path,
                ferry_status_string(status), ferry_status_name(status));
        return 1;
    }

    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        saved_errno = errno;
        failed_call = "open";
    } else {
        size_t done = 0;
        while (done < length) {
            ssize_t n = write(fd, (const char *)address + done, length - done);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                saved_errno = n < 0 ? errno : EIO;
                failed_call = "write";
                break;
            }
            done += (size_t)n;
        }
        if (close(fd) != 0 && failed_call == NULL) {
            saved_errno = errno;
            failed_call = "close";
        }
    }

    if (info->json_mode) {
        info_json_object_begin(&info->json, "address_written");
        info_json_string(&info->json, "file", path);
        info_json_bool(&info->json, "ok", failed_call == NULL);
        if (failed_call != NULL) {
            char error[256];
            snprintf(error, sizeof(error), "%s failed: %s", failed_call, strerror(saved_errno));
            info_json_string(&info->json, "error", error);
        }
        info_json_uint(&info->json, "length", length);
        info_json_uint(&info->json, "pid", decoded.pid);
        info_id_text(decoded.worker_id, id, sizeof(id));
        info_json_string(&info->json, "worker", id);
        info_json_object_end(&info->json);
    }
    if (failed_call != NULL) {
        fprintf(stderr, "ferry_info: -a %s: %s failed: %s\n", path, failed_call,
                strerror(saved_errno));
        return 1;
    }
    if (!info->json_mode) {
        info_id_text(decoded.worker_id, id, sizeof(id));
        printf("wrote the %zu-byte %saddress of worker %s (pid %" PRIu32 ") to %s\n", length,
               decoded.compact ? "compact " : "", id, decoded.pid, path);
    }
    return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_COMPACT };
    static const struct option long_options[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"compact", no_argument, NULL, OPT_COMPACT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool show_version = false, show_transports = false, show_config = false, show_counters = false;
    const char *address_out = NULL, *address_in = NULL;
    info_t info;
    int opt, result = 0;

    memset(&info, 0, sizeof(info));
    opterr = 0; /* the messages below name the option */
    info.settings = calloc((size_t)argc + 1, sizeof(*info.settings)); /* at most argc -s */
    if (info.settings == NULL) {
        fprintf(stderr, "ferry_info: out of memory\n");
        return 1;
    }
    while ((opt = getopt_long(argc, argv, ":vdcxs:a:e:h", long_options, NULL)) != -1) {
        switch (opt) {
        case 'v':
            show_version = true;
            break;
        case 'd':
            show_transports = true;
            break;
        case 'c':
            show_config = true;
            break;
        case 'x':
            show_counters = true;
            break;
        case 'a':
            if (address_out != NULL) {
                fprintf(stderr, "ferry_info: -a given twice\n%s", info_usage_short);
                return 2;
            }
            address_out = optarg;
            break;
        case 'e':
            if (address_in != NULL) {
                fprintf(stderr, "ferry_info: -e given twice\n%s", info_usage_short);
                return 2;
            }
            address_in = optarg;
            break;
        case 's':
            if (strchr(optarg, '=') == NULL) {
                fprintf(stderr, "ferry_info: -s %s: expected NAME=value\n%s", optarg,
                        info_usage_short);
                return 2;
            }
            info.settings[info.settings_count++] = optarg;
            break;
        case OPT_COMPACT:
            info.compact = true;
            break;
        case OPT_JSON:
            info.json_mode = true;
            break;
        case 'h':
            fputs(info_usage, stdout);
            return 0;
        case ':':
            fprintf(stderr, "ferry_info: option -%c needs an argument\n%s", optopt,
                    info_usage_short);
            return 2;
        default:
            if (optopt != 0)
                fprintf(stderr, "ferry_info: unknown option -%c\n%s", optopt, info_usage_short);
            else
                fprintf(stderr, "ferry_info: unknown option %s\n%s", argv[optind - 1],
                        info_usage_short);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ferry_info: unexpected argument '%s'\n%s", argv[optind], info_usage_short);
        return 2;
    }
    if (address_out != NULL && address_out[0] == '\0') {
        fprintf(stderr, "ferry_info: -a needs a file name\n%s", info_usage_short);
        return 2;
    }
    if (info.compact && address_out == NULL) {
        fprintf(stderr, "ferry_info: --compact goes with -a FILE\n%s", info_usage_short);
        return 2;
    }
    if (address_in != NULL && address_in[0] == '\0') {
        fprintf(stderr, "ferry_info: -e needs a file name\n%s", info_usage_short);
        return 2;
    }
    if (!show_version && !show_transports && !show_config && !show_counters &&
        address_out == NULL && address_in == NULL) {
        show_version = true;
        show_transports = true;
    }

    if (info.json_mode) {
        info_json_init(&info.json, stdout);
        info_json_object_begin(&info.json, NULL);
    }
    /* Sections in a fixed order whatever the order of the options; a blank line between them
     * in text. */
    bool first = true;
    if (show_version) {
        result |= info_show_version(&info);
        first = false;
    }
    if (show_transports) {
        if (!first && !info.json_mode)
            putchar('\n');
        result |= info_show_transports(&info);
        first = false;
    }
    if (show_config) {
        if (!first && !info.json_mode)
            putchar('\n');
        result |= info_show_config(&info);
        first = false;
    }
    if (show_counters) {
        if (!first && !info.json_mode)
            putchar('\n');
        result |= info_show_counters(&info);
        first = false;
    }
    if (address_out != NULL) {
        if (!first && !info.json_mode)
            putchar('\n');
        result |= info_write_address(&info, address_out);
        first = false;
    }
    if (address_in != NULL) {
        if (!first && !info.json_mode)
            putchar('\n');
        result |= info_show_endpoint(&info, address_in);
    }
    if (info.json_mode)
        info_json_object_end(&info.json);

    info_cleanup(&info);
    free(info.settings);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "ferry_info: writing the output failed: %s\n", strerror(errno));
        return 1;
    }
    return result ? 1 : 0;
}
