/* SPDX-License-Identifier: MIT */
/* What pressurectl's commands share; see cli.h. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

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
