/* SPDX-License-Identifier: MIT */
/*
 * What pressurectl's commands (status, watch, protection, top, ...) share:
 * the exit codes of the command line, usage errors, number arguments and
 * size formatting.
 * No daemon access.
 */
#pragma once

#include <stdint.h>

#include "util.h"

/* Exit codes, as the command line documents them. */
enum {
        EXIT_DAEMON_ERROR = 1,
        EXIT_USAGE = 2,
        EXIT_UNREACHABLE = 3,
        EXIT_DENIED = 4,
        EXIT_TIMEOUT = 124,
};

#define FORMAT_SIZE_MAX 16

/*
 * format_size - a byte count for people: "512B", "1.2G", "2G", "15G".
 * One decimal below 10 units unless it would be ".0". Returns @buf.
 */
const char *format_size(char buf[static FORMAT_SIZE_MAX], uint64_t v);

/*
 * parse_uint - a decimal number in [0, @max], without sign.
 * Returns 0, or -EINVAL with *@ret untouched.
 */
int parse_uint(const char *s, uint64_t max, uint64_t *ret);

/*
 * parse_seconds - a number of seconds in [0, @max_sec], fractions allowed
 * ("2", "0.5"), as microseconds. Returns 0, or -EINVAL with *@ret_usec
 * untouched.
 */
int parse_seconds(const char *s, double max_sec, uint64_t *ret_usec);

/*
 * usage_error - complain about the command line: "pressurectl: MESSAGE" when
 * @fmt is given (NULL when getopt already complained), then a pointer to
 * "pressurectl @command --help". @command is "" or ends with a space.
 * Returns EXIT_USAGE.
 */
_printf_(2, 3) int usage_error(const char *command, const char *fmt, ...);
