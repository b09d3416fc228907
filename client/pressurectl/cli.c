/* SPDX-License-Identifier: MIT */
/* What pressurectl's commands share; see cli.h. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cgroup.h"
#include "cli.h"
#include "error-text.h"
#include "pressure.h"
#include "trigger.h"

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
        CgroupPathProblem problem;
        char *normal = NULL;
        int r;

        if (streq(arg, ""))
                return usage_error(command, "empty cgroup: give an absolute path such as /system.slice, "
                                   "or leave it out for the whole system");
        problem = cgroup_path_check(arg);
        if (problem != CGROUP_PATH_OK) {
                _cleanup_free_ char *shown = cgroup_path_escape(arg);

                return usage_error(command, "invalid cgroup '%s': %s; give an absolute path such as "
                                   "/system.slice/foo.service", shown ?: "?", cgroup_path_problem_to_string(problem));
        }
        r = cgroup_path_normalize(arg, &normal);
        if (r < 0)
                return cli_fail("cgroup", r, "%s", strerror(-r));
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

/* The common options, as the command line gave them (common_option()). */
const char *arg_socket;
bool arg_json;
bool arg_user;

void json_unrefp(json_t **p) {
        if (*p)
                json_decref(*p);
}

/* "1.2G"-style size; "max" for unlimited. */
const char *format_bytes(char buf[static FORMAT_SIZE_MAX], uint64_t v) {
        return v == PRESSURE_UNLIMITED ? "max" : format_size(buf, v);
}

/* A PSI trigger in the words of the configuration, "some 150ms 2s" (the shared formatter). */
const char *format_psi(char buf[static PSI_TRIGGER_FORMAT_MAX], const char *stall, uint64_t threshold_us,
                       uint64_t window_us) {
        PsiTrigger t = { psi_stall_from_string(stall), threshold_us, window_us };

        if (psi_trigger_format(&t, PSI_TRIGGER_FORMAT_CONFIG, buf, PSI_TRIGGER_FORMAT_MAX) < 0)
                snprintf(buf, PSI_TRIGGER_FORMAT_MAX, "?");
        return buf;
}

/* Local time "2024-05-01 12:00:00.123" of a CLOCK_REALTIME microsecond stamp. */
const char *format_time(char buf[static 64], uint64_t time_us) {
        time_t t;
        struct tm tm;
        size_t n;

        if (time_us == 0)
                time_us = now_usec(CLOCK_REALTIME);
        t = (time_t) (time_us / USEC_PER_SEC);
        if (!localtime_r(&t, &tm))
                return "-";
        n = strftime(buf, 64, "%Y-%m-%d %H:%M:%S", &tm);
        snprintf(buf + n, 64 - n, ".%03u", (unsigned) (time_us % USEC_PER_SEC / USEC_PER_MSEC));
        return buf;
}

const char *format_duration(char buf[static 64], uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC;

        if (s >= 86400)
                snprintf(buf, 64, "%" PRIu64 "d %" PRIu64 "h %" PRIu64 "min", s / 86400, s % 86400 / 3600, s % 3600 / 60);
        else if (s >= 3600)
                snprintf(buf, 64, "%" PRIu64 "h %" PRIu64 "min %" PRIu64 "s", s / 3600, s % 3600 / 60, s % 60);
        else if (s >= 60)
                snprintf(buf, 64, "%" PRIu64 "min %" PRIu64 "s", s / 60, s % 60);
        else
                snprintf(buf, 64, "%" PRIu64 ".%03" PRIu64 "s", s, usec % USEC_PER_SEC / USEC_PER_MSEC);
        return buf;
}

/*
 * Report the failure @r of @what, with the daemon's error in @error if it sent one (error-text.h: a
 * sentence, or with --json one JSON object); return the exit code.
 */
int report_error(pressure_client *c, int r, const char *what, const pressure_error *error) {
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;

        /* The sentence of a cgroup in none of the daemon's hierarchies names them; that of a path
         * the daemon found no cgroup directory at says what is there. */
        if ((streq_ptr(pressure_error_get_name(error), IDL_ERROR_NAME(NO_SUCH_CGROUP)) ||
             streq_ptr(pressure_error_get_name(error), IDL_ERROR_NAME(INVALID_CGROUP_PATH))) &&
            pressure_client_get_status(c, &status, NULL) >= 0) {
                _cleanup_json_ json_t *reply = json_loads(pressure_status_get_json(status), 0, NULL);
                json_t *cg = json_object_get(reply, "cgroup");

                error_text_set_roots(json_string_value(json_object_get(cg, "v2_root")),
                                     json_string_value(json_object_get(cg, "v1_memory_root")));
        }
        return error_report(stderr, arg_json, what, pressure_client_get_socket(c), r, pressure_error_get_name(error),
                            pressure_error_get_parameters(error));
}


/**
 * cgroup_check_exists - whether the daemon knows @cgroup, which nothing in its answer to @command named
 * @c: the client
 * @command: the command ("history")
 * @cgroup: the CGROUP of the command line
 *
 * Asks GetHeadroom(), which reads and registers nothing. Returns -1 unless the daemon answers
 * NoSuchCgroup or InvalidCgroupPath (another error says nothing of the path: no memory
 * controller there, a daemon before 0.4), else the exit status of that error, reported (1, 2).
 */
int cgroup_check_exists(pressure_client *c, const char *command, const char *cgroup) {
        _cleanup_(pressure_headroom_unrefp) pressure_headroom *h = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        int r = pressure_client_get_headroom(c, cgroup, &h, &error);

        /* Only what says the path names no cgroup: the headroom itself may be unavailable there. */
        if (r >= 0 || !(streq_ptr(pressure_error_get_name(error), IDL_ERROR_NAME(NO_SUCH_CGROUP)) ||
                        streq_ptr(pressure_error_get_name(error), IDL_ERROR_NAME(INVALID_CGROUP_PATH))))
                return -1;
        return report_error(c, r, command, error);
}

/* A client on the socket the command line names, for @command ("watch"); returns 0 or the exit status. */
int client_open(const char *command, pressure_client **ret) {
        pressure_client *c = NULL;
        int r;

        r = pressure_client_new(&c);
        if (r < 0)
                return cli_fail(command, r, "cannot make a client: %s", strerror(-r));
        if (arg_socket)
                r = pressure_client_set_socket(c, arg_socket);
        else if (arg_user)
                r = pressure_client_set_user(c);
        if (r < 0) {
                pressure_client_free(c);
                if (r == -ENXIO && !arg_socket)
                        return user_socket_error(command);
                return usage_error("", "cannot use the %s socket: %s", arg_socket ? "given" : "user", strerror(-r));
        }
        *ret = c;
        return 0;
}

/**
 * user_socket_error - report --user without $XDG_RUNTIME_DIR
 * @command: the command ("watch")
 *
 * The daemon and the Python module explain it alike. Returns EXIT_USAGE.
 */
int user_socket_error(const char *command) {
        _cleanup_free_ char *cmd = NULL;

        if (asprintf(&cmd, "%s ", command) < 0)
                cmd = NULL;
        return usage_error(cmd ?: "", "--user: $XDG_RUNTIME_DIR is not set to an absolute path, so there is no "
                           "per-user daemon to find (pressured --user listens in $XDG_RUNTIME_DIR/pressured); "
                           "run in a login session that sets it, or give the socket with --socket");
}

/* Handle a common option; returns true if it was one. */
bool common_option(int opt) {
        switch (opt) {
        case 'j':
                arg_json = true;
                cli_set_json(true);
                return true;
        case 's':
                arg_socket = optarg;
                return true;
        case 'u':
                arg_user = true;
                return true;
        default:
                return false;
        }
}

/* "some 150ms 2s" */
int parse_psi_option(const char *spec, pressure_stall *ret_stall, uint64_t *ret_threshold,
                     uint64_t *ret_window) {
        PsiTrigger t;

        if (psi_trigger_parse(spec, &t) < 0)
                return -EINVAL;
        *ret_stall = t.stall == PSI_STALL_FULL ? PRESSURE_STALL_FULL : PRESSURE_STALL_SOME;
        *ret_threshold = t.threshold_us;
        *ret_window = t.window_us;
        return 0;
}


uint64_t jget_u64(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t) json_integer_value(v) : 0;
}

const char *jget_str(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A trigger object in the words of the configuration: "some 100ms 1s (level medium)". */
static void format_trigger(char *buf, size_t size, json_t *trigger) {
        json_t *psi = json_object_get(trigger, "psi"), *vm = json_object_get(trigger, "vmpressure");
        const char *level = jget_str(trigger, "level");
        char t[PSI_TRIGGER_FORMAT_MAX];
        int n = 0;

        buf[0] = 0;
        if (json_is_object(psi))
                n = snprintf(buf, size, "%s", format_psi(t, jget_str(psi, "stall"), jget_u64(psi, "threshold_us"),
                                                         jget_u64(psi, "window_us")));
        else if (json_is_object(vm))
                n = snprintf(buf, size, "%s,%s", strna(jget_str(vm, "level")),
                             jget_str(vm, "mode") ?: "default");
        if (n < 0 || (size_t) n >= size)
                return;
        if (level)
                snprintf(buf + n, size - (size_t) n, "%s(level %s)", n > 0 ? " " : "", level);
        else if (n == 0)
                snprintf(buf, size, "-");
}

/*
 * The trigger of registration @reg, led by its resource unless that is
 * memory, the default: "cpu some 70ms 1s (level low)".
 */
void format_reg_trigger(char *buf, size_t size, json_t *reg) {
        const char *resource = jget_str(reg, "resource");
        int n = 0;

        if (resource && !streq(resource, "memory"))
                n = snprintf(buf, size, "%s ", resource);
        if (n < 0 || (size_t) n >= size)
                n = 0;
        format_trigger(buf + n, size - (size_t) n, json_object_get(reg, "trigger"));
}

/*
 * An episode object of GetStatus: "12.300s, 4 events, peak 22.10%" (or
 * "peak medium"; "peak unknown" for a PSI episode of injected events only).
 */
void format_episode(char *buf, size_t size, json_t *ep) {
        json_t *peak = json_object_get(ep, "peak");
        const char *level = jget_str(ep, "peak_level");
        char d[64];
        uint64_t events = jget_u64(ep, "events");
        int n;

        n = snprintf(buf, size, "%s, %" PRIu64 " event%s", format_duration(d, jget_u64(ep, "duration_us")), events,
                     events == 1 ? "" : "s");
        if (n < 0 || (size_t) n >= size)
                return;
        if (json_is_number(peak))
                snprintf(buf + n, size - (size_t) n, ", peak %.2f%%", json_number_value(peak));
        else if (level)
                snprintf(buf + n, size - (size_t) n, ", peak %s", level);
        else if (json_is_null(peak))
                snprintf(buf + n, size - (size_t) n, ", peak unknown");
}

/*
 * command_begin - the start of a command that takes only the common options
 * and, if @ret_cgroup is given, one optional CGROUP (in its normal form, see
 * cgroup_arg(); the caller frees it): parse the command line (--help prints
 * @help), then open the client into @ret_client. Returns -1 to go on, or
 * the exit status to end with.
 */
int command_begin(int argc, char **argv, const char *command, const char *help,
                  char **ret_cgroup, pressure_client **ret_client) {
        static const struct option options[] = { COMMON_OPTIONS, {} };
        char name[32];
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (common_option(opt))
                        continue;
                if (opt == 'h') {
                        fputs(help, stdout);
                        return 0;
                }
                return usage_error(command, NULL);
        }
        if (ret_cgroup && optind < argc) {
                r = cgroup_arg(command, argv[optind++], ret_cgroup);
                if (r != 0)
                        return r;
        }
        if (optind < argc)
                return usage_error(command, "unexpected argument '%s'", argv[optind]);
        /* "status " names the command "status". */
        snprintf(name, sizeof(name), "%.*s", (int) strcspn(command, " "), command);
        r = client_open(name, ret_client);
        return r != 0 ? r : -1;
}

/*
 * Parse the reply @text of @command into *@ret; with @array, the reply's
 * member of that name must be an array, returned in *@ret_array. Says so
 * and returns -EBADMSG if the reply is not that.
 */
int reply_parse(pressure_client *c, const char *command, const char *text, const char *array, json_t **ret,
                json_t **ret_array) {
        _cleanup_json_ json_t *reply = json_loads(text, 0, NULL);
        json_t *a = array ? json_object_get(reply, array) : NULL;

        if (!reply || (array && !json_is_array(a))) {
                (void) error_report(stderr, arg_json, command, pressure_client_get_socket(c), -EBADMSG, NULL, NULL);
                return -EBADMSG;
        }
        if (ret_array)
                *ret_array = a;
        *ret = TAKE_PTR(reply);
        return 0;
}

const char *node_value(char buf[static FORMAT_SIZE_MAX], const pressure_protection_node *n, pressure_protection_value what) {
        uint64_t v = 0;

        (void) pressure_protection_node_get_value(n, what, &v);
        return v == PRESSURE_UNLIMITED ? "max" : format_bytes(buf, v);
}
