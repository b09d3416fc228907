/* SPDX-License-Identifier: MIT */
/* What pressurectl's commands share; see cli.h. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cli.h"
#include "duration.h"
#include "error-text.h"

/**
 * format_size - a byte count with a binary unit
 * @buf: where the text goes
 * @v: the count
 */
const char *format_size(char buf[static FORMAT_SIZE_MAX], uint64_t v) {
        static const char units[] = "KMGTPE";
        double d = (double) v;
        int i = -1;

        if (v < 1024) {
                snprintf(buf, FORMAT_SIZE_MAX, "%" PRIu64 "B", v);
                return buf;
        }
        while (d >= 1024 && i < 5) {
                d /= 1024;
                i++;
        }
        if (d < 9.95 && (uint64_t) (d * 10 + 0.5) % 10 != 0)
                snprintf(buf, FORMAT_SIZE_MAX, "%.1f%c", d, units[i]);
        else
                snprintf(buf, FORMAT_SIZE_MAX, "%.0f%c", d, units[i]);
        return buf;
}

static bool json_mode;
static char **args;

/**
 * cli_set_json - say whether output is JSON
 * @json: --json was given
 */
void cli_set_json(bool json) {
        json_mode = json;
        /* With --json, getopt must not print its own complaint: usage_error() says it as JSON. */
        opterr = !json;
}

/**
 * cli_get_json - whether output is JSON
 */
bool cli_get_json(void) {
        return json_mode;
}

/**
 * cli_wants_json - find --json on a command line
 * @argc: the number of arguments
 * @argv: the arguments
 */
bool cli_wants_json(int argc, char **argv) {
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--") || streq(argv[i], "--exec"))
                        break;
                if (streq(argv[i], "--json"))
                        return true;
        }
        return false;
}

/**
 * cli_set_args - the arguments getopt goes through
 * @argv: the argument vector, NULL-terminated
 */
void cli_set_args(char **argv) {
        args = argv;
}

/**
 * usage_error - report a command-line mistake
 * @command: the command with a trailing space ("top "), or "" or NULL
 * @fmt: the message, or NULL
 *
 * Returns EXIT_USAGE.
 */
int usage_error(const char *command, const char *fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;
        int r = 0;

        if (fmt) {
                va_start(ap, fmt);
                r = vasprintf(&reason, fmt, ap);
                va_end(ap);
        } else if (json_mode)
                /* getopt stopped at the argument before optind (opterr is off). */
                r = asprintf(&reason, "unknown option or missing argument: '%s'",
                             args && optind > 0 ? args[optind - 1] : "?");
        if (r < 0)
                reason = NULL; /* undefined after a failure */
        return error_report_usage(stderr, json_mode, command ?: "", reason);
}

/**
 * cgroup_arg - check a CGROUP argument
 * @command: the command with its trailing space
 * @arg: the argument
 * @ret: its normal form, or NULL
 */
int cgroup_arg(const char *command, const char *arg, char **ret) {
        char *normal = NULL;
        int r;

        if (streq(arg, ""))
                return usage_error(command, "empty cgroup: give an absolute path such as /system.slice, "
                                   "or leave it out for the whole system");
        r = cgroup_path_normalize(arg, &normal);
        if (r == -ENOMEM)
                return cli_fail("cgroup", r, "%s", strerror(-r));
        if (r < 0)
                return usage_error(command, "invalid cgroup '%s': give an absolute path such as "
                                   "/system.slice/foo.service, without '.' or '..' components", arg);
        if (ret)
                *ret = normal;
        else
                free(normal);
        return 0;
}

/**
 * cli_notice - tell the user something while the command goes on
 * @fmt: the text, without a trailing newline
 */
void cli_notice(const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                text = NULL; /* undefined after a failure */
        notice_report(stderr, json_mode, text ?: fmt);
}

/**
 * cli_fail - report a failure of pressurectl's own
 * @command: the command that failed ("top")
 * @r: a negative errno, or 0
 * @fmt: the sentence
 */
int cli_fail(const char *command, int r, const char *fmt, ...) {
        _cleanup_free_ char *text = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (k < 0)
                text = NULL; /* undefined after a failure */
        return error_report_failure(stderr, json_mode, command, r, text ?: fmt);
}

/**
 * parse_uint - parse a decimal option argument
 * @s: the text
 * @max: the largest value accepted
 * @ret: the value
 */
int parse_uint(const char *s, uint64_t max, uint64_t *ret) {
        char *end;
        unsigned long long v;

        if (!s || !*s || *s == '-')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

/**
 * parse_seconds - parse a duration option argument: seconds, or a duration
 * with a unit, as parse_duration() reads it ("1.5", "500ms", "2min")
 * @s: the text
 * @max_sec: the largest value accepted
 * @ret_usec: the duration in microseconds
 */
int parse_seconds(const char *s, double max_sec, uint64_t *ret_usec) {
        return parse_duration(s, USEC_PER_SEC, (uint64_t) (max_sec * (double) USEC_PER_SEC), ret_usec) < 0 ? -EINVAL : 0;
}
