/* SPDX-License-Identifier: MIT */
/*
 * How pressurectl reports a failure: the daemon's varlink errors and its
 * own (daemon not reachable, socket not accessible, anything else) as one
 * sentence that says what went wrong and what to do, or, with --json, as
 * one JSON object for scripts. Part of pressurectl only, not of
 * libpressure.
 *
 * The JSON form, one line on stderr:
 *
 *   {"error": NAME, "parameters": {...}, "message": "the sentence"}
 *
 * NAME is the daemon's varlink error name with its parameters as sent
 * (io.pressured.NoSuchCgroup, org.varlink.service.MethodNotFound, ...).
 * Failures that happen on pressurectl's side have names of their own in
 * the "pressurectl." namespace, so that nothing is passed off as the
 * daemon's word:
 *
 *   pressurectl.DaemonUnreachable       {"socket", "errno", "reason"}   exit 3
 *   pressurectl.SocketPermissionDenied  {"socket", "errno", "reason"}   exit 4
 *   pressurectl.Failed                  {"socket"?, "errno"?, "reason"?} exit 1
 *   pressurectl.UsageError              {"command", "reason"?}          exit 2
 *   pressurectl.Timeout                 {"command", "events"}           exit 124
 *
 * "errno" is the symbolic name ("ENOENT"), "reason" its strerror() text;
 * pressurectl.Failed with EBADMSG is a reply that pressurectl cannot read,
 * and without "socket" a failure that is not about the daemon (reading
 * /proc, setting up a hook). "error" is always a string, never null.
 *
 * The exit code of the daemon's errors: 2 for those that say the command
 * line is wrong (InvalidTrigger, InvalidCgroupPath: a value the user typed
 * is a usage error whoever finds it), 4 for PermissionDenied, else 1.
 * libpressure's libpressure.InvalidCgroupPath, a path it refused before
 * sending it, is kept by its name with its parameters, exit 2 as well.
 *
 * Something said while the command goes on (a notice) is, with --json,
 * the line {"notice": "the sentence"}.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CLI_ERROR_UNREACHABLE "pressurectl.DaemonUnreachable"
#define CLI_ERROR_SOCKET_DENIED "pressurectl.SocketPermissionDenied"
#define CLI_ERROR_FAILED "pressurectl.Failed"
#define CLI_ERROR_USAGE "pressurectl.UsageError"
#define CLI_ERROR_TIMEOUT "pressurectl.Timeout"

/*
 * error_sentence - the sentence for the error @name with the parameters
 * @params (a JSON object, or NULL) of @command ("watch", "inject", ...:
 * PermissionDenied says who may do what the command does). Names it does
 * not know give "The daemon answered NAME: PARAMETERS.". Strings from the
 * daemon have their control characters escaped. Returns a new string, or
 * NULL if out of memory.
 */
char *error_sentence(const char *command, const char *name, json_t *params);

/*
 * error_text_set_roots - the daemon's cgroup2 and v1 memory hierarchies
 * (GetStatus "cgroup"; NULL: it uses none), which the sentence of
 * NoSuchCgroup names. Without a call it speaks of them in general.
 */
void error_text_set_roots(const char *v2_root, const char *v1_root);

/*
 * error_describe - the whole report of a failure of @command: the daemon's
 * error @name with @params (JSON text; NULL if none) if it sent one, else
 * pressurectl's own for the negative errno @r while talking to the daemon
 * at @socket. Returns the JSON object described above (NULL if out of
 * memory) and stores the exit code in *@ret_exit (4 for permission
 * denied, 3 daemon not reachable, else 1).
 */
json_t *error_describe(const char *command, const char *socket, int r, const char *name, const char *params,
                       int *ret_exit);

/*
 * error_report - print error_describe()'s report to @f: with @json the
 * object on one line, else "pressurectl: @command: SENTENCE". Returns the
 * exit code.
 */
int error_report(FILE *f, bool json, const char *command, const char *socket, int r, const char *name,
                 const char *params);

/*
 * error_report_usage - a mistake on the command line of @command ("watch "
 * with its space, or ""), @reason NULL when getopt said it already: the
 * text "pressurectl: REASON" and "Try 'pressurectl @command--help'.", or
 * with @json one pressurectl.UsageError object. Returns EXIT_USAGE.
 */
int error_report_usage(FILE *f, bool json, const char *command, const char *reason);

/*
 * error_report_failure - pressurectl's own failure @message of @command
 * with the negative errno @r (0: none): "pressurectl: @command: @message",
 * or with @json one pressurectl.Failed object. Returns EXIT_DAEMON_ERROR.
 */
int error_report_failure(FILE *f, bool json, const char *command, int r, const char *message);

/*
 * error_report_timeout - @command ran out of time after @events events:
 * "pressurectl: @command: timed out after N events", or with @json one
 * pressurectl.Timeout object. Returns EXIT_TIMEOUT.
 */
int error_report_timeout(FILE *f, bool json, const char *command, uint64_t events);

/* notice_report - @text, said while the command goes on: "pressurectl: @text", or with @json {"notice": @text}. */
void notice_report(FILE *f, bool json, const char *text);
