/* SPDX-License-Identifier: MIT */
/*
 * What pressurectl's commands (status, watch, protection, top, ...) share:
 * the exit codes of the command line, whether output is JSON (--json),
 * usage errors, notices and pressurectl's own failures (written as
 * error-text.h says), CGROUP and number arguments, and size formatting.
 * No daemon access.
 */
#pragma once

#include <stdbool.h>
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
 * parse_seconds - a duration in [0, @max_sec] as microseconds: seconds
 * ("2", "0.5") or with a unit ("500ms", "2min"), the grammar of
 * parse_duration(). Returns 0, or -EINVAL with *@ret_usec
 * untouched.
 */
int parse_seconds(const char *s, double max_sec, uint64_t *ret_usec);

/*
 * cli_set_json - whether the command line asked for --json. With it,
 * everything this module and error-text.h write on stderr is one JSON
 * object per line (usage errors, notices), and getopt's own complaints are
 * left to usage_error(). main() sets it before parsing anything.
 */
void cli_set_json(bool json);
bool cli_get_json(void);

/*
 * cli_wants_json - whether @argv has "--json" before the end of
 * pressurectl's own arguments ("--", or watch's "--exec CMD...").
 */
bool cli_wants_json(int argc, char **argv);

/*
 * cli_set_args - the argument vector getopt goes through now, so that a
 * usage error in JSON can name the option getopt rejected.
 */
void cli_set_args(char **argv);

/*
 * cgroup_arg - check @arg, the CGROUP of @command ("watch ", with its
 * space): an absolute path with no "." or ".." component and no control
 * character ("/" is the whole system; "" is a mistake, not "/"). Returns 0
 * with its normal form (repeated and trailing slashes removed) in *@ret
 * unless @ret is NULL, or the exit status of a usage error it reported.
 */
int cgroup_arg(const char *command, const char *arg, char **ret);

/*
 * usage_error - complain about the command line: "pressurectl: MESSAGE" when
 * @fmt is given (NULL when getopt rejected an option), then a pointer to
 * "pressurectl @command --help". @command is "" or ends with a space. With
 * --json, one pressurectl.UsageError object instead (error-text.h).
 * Returns EXIT_USAGE.
 */
_printf_(2, 3) int usage_error(const char *command, const char *fmt, ...);

/*
 * cli_notice - tell the user something while the command goes on (a hook
 * that failed, what notify watches): "pressurectl: TEXT" on stderr, or
 * with --json {"notice": TEXT}. @fmt has no trailing newline.
 */
_printf_(1, 2) void cli_notice(const char *fmt, ...);

/*
 * cli_fail - report a failure of pressurectl's own that ends @command
 * (not one of talking to the daemon: error_report() says those), with the
 * negative errno @r or 0: "pressurectl: @command: MESSAGE" on stderr, or
 * with --json one pressurectl.Failed object. Returns EXIT_DAEMON_ERROR.
 */
_printf_(3, 4) int cli_fail(const char *command, int r, const char *fmt, ...);
