/* SPDX-License-Identifier: MIT */
/*
 * What pressurectl's commands (status, watch, protection, top, ...) share:
 * the exit codes of the command line, whether output is JSON (--json),
 * usage errors, notices and pressurectl's own failures (written as
 * error-text.h says), CGROUP and number arguments, and size formatting.
 * For the commands that talk to the daemon: the common options (--json,
 * --socket, --user), opening the client, reporting its failures, reading
 * its JSON replies.
 */
#pragma once

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pressure.h"
#include "trigger.h"
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
 * space) by cgroup_path_check(), the rules the daemon and libpressure
 * apply ("/" is the whole system; "" is a mistake, not "/"). Returns 0
 * with its normal form (repeated and trailing slashes removed) in *@ret
 * unless @ret is NULL, or the exit status of a usage error that names
 * the rule @arg breaks: nothing is sent to the daemon.
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

/* The common options, as the command line gave them: --socket PATH, --json, --user. */
extern const char *arg_socket;
extern bool arg_json;
extern bool arg_user;

void json_unrefp(json_t **p);
#define _cleanup_json_ _cleanup_(json_unrefp)

/* Common options of every command. */
#define COMMON_OPTIONS                                                  \
        { "help",    no_argument,       NULL, 'h' },                    \
        { "json",    no_argument,       NULL, 'j' },                    \
        { "socket",  required_argument, NULL, 's' },                    \
        { "user",    no_argument,       NULL, 'u' }

/* Handle a common option (getopt's @opt, its value in optarg); returns true if it was one. */
bool common_option(int opt);

/* "1.2G"-style size; "max" for unlimited. */
const char *format_bytes(char buf[static FORMAT_SIZE_MAX], uint64_t v);

/* Value @what of protection node @n as a size, "max" for unlimited, "0B" if it has none. */
const char *node_value(char buf[static FORMAT_SIZE_MAX], const pressure_protection_node *n, pressure_protection_value what);

/* A PSI trigger in the words of the configuration, "some 150ms 2s" (the shared formatter). */
const char *format_psi(char buf[static PSI_TRIGGER_FORMAT_MAX], const char *stall, uint64_t threshold_us,
                       uint64_t window_us);

/* Local time "2024-05-01 12:00:00.123" of a CLOCK_REALTIME microsecond stamp; 0 is now. */
const char *format_time(char buf[static 64], uint64_t time_us);

/* A duration, "1h 2min 3s", "4.500s". */
const char *format_duration(char buf[static 64], uint64_t usec);

/*
 * Report the failure @r of @what, with the daemon's error in @error if it sent one (error-text.h: a
 * sentence, or with --json one JSON object); return the exit code.
 */
int report_error(pressure_client *c, int r, const char *what, const pressure_error *error);

/* A client on the socket the command line names, for @command ("watch"); returns 0 or the exit status. */
int client_open(const char *command, pressure_client **ret);

/*
 * Whether the daemon knows @cgroup, which nothing in its answer to @command named: -1 if so, else
 * the exit status of its error (NoSuchCgroup: 1), reported.
 */
int cgroup_check_exists(pressure_client *c, const char *command, const char *cgroup);

/* --user of @command without $XDG_RUNTIME_DIR: a usage error that says why there is no socket. */
int user_socket_error(const char *command);

/* "some 150ms 2s" into its stall, threshold and window; -EINVAL if it is none. */
int parse_psi_option(const char *spec, pressure_stall *ret_stall, uint64_t *ret_threshold,
                     uint64_t *ret_window);

/* Member @key of JSON object @o as an unsigned integer (0 if it is none), or as a string (NULL). */
uint64_t jget_u64(json_t *o, const char *key);
const char *jget_str(json_t *o, const char *key);

/* The trigger of a registration object @reg of GetStatus: "cpu some 70ms 1s (level low)". */
void format_reg_trigger(char *buf, size_t size, json_t *reg);

/* An episode object of GetStatus: "12.300s, 4 events, peak 22.10%". */
void format_episode(char *buf, size_t size, json_t *ep);

/*
 * The start of a command that takes only the common options and, with
 * @ret_cgroup, one optional CGROUP: parses the command line, opens the
 * client. Returns -1 to go on, or the exit status to end with.
 */
int command_begin(int argc, char **argv, const char *command, const char *help,
                  char **ret_cgroup, pressure_client **ret_client);

/*
 * Parse the reply @text of @command into *@ret (and its array member
 * @array into *@ret_array); says so and returns -EBADMSG if it is not that.
 */
int reply_parse(pressure_client *c, const char *command, const char *text, const char *array, json_t **ret,
                json_t **ret_array);
