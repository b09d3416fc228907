/* SPDX-License-Identifier: MIT */
/* pressurectl's failure reports, as sentences or JSON objects; see error-text.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "cli.h"
#include "error-text.h"
#include "util.h"
#include "vocabulary.h"

#define SYSTEM_SOCKET_DIR "/run/pressured/"

/* @s with control characters (and DEL) written as \xNN, so that a daemon's string cannot drive the terminal. */
static void put_escaped(FILE *f, const char *s) {
        for (; *s; s++) {
                unsigned char ch = (unsigned char) *s;

                if (ch < 0x20 || ch == 0x7f)
                        fprintf(f, "\\x%02x", ch);
                else
                        fputc(ch, f);
        }
}

/* The parameter @key of @p: a string escaped, a number as such, "?" if missing. */
static void put_param(FILE *f, json_t *p, const char *key) {
        json_t *v = json_object_get(p, key);

        if (json_is_string(v))
                put_escaped(f, json_string_value(v));
        else if (json_is_integer(v))
                fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        else
                fputs("?", f);
}

static const char *get_str(json_t *p, const char *key) {
        return json_string_value(json_object_get(p, key));
}

/* The daemon's hierarchies (error_text_set_roots()), for the sentence of NoSuchCgroup. */
static char *root_v2, *root_v1;
static bool roots_known;

void error_text_set_roots(const char *v2_root, const char *v1_root) {
        free(root_v2);
        free(root_v1);
        root_v2 = v2_root ? strdup(v2_root) : NULL;
        root_v1 = v1_root ? strdup(v1_root) : NULL;
        roots_known = true;
}

static void say_no_such_cgroup(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("No cgroup ", f);
        put_param(f, p, "cgroup");
        /* The daemon answers NoSuchCgroup for a cgroup in none of the hierarchies it uses. */
        if (roots_known && (root_v2 || root_v1)) {
                fputs(": the daemon's cgroup hierarchies have no such cgroup (", f);
                if (root_v2) {
                        fputs("cgroup2 at ", f);
                        put_escaped(f, root_v2);
                }
                if (root_v1) {
                        fputs(root_v2 ? ", cgroup v1 memory at " : "cgroup v1 memory at ", f);
                        put_escaped(f, root_v1);
                }
                fputs("); check the path, e.g. with systemd-cgls.", f);
        } else
                fputs(": it does not exist in the cgroup hierarchies the daemon uses; "
                      "check the path, e.g. with systemd-cgls.", f);
}

/* What is at the well-formed @path beneath the hierarchy @root, as the daemon's open finds it. */
static CgroupPathProblem probe_cgroup_path(const char *root, const char *path) {
        _cleanup_free_ char *normal = NULL;
        Hierarchy h = { .fd = -1 };
        int fd;

        if (!root || cgroup_path_normalize(path, &normal) < 0 || hierarchy_open(&h, root) < 0)
                return CGROUP_PATH_OK;
        fd = hierarchy_open_cgroup(&h, normal);
        hierarchy_close(&h);
        if (fd >= 0) {
                close(fd);
                return CGROUP_PATH_OK;
        }
        return cgroup_path_problem_from_errno(fd);
}

static void say_invalid_cgroup_path(FILE *f, const char *command, json_t *p) {
        const char *cgroup = get_str(p, "cgroup");
        CgroupPathProblem problem = cgroup ? cgroup_path_check(cgroup) : CGROUP_PATH_OK;

        (void) command;
        /* The reason travels in the daemon's log, not on the wire: the rule the path breaks, else
         * what is there in the hierarchies the daemon named (error_text_set_roots()). */
        if (cgroup && problem == CGROUP_PATH_OK)
                problem = probe_cgroup_path(root_v2, cgroup);
        if (cgroup && problem == CGROUP_PATH_OK)
                problem = probe_cgroup_path(root_v1, cgroup);
        fputs("Invalid cgroup path '", f);
        put_param(f, p, "cgroup");
        if (problem != CGROUP_PATH_OK)
                fprintf(f, "': %s.", cgroup_path_problem_to_string(problem));
        else
                fputs("': the daemon found no cgroup directory there: a file, a symbolic link or another mount "
                      "is on the way.", f);
}

static void say_permission_denied(FILE *f, const char *command, json_t *p) {
        if (command && streq(command, "inject"))
                fputs("Only root and members of the InjectGroup= group may inject events; try sudo.", f);
        else if (command && streq(command, "reload"))
                fputs("Only root may reload the daemon's configuration; try sudo.", f);
        else if (command && streq(command, "reexec"))
                fputs("Only root may make the daemon execute itself anew; try sudo.", f);
        else {
                fputs("Permission denied: ", f);
                put_param(f, p, "reason");
                fputs("; use a cgroup delegated to your user, or try sudo.", f);
        }
}

static void say_source_unavailable(FILE *f, const char *command, json_t *p) {
        const char *source = get_str(p, "source");

        (void) command;
        fputs("The source ", f);
        put_param(f, p, "source");
        fputs(" is not available here: ", f);
        put_param(f, p, "reason");
        if (source && (streq(source, "psi") || streq(source, "vmpressure")))
                fputs("; --level picks the source this system has.", f);
        else
                fputs(".", f);
}

static void say_invalid_trigger(FILE *f, const char *command, json_t *p) {
        const char *reason = json_string_value(json_object_get(p, "reason"));

        (void) command;
        fputs("Invalid trigger: ", f);
        put_param(f, p, "reason");
        /* A trigger refused for its resource (cpu "full" on the whole system) is well formed: no syntax hint. */
        if (reason && strncmp(reason, "cpu ", 4) == 0)
                fputs(".", f);
        else
                fputs("; a PSI trigger is STALL THRESHOLD WINDOW, e.g. 'some 150ms 2s', "
                      "with a window from 500ms to 10s.", f);
}

/* Where the limit @limit is set, or NULL. */
static const char *limit_setting(const char *limit) {
        static const struct {
                const char *limit, *setting;
        } table[] = {
                { "MaxClients",        "MaxClients= in [Limits] of pressured.conf" },
                { "MaxClientsPerUser", "MaxClientsPerUser= in [Limits] of pressured.conf" },
                { "MaxRegistrations",  "MaxRegistrations= in [Limits] of pressured.conf" },
                { "open files",        "LimitNOFILE= of pressured.service" },
        };

        for (size_t i = 0; limit && i < ELEMENTSOF(table); i++)
                if (streq(limit, table[i].limit))
                        return table[i].setting;
        return NULL;
}

static void say_limit_exceeded(FILE *f, const char *command, json_t *p) {
        const char *setting = limit_setting(get_str(p, "limit"));

        (void) command;
        fputs("The daemon's limit ", f);
        put_param(f, p, "limit");
        fputs(" (", f);
        put_param(f, p, "value");
        fputs(") is reached; ", f);
        if (setting)
                fprintf(f, "close other clients, or raise %s.", setting);
        else {
                fputs("close other clients, or raise ", f);
                put_param(f, p, "limit");
                fputs(" in pressured.conf.", f);
        }
}

static void say_configuration_rejected(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("The daemon rejected its configuration and keeps the previous one: ", f);
        put_param(f, p, "reason");
        fputs("; fix the file and reload again, see journalctl -u pressured.", f);
}

static void say_internal_error(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("The daemon failed: ", f);
        put_param(f, p, "reason");
        fputs("; try again, and see journalctl -u pressured.", f);
}

static void say_no_such_prekill(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("No warning before a kill numbered ", f);
        put_param(f, p, "id");
        fputs(" waits for your acknowledgement: the daemon answered systemd-oomd already (acknowledged, or its "
              "deadline passed), or it is not yours.", f);
}

static void say_method_not_found(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("The daemon does not know the method ", f);
        put_param(f, p, "method");
        fputs(": it is older than pressurectl; update pressured and restart it.", f);
}

static void say_method_not_implemented(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("The daemon does not implement the method ", f);
        put_param(f, p, "method");
        fputs(": it is older or newer than pressurectl; use the same version of both.", f);
}

static void say_interface_not_found(FILE *f, const char *command, json_t *p) {
        (void) command;
        fputs("The daemon does not offer the interface ", f);
        put_param(f, p, "interface");
        fputs(": is the socket pressured's? Check --socket and $PRESSURED_SOCKET.", f);
}

static void say_invalid_parameter(FILE *f, const char *command, json_t *p) {
        (void) command;
        /* The selector of a level stream, new in 0.4: an older daemon knows no such parameter. */
        if (streq_ptr(json_string_value(json_object_get(p, "parameter")), "levels")) {
                fputs("The daemon does not serve level streams (watch --levels): it is older than pressured 0.4; "
                      "update pressured and restart it.", f);
                return;
        }
        fputs("The daemon rejected the parameter ", f);
        put_param(f, p, "parameter");
        fputs(" of the call: pressurectl and pressured may be of different versions; use the same version of both.",
              f);
}

static void say_varlink_permission_denied(FILE *f, const char *command, json_t *p) {
        (void) command;
        (void) p;
        fputs("The daemon does not allow this call to you; try sudo.", f);
}

static void say_expected_more(FILE *f, const char *command, json_t *p) {
        (void) command;
        (void) p;
        fputs("The daemon expected a streaming call: pressurectl and pressured may be of different versions; "
              "use the same version of both.", f);
}

/* The sentence of each error of the interface (vocabulary.h), by the error. */
static void (*const sentences[_IDL_ERROR_MAX])(FILE *f, const char *command, json_t *p) = {
        [IDL_ERROR_NO_SUCH_CGROUP] = say_no_such_cgroup,
        [IDL_ERROR_INVALID_CGROUP_PATH] = say_invalid_cgroup_path,
        [IDL_ERROR_PERMISSION_DENIED] = say_permission_denied,
        [IDL_ERROR_SOURCE_UNAVAILABLE] = say_source_unavailable,
        [IDL_ERROR_INVALID_TRIGGER] = say_invalid_trigger,
        [IDL_ERROR_LIMIT_EXCEEDED] = say_limit_exceeded,
        [IDL_ERROR_CONFIGURATION_REJECTED] = say_configuration_rejected,
        [IDL_ERROR_INTERNAL_ERROR] = say_internal_error,
        [IDL_ERROR_NO_SUCH_PREKILL] = say_no_such_prekill,
        [IDL_ERROR_VARLINK_METHOD_NOT_FOUND] = say_method_not_found,
        [IDL_ERROR_VARLINK_METHOD_NOT_IMPLEMENTED] = say_method_not_implemented,
        [IDL_ERROR_VARLINK_INTERFACE_NOT_FOUND] = say_interface_not_found,
        [IDL_ERROR_VARLINK_INVALID_PARAMETER] = say_invalid_parameter,
        [IDL_ERROR_VARLINK_PERMISSION_DENIED] = say_varlink_permission_denied,
        [IDL_ERROR_VARLINK_EXPECTED_MORE] = say_expected_more,
};

/* Where the daemon is to be started, for @socket. */
static void say_start_hint(FILE *f, const char *socket) {
        if (socket && strncmp(socket, SYSTEM_SOCKET_DIR, strlen(SYSTEM_SOCKET_DIR)) == 0)
                fputs(" Is pressured.socket running? Try systemctl start pressured.socket.", f);
        else
                fputs(" Is pressured running on this socket? Start it (pressured --user for your own), "
                      "or check --socket and $PRESSURED_SOCKET.", f);
}

/* The sentences of pressurectl's own failures, from the parameters error_describe() made. */
static void say_local(FILE *f, const char *name, json_t *p) {
        const char *socket = get_str(p, "socket");

        if (streq(name, CLI_ERROR_UNREACHABLE)) {
                fputs("Cannot reach pressured at ", f);
                put_param(f, p, "socket");
                fputs(": ", f);
                put_param(f, p, "reason");
                fputs(".", f);
                say_start_hint(f, socket);
        } else if (streq(name, CLI_ERROR_SOCKET_DENIED)) {
                fputs("Cannot connect to pressured at ", f);
                put_param(f, p, "socket");
                fputs(": ", f);
                put_param(f, p, "reason");
                fputs("; the socket's permissions keep you out; try sudo.", f);
        } else if (streq_ptr(get_str(p, "errno"), "EBADMSG")) {
                fputs("Cannot read the reply of pressured at ", f);
                put_param(f, p, "socket");
                fputs(": it is not what this pressurectl expects; use the same version of both.", f);
        } else {
                fputs("Talking to pressured at ", f);
                put_param(f, p, "socket");
                fputs(" failed: ", f);
                put_param(f, p, "reason");
                fputs(".", f);
        }
}

/**
 * error_sentence - the sentence for an error
 * @command: the pressurectl command that failed, or NULL
 * @name: the error's name
 * @params: its parameters, or NULL
 */
char *error_sentence(const char *command, const char *name, json_t *params) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        IdlError error = idl_error_from_string(name);
        bool known = error >= 0 && sentences[error];

        if (!f)
                return NULL;
        if (known)
                sentences[error](f, command, params);
        if (!known && streq(name, PRESSURE_ERROR_INVALID_CGROUP_PATH)) {
                /* libpressure's own: the rule the path breaks, found before anything was sent. */
                fputs("Invalid cgroup path '", f);
                put_param(f, params, "cgroup");
                fputs("': ", f);
                put_param(f, params, "reason");
                fputs(".", f);
        } else if (!known && strncmp(name, "pressurectl.", strlen("pressurectl.")) == 0)
                say_local(f, name, params);
        else if (!known) {
                char *text = params ? json_dumps(params, JSON_DUMP_FLAGS | JSON_ENCODE_ANY) : NULL;

                fputs("The daemon answered ", f);
                put_escaped(f, name);
                fputs(": ", f);
                put_escaped(f, text ?: "{}");
                fputs(".", f);
                free(text);
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

/* Whether the error @name says that a value the user typed is wrong: a usage error (exit 2). */
static bool error_is_usage(const char *name) {
        return streq(name, IDL_ERROR_NAME(INVALID_TRIGGER)) || streq(name, IDL_ERROR_NAME(INVALID_CGROUP_PATH)) ||
               streq(name, PRESSURE_ERROR_INVALID_CGROUP_PATH);
}

/* The name and parameters of pressurectl's own failure @r at @socket; sets *@ret_exit. */
static json_t *local_error(const char *socket, int r, const char **ret_name, int *ret_exit) {
        /* libpressure says ECONNREFUSED both for a socket nobody serves and for
         * one that does not exist: name the second precisely. */
        if (r == -ECONNREFUSED && socket && access(socket, F_OK) < 0 && errno == ENOENT)
                r = -ENOENT;
        switch (-r) {
        case EACCES:
        case EPERM:
                *ret_name = CLI_ERROR_SOCKET_DENIED;
                *ret_exit = EXIT_DENIED;
                break;
        case ENOENT:
        case ECONNREFUSED:
        case ECONNRESET:
        case ECONNABORTED:
        case ENOTCONN:
        case EPIPE:
        case EAGAIN:
        case ETIMEDOUT:
        case ENAMETOOLONG:
        case ENOTSOCK:
                *ret_name = CLI_ERROR_UNREACHABLE;
                *ret_exit = EXIT_UNREACHABLE;
                break;
        default:
                *ret_name = CLI_ERROR_FAILED;
                *ret_exit = EXIT_DAEMON_ERROR;
                break;
        }
        return json_pack("{s:s, s:s, s:s}", "socket", socket ?: "?", "errno", strerrorname_np(-r) ?: "?",
                         "reason", strerror(-r));
}

/**
 * error_describe - the report of a failure as a JSON object
 * @command: the pressurectl command that failed
 * @socket: the daemon's socket
 * @r: the negative errno of the failure
 * @name: the daemon's error, or NULL
 * @params: its parameters as JSON text, or NULL
 * @ret_exit: the exit code
 */
json_t *error_describe(const char *command, const char *socket, int r, const char *name, const char *params,
                       int *ret_exit) {
        json_t *p, *o;
        char *message;

        /* libpressure's own names are failures on this side, which pressurectl names itself; but for
         * a cgroup path it refused, the same usage error pressurectl's own check gives. */
        if (name && strncmp(name, "libpressure.", strlen("libpressure.")) == 0 &&
            !streq(name, PRESSURE_ERROR_INVALID_CGROUP_PATH))
                name = NULL;
        if (name) {
                p = params ? json_loads(params, JSON_DECODE_ANY, NULL) : NULL;
                if (!json_is_object(p)) {
                        json_decref(p);
                        p = json_object();
                }
                *ret_exit = r == -EACCES ? EXIT_DENIED : error_is_usage(name) ? EXIT_USAGE : EXIT_DAEMON_ERROR;
        } else
                p = local_error(socket, r, &name, ret_exit);
        if (!p)
                return NULL;
        message = error_sentence(command, name, p);
        o = message ? json_pack("{s:s, s:o, s:s}", "error", name, "parameters", p, "message", message) : NULL;
        if (!o && !message)
                json_decref(p);
        free(message);
        return o;
}

/**
 * error_report - print the report of a failure
 * @f: where to
 * @json: as a JSON object rather than a sentence
 * @command: the pressurectl command that failed
 * @socket: the daemon's socket
 * @r: the negative errno of the failure
 * @name: the daemon's error, or NULL
 * @params: its parameters as JSON text, or NULL
 */
int error_report(FILE *f, bool json, const char *command, const char *socket, int r, const char *name,
                 const char *params) {
        int exit_code = EXIT_DAEMON_ERROR;
        json_t *o = error_describe(command, socket, r, name, params, &exit_code);
        char *text;

        if (!o) {
                fprintf(f, "pressurectl: %s: %s\n", command, strerror(ENOMEM));
                return exit_code;
        }
        if (json) {
                text = json_dumps(o, JSON_DUMP_FLAGS);
                fprintf(f, "%s\n", text ?: "{}");
                free(text);
        } else
                fprintf(f, "pressurectl: %s: %s\n", command, json_string_value(json_object_get(o, "message")));
        json_decref(o);
        return exit_code;
}

/* @o (stolen) on one line of @f; false if out of memory. */
static bool print_json(FILE *f, json_t *o) {
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

        json_decref(o);
        if (!text)
                return false;
        fprintf(f, "%s\n", text);
        free(text);
        return true;
}

/**
 * error_report_usage - report a mistake on the command line
 * @f: where to
 * @json: as a JSON object
 * @command: the command with its trailing space, or ""
 * @reason: what is wrong, or NULL if getopt said it
 */
int error_report_usage(FILE *f, bool json, const char *command, const char *reason) {
        _cleanup_free_ char *message = NULL, *name = strdup(command);
        size_t n;

        if (!json) {
                if (reason)
                        fprintf(f, "pressurectl: %s\n", reason);
                fprintf(f, "Try 'pressurectl %s--help'.\n", command);
                return EXIT_USAGE;
        }
        /* "watch " names the command "watch"; "" names none. */
        n = name ? strlen(name) : 0;
        if (n > 0 && name[n - 1] == ' ')
                name[n - 1] = 0;
        if (asprintf(&message, "%s%sTry 'pressurectl %s--help'.", reason ?: "", reason ? ". " : "", command) < 0)
                message = NULL;
        if (!print_json(f, json_pack("{s:s, s:{s:s, s:s?}, s:s}", "error", CLI_ERROR_USAGE, "parameters",
                                     "command", name ?: "", "reason", reason, "message", message ?: "")))
                fprintf(f, "pressurectl: %s\n", reason ?: strerror(ENOMEM));
        return EXIT_USAGE;
}

/**
 * error_report_failure - report a failure of pressurectl's own
 * @f: where to
 * @json: as a JSON object
 * @command: the command that failed
 * @r: its negative errno, or 0
 * @message: the sentence
 */
int error_report_failure(FILE *f, bool json, const char *command, int r, const char *message) {
        json_t *p;

        if (!json) {
                fprintf(f, "pressurectl: %s: %s\n", command, message);
                return EXIT_DAEMON_ERROR;
        }
        p = r < 0 ? json_pack("{s:s, s:s}", "errno", strerrorname_np(-r) ?: "?", "reason", strerror(-r)) : json_object();
        if (!print_json(f, json_pack("{s:s, s:o?, s:s}", "error", CLI_ERROR_FAILED, "parameters", p, "message",
                                     message)))
                fprintf(f, "pressurectl: %s: %s\n", command, message);
        return EXIT_DAEMON_ERROR;
}

/**
 * error_report_timeout - report a command that ran out of time
 * @f: where to
 * @json: as a JSON object
 * @command: the command
 * @events: the events it got before
 */
int error_report_timeout(FILE *f, bool json, const char *command, uint64_t events) {
        char message[96];

        snprintf(message, sizeof(message), "timed out after %" PRIu64 " event%s", events, events == 1 ? "" : "s");
        if (!json || !print_json(f, json_pack("{s:s, s:{s:s, s:I}, s:s}", "error", CLI_ERROR_TIMEOUT, "parameters",
                                              "command", command, "events", (json_int_t) events, "message",
                                              message)))
                fprintf(f, "pressurectl: %s: %s\n", command, message);
        return EXIT_TIMEOUT;
}

/**
 * notice_report - say something while the command goes on
 * @f: where to
 * @json: as a JSON object
 * @text: what to say
 */
void notice_report(FILE *f, bool json, const char *text) {
        if (!json || !print_json(f, json_pack("{s:s}", "notice", text)))
                fprintf(f, "pressurectl: %s\n", text);
}
