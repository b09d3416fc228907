/* SPDX-License-Identifier: MIT */
/* What pressurectl's commands share; see cli.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

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

/**
 * usage_error - report a command-line mistake
 * @command: the command with a trailing space ("top "), or "" or NULL
 * @fmt: the message, or NULL
 *
 * Returns EXIT_USAGE.
 */
int usage_error(const char *command, const char *fmt, ...) {
        if (fmt) {
                va_list ap;

                fprintf(stderr, "pressurectl: ");
                va_start(ap, fmt);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                fprintf(stderr, "\n");
        }
        fprintf(stderr, "Try 'pressurectl %s--help'.\n", command ? command : "");
        return EXIT_USAGE;
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
 * parse_seconds - parse a duration option argument given in seconds
 * @s: the text
 * @max_sec: the largest value accepted
 * @ret_usec: the duration in microseconds
 */
int parse_seconds(const char *s, double max_sec, uint64_t *ret_usec) {
        char *end;
        double sec;

        errno = 0;
        sec = strtod(s, &end);
        if (errno || end == s || *end || !(sec >= 0) || sec > max_sec)
                return -EINVAL;
        *ret_usec = (uint64_t) (sec * 1e6);
        return 0;
}
