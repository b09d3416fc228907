/* SPDX-License-Identifier: MIT */
/*
 * pressurectl: the command line of pressured. Talks to the daemon only
 * through libpressure's public API; jansson renders the JSON replies that
 * the library hands back as text.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config-build.h"
#include "cli.h"
#include "error-text.h"
#include "hook.h"
#include "pressure.h"
#include "trigger.h"
#include "top.h"
#include "notify.h"
#include "util.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static const char *arg_socket;
static bool arg_json;
static bool arg_user;

static void json_unrefp(json_t **p) {
        if (*p)
                json_decref(*p);
}
#define _cleanup_json_ _cleanup_(json_unrefp)

/* ---- Output helpers --------------------------------------------------------- */

/* "1.2G"-style size; "max" for unlimited. */
static const char *format_bytes(char buf[static FORMAT_SIZE_MAX], uint64_t v) {
        return v == PRESSURE_UNLIMITED ? "max" : format_size(buf, v);
}

/* A PSI trigger in the words of the configuration, "some 150ms 2s" (the shared formatter). */
static const char *format_psi(char buf[static PSI_TRIGGER_FORMAT_MAX], const char *stall, uint64_t threshold_us,
                              uint64_t window_us) {
        PsiTrigger t = { psi_stall_from_string(stall), threshold_us, window_us };

        if (psi_trigger_format(&t, PSI_TRIGGER_FORMAT_CONFIG, buf, PSI_TRIGGER_FORMAT_MAX) < 0)
                snprintf(buf, PSI_TRIGGER_FORMAT_MAX, "?");
        return buf;
}

/* Local time "2024-05-01 12:00:00.123" of a CLOCK_REALTIME microsecond stamp. */
static const char *format_time(char buf[static 64], uint64_t time_us) {
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

static const char *format_duration(char buf[static 64], uint64_t usec) {
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
static int report_error(pressure_client *c, int r, const char *what, const pressure_error *error) {
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;

        /* The cgroup is in none of the daemon's hierarchies: the sentence names them. */
        if (streq_ptr(pressure_error_get_name(error), IDL_ERROR_NAME(NO_SUCH_CGROUP)) &&
            pressure_client_get_status(c, &status, NULL) >= 0) {
                _cleanup_json_ json_t *reply = json_loads(pressure_status_get_json(status), 0, NULL);
                json_t *cg = json_object_get(reply, "cgroup");

                error_text_set_roots(json_string_value(json_object_get(cg, "v2_root")),
                                     json_string_value(json_object_get(cg, "v1_memory_root")));
        }
        return error_report(stderr, arg_json, what, pressure_client_get_socket(c), r, pressure_error_get_name(error),
                            pressure_error_get_parameters(error));
}


/* A client on the socket the command line names, for @command ("watch"); returns 0 or the exit status. */
static int client_open(const char *command, pressure_client **ret) {
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
                return usage_error("", "cannot use the %s socket: %s", arg_socket ? "given" : "user", strerror(-r));
        }
        *ret = c;
        return 0;
}

/* Common options of every command. */
#define COMMON_OPTIONS                                                  \
        { "help",    no_argument,       NULL, 'h' },                    \
        { "json",    no_argument,       NULL, 'j' },                    \
        { "socket",  required_argument, NULL, 's' },                    \
        { "user",    no_argument,       NULL, 'u' }

/* Handle a common option; returns true if it was one. */
static bool common_option(int opt) {
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
static int parse_psi_option(const char *spec, pressure_stall *ret_stall, uint64_t *ret_threshold,
                            uint64_t *ret_window) {
        PsiTrigger t;

        if (psi_trigger_parse(spec, &t) < 0)
                return -EINVAL;
        *ret_stall = t.stall == PSI_STALL_FULL ? PRESSURE_STALL_FULL : PRESSURE_STALL_SOME;
        *ret_threshold = t.threshold_us;
        *ret_window = t.window_us;
        return 0;
}

/* "medium" or "medium,hierarchy" */
static int parse_vmpressure_option(const char *spec, pressure_level *ret_level, pressure_vmpressure_mode *ret_mode) {
        _cleanup_free_ char *copy = strdup(spec);
        pressure_vmpressure_mode mode = PRESSURE_VMPRESSURE_MODE_UNSET;
        char *comma;
        int level;

        if (!copy)
                return -ENOMEM;
        comma = strchr(copy, ',');
        if (comma) {
                *comma++ = 0;
                if (streq(comma, "default"))
                        mode = PRESSURE_VMPRESSURE_MODE_DEFAULT;
                else if (streq(comma, "hierarchy"))
                        mode = PRESSURE_VMPRESSURE_MODE_HIERARCHY;
                else if (streq(comma, "local"))
                        mode = PRESSURE_VMPRESSURE_MODE_LOCAL;
                else
                        return -EINVAL;
        }
        level = pressure_level_from_string(copy);
        if (level < 0)
                return -EINVAL;
        *ret_level = (pressure_level) level;
        *ret_mode = mode;
        return 0;
}

/* ---- status ------------------------------------------------------------------- */

static uint64_t jget_u64(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t) json_integer_value(v) : 0;
}

static const char *jget_str(json_t *o, const char *key) {
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
static void format_reg_trigger(char *buf, size_t size, json_t *reg) {
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
static void format_episode(char *buf, size_t size, json_t *ep) {
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
static int command_begin(int argc, char **argv, const char *command, const char *help,
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
static int reply_parse(pressure_client *c, const char *command, const char *text, const char *array, json_t **ret,
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

/* The daemon's version, uptime, clients and cgroup roots, from GetStatus() reply @st. */
static void status_print_overview(json_t *st) {
        json_t *cg = json_object_get(st, "cgroup");
        char buf[64];

        printf("Version:        %s\n", strna(jget_str(st, "version")));
        printf("Uptime:         %s\n", format_duration(buf, jget_u64(st, "uptime_us")));
        if (jget_u64(st, "generation") > 0) {
                json_t *t = json_object_get(st, "takeover");

                printf("Generation:     %" PRIu64 " (took over %" PRIu64 " connection(s), %" PRIu64
                       " pressure proxy connection(s), %" PRIu64 " registration(s)%s)\n",
                       jget_u64(st, "generation"), jget_u64(t, "connections"), jget_u64(t, "proxied_clients"),
                       jget_u64(t, "registrations"),
                       json_is_true(json_object_get(t, "clean")) ? "" : " after a crash");
        }
        printf("Clients:        %" PRIu64 "\n", jget_u64(st, "clients"));
        printf("Subscriptions:  %" PRIu64 "\n", jget_u64(st, "subscriptions"));
        printf("Proxied:        %" PRIu64 "\n", jget_u64(st, "proxied_clients"));
        if (json_is_object(cg)) {
                printf("cgroup v2 root: %s\n", jget_str(cg, "v2_root") ?: "-");
                printf("cgroup v1 root: %s\n", jget_str(cg, "v1_memory_root") ?: "-");
                printf("Recursive protection: %s\n",
                       json_is_true(json_object_get(cg, "recursive_protection")) ? "yes" : "no");
        }
}

/* The table of registrations @regs (non-empty), columns as wide as their widest value. */
static void status_print_registration_table(json_t *regs) {
        int wc = (int) strlen("CGROUP"), ws = (int) strlen("SOURCE"), wt = (int) strlen("TRIGGER");
        char trig[128];
        json_t *v;
        size_t i;

        json_array_foreach(regs, i, v) {
                format_reg_trigger(trig, sizeof(trig), v);
                wc = MAX(wc, (int) strlen(strna(jget_str(v, "cgroup"))));
                ws = MAX(ws, (int) strlen(strna(jget_str(v, "source"))));
                wt = MAX(wt, (int) strlen(trig));
        }
        printf("  %-*s  %-*s  %-*s  %-11s  %s\n", wc, "CGROUP", ws, "SOURCE", wt, "TRIGGER", "SUBSCRIBERS",
               "EPISODE");
        json_array_foreach(regs, i, v) {
                json_t *ep = json_object_get(v, "episode");
                char epi[128] = "-";

                format_reg_trigger(trig, sizeof(trig), v);
                if (json_is_object(ep)) {
                        char rest[112];

                        format_episode(rest, sizeof(rest), ep);
                        snprintf(epi, sizeof(epi), "active %s", rest);
                }
                printf("  %-*s  %-*s  %-*s  %-11" PRIu64 "  %s\n", wc, strna(jget_str(v, "cgroup")),
                       ws, strna(jget_str(v, "source")), wt, trig, jget_u64(v, "subscribers"), epi);
        }
}

/* The registrations, then the processes proxied on each (memory-pressure sockets). */
static void status_print_registrations(json_t *regs) {
        char trig[128];
        json_t *v;
        size_t i;

        printf("\nRegistrations:");
        if (!json_is_array(regs) || json_array_size(regs) == 0) {
                printf(" none\n");
                return;
        }
        printf("\n");
        status_print_registration_table(regs);
        json_array_foreach(regs, i, v) {
                json_t *proxied = json_object_get(v, "proxied"), *p;
                size_t j;

                if (!json_is_array(proxied) || json_array_size(proxied) == 0)
                        continue;
                format_reg_trigger(trig, sizeof(trig), v);
                printf("\nProxied on %s (%s %s):\n", strna(jget_str(v, "cgroup")),
                       strna(jget_str(v, "source")), trig);
                json_array_foreach(proxied, j, p)
                        printf("  pid %-8" PRIu64 " %s  %s\n", jget_u64(p, "pid"),
                               strna(jget_str(p, "cgroup")), jget_str(p, "unit") ?: "-");
        }
}

/* Windows that are not multiples of 2 s, per uid against the quota. */
static void status_print_fast_triggers(json_t *fast) {
        json_t *users = json_object_get(fast, "users"), *v;
        size_t i;

        if (!json_is_object(fast))
                return;
        printf("\nFast PSI triggers: at most %" PRIu64 " per user other than root;",
               jget_u64(fast, "max_per_user"));
        if (!json_is_array(users) || json_array_size(users) == 0) {
                printf(" none in use\n");
                return;
        }
        printf("\n  %-10s  %s\n", "UID", "IN USE");
        json_array_foreach(users, i, v)
                printf("  %-10" PRIu64 "  %" PRIu64 "/%" PRIu64 "\n", jget_u64(v, "uid"),
                       jget_u64(v, "fast_triggers"), jget_u64(fast, "max_per_user"));
}

static void status_print_counters(json_t *counters) {
        const char *key;
        json_t *v;
        int w = 0;

        if (!json_is_object(counters))
                return;
        printf("\nCounters:\n");
        json_object_foreach(counters, key, v)
                w = MAX(w, (int) strlen(key));
        json_object_foreach(counters, key, v)
                printf("  %-*s  %" PRIu64 "\n", w, key, jget_u64(counters, key));
}

static int cmd_status(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        _cleanup_json_ json_t *st = NULL;
        const char *text;
        int r;

        r = command_begin(argc, argv, "status ",
                          "pressurectl [OPTIONS] status\n\n"
                          "Show the daemon's version, uptime, clients, subscriptions, the kernel\n"
                          "registrations in use and its counters.\n\n"
                          "  --json   print the GetStatus() reply as one JSON object\n",
                          NULL, &c);
        if (r >= 0)
                return r;
        r = pressure_client_get_status(c, &status, &error);
        if (r < 0)
                return report_error(c, r, "status", error);
        text = pressure_status_get_json(status);
        if (arg_json) {
                printf("%s\n", text);
                return 0;
        }

        if (reply_parse(c, "status", text, NULL, &st, NULL) < 0)
                return EXIT_DAEMON_ERROR;
        status_print_overview(st);
        status_print_registrations(json_object_get(st, "registrations"));
        status_print_fast_triggers(json_object_get(st, "fast_triggers"));
        status_print_counters(json_object_get(st, "counters"));
        return 0;
}

/* ---- history ------------------------------------------------------------------- */

/* One line of `history --json`: @episode with its registration's cgroup, source and trigger. */
static int print_episode_json(json_t *reg, json_t *episode, bool active) {
        _cleanup_json_ json_t *o = json_deep_copy(episode);
        _cleanup_free_ char *line = NULL;

        if (!o)
                return -ENOMEM;
        json_object_set(o, "cgroup", json_object_get(reg, "cgroup"));
        json_object_set(o, "source", json_object_get(reg, "source"));
        if (json_object_get(reg, "resource"))
                json_object_set(o, "resource", json_object_get(reg, "resource"));
        json_object_set(o, "trigger", json_object_get(reg, "trigger"));
        json_object_set_new(o, "active", json_boolean(active));
        line = json_dumps(o, JSON_DUMP_FLAGS);
        if (!line)
                return -ENOMEM;
        printf("%s\n", line);
        return 0;
}

static int cmd_history(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        _cleanup_json_ json_t *st = NULL;
        const char *text;
        _cleanup_free_ char *cgroup = NULL;
        json_t *regs, *v;
        unsigned shown = 0;
        size_t i;
        int r;

        r = command_begin(argc, argv, "history ",
                          "pressurectl [OPTIONS] history [CGROUP]\n\n"
                          "Show the recent pressure episodes of every registration (of CGROUP only,\n"
                          "if given): the active one and the last ones that ended. The daemon keeps\n"
                          "them only while somebody subscribes to the registration.\n\n"
                          "  --json   one JSON object per episode, with cgroup, source, resource and\n"
                          "           trigger\n",
                          &cgroup, &c);
        if (r >= 0)
                return r;
        r = pressure_client_get_status(c, &status, &error);
        if (r < 0)
                return report_error(c, r, "history", error);
        text = pressure_status_get_json(status);
        if (reply_parse(c, "history", text, "registrations", &st, &regs) < 0)
                return EXIT_DAEMON_ERROR;

        json_array_foreach(regs, i, v) {
                json_t *hist = json_object_get(v, "history"), *ep = json_object_get(v, "episode"), *h;
                char trig[128], a[64], b[64], fig[128];
                size_t k;

                if (cgroup && !streq_ptr(jget_str(v, "cgroup"), cgroup))
                        continue;
                if (!json_is_array(hist))
                        continue; /* no episodes for this source */
                if (arg_json) {
                        json_array_foreach(hist, k, h)
                                if (print_episode_json(v, h, false) < 0)
                                        return EXIT_DAEMON_ERROR;
                        if (json_is_object(ep) && print_episode_json(v, ep, true) < 0)
                                return EXIT_DAEMON_ERROR;
                        shown++;
                        continue;
                }
                format_reg_trigger(trig, sizeof(trig), v);
                printf("%s%s %s (%s):\n", shown > 0 ? "\n" : "", strna(jget_str(v, "cgroup")),
                       strna(jget_str(v, "source")), trig);
                if (json_array_size(hist) == 0 && !json_is_object(ep))
                        printf("  no episodes\n");
                json_array_foreach(hist, k, h) {
                        format_episode(fig, sizeof(fig), h);
                        printf("  %s .. %s  %s\n", format_time(a, jget_u64(h, "start_time_us")),
                               format_time(b, jget_u64(h, "end_time_us")), fig);
                }
                if (json_is_object(ep)) {
                        uint64_t now_mono = now_usec(CLOCK_MONOTONIC), since = jget_u64(ep, "active_since_us");

                        format_episode(fig, sizeof(fig), ep);
                        printf("  %s .. now (active)  %s\n",
                               format_time(a, now_usec(CLOCK_REALTIME) - (now_mono > since ? now_mono - since : 0)),
                               fig);
                }
                shown++;
        }
        if (shown == 0 && !arg_json)
                printf(cgroup ? "No registration with episodes on %s.\n" : "No registration with episodes.\n",
                       cgroup);
        return 0;
}

/* ---- protection ---------------------------------------------------------------- */

static unsigned path_depth(const char *path) {
        unsigned n = 0;

        for (const char *p = path; *p; p++)
                if (*p == '/' && p[1] && p[1] != '/')
                        n++;
        return n;
}

/* One line of `protection --json`: the node as the daemon sent it, an unlimited setting as null. */
static void print_node_json(const pressure_protection_node *n) {
        static const char *const keys[] = {
                [PRESSURE_PROTECTION_USAGE] = "usage",
                [PRESSURE_PROTECTION_MIN_SETTING] = "min",
                [PRESSURE_PROTECTION_LOW_SETTING] = "low",
                [PRESSURE_PROTECTION_EMIN] = "emin",
                [PRESSURE_PROTECTION_ELOW] = "elow",
                [PRESSURE_PROTECTION_MIN_USAGE] = "min_usage",
                [PRESSURE_PROTECTION_LOW_USAGE] = "low_usage",
                [PRESSURE_PROTECTION_CHILDREN_MIN_USAGE] = "children_min_usage",
                [PRESSURE_PROTECTION_CHILDREN_LOW_USAGE] = "children_low_usage",
        };
        _cleanup_json_ json_t *o = json_pack("{s:s}", "cgroup", strna(pressure_protection_node_get_cgroup(n)));
        _cleanup_free_ char *line = NULL;

        if (!o)
                return;
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                uint64_t v = 0;

                (void) pressure_protection_node_get_value(n, (pressure_protection_value) k, &v);
                json_object_set_new(o, keys[k], v == PRESSURE_UNLIMITED ? json_null() : json_integer((json_int_t) v));
        }
        json_object_set_new(o, "state",
                            json_string(strna(pressure_protection_state_to_string(pressure_protection_node_get_state(n)))));
        line = json_dumps(o, JSON_DUMP_FLAGS);
        if (line)
                printf("%s\n", line);
}

static const char *node_value(char buf[static FORMAT_SIZE_MAX], const pressure_protection_node *n, pressure_protection_value what) {
        uint64_t v = 0;

        (void) pressure_protection_node_get_value(n, what, &v);
        return v == PRESSURE_UNLIMITED ? "max" : format_bytes(buf, v);
}

/* The protection table: one line per node, indented by depth below the shallowest one. */
static void print_protection_table(const pressure_protection *p) {
        size_t n_nodes = pressure_protection_get_n_nodes(p);
        int wn = (int) strlen("CGROUP");
        unsigned base = UINT_MAX;

        for (size_t i = 0; i < n_nodes; i++)
                base = MIN(base, path_depth(strna(pressure_protection_node_get_cgroup(pressure_protection_get_node(p, i)))));
        for (size_t i = 0; i < n_nodes; i++) {
                const char *path = strna(pressure_protection_node_get_cgroup(pressure_protection_get_node(p, i)));
                const char *slash = strrchr(path, '/');
                const char *name = i == 0 || !slash || !slash[1] ? path : slash + 1;
                wn = MAX(wn, (int) (2 * (path_depth(path) - base) + strlen(name)));
        }
        printf("%-*s %7s %7s %7s %7s %7s  %s\n", wn, "CGROUP", "USAGE", "MIN", "LOW", "EMIN", "ELOW", "STATE");
        for (size_t i = 0; i < n_nodes; i++) {
                const pressure_protection_node *n = pressure_protection_get_node(p, i);
                const char *path = strna(pressure_protection_node_get_cgroup(n)), *slash = strrchr(path, '/');
                unsigned d = path_depth(path) - base;
                const char *name = i == 0 || !slash || !slash[1] ? path : slash + 1;
                char b[5][16];

                printf("%*s%-*s %7s %7s %7s %7s %7s  %s\n", (int) (2 * d), "", wn - (int) (2 * d), name,
                       node_value(b[0], n, PRESSURE_PROTECTION_USAGE), node_value(b[1], n, PRESSURE_PROTECTION_MIN_SETTING),
                       node_value(b[2], n, PRESSURE_PROTECTION_LOW_SETTING), node_value(b[3], n, PRESSURE_PROTECTION_EMIN),
                       node_value(b[4], n, PRESSURE_PROTECTION_ELOW),
                       strna(pressure_protection_state_to_string(pressure_protection_node_get_state(n))));
        }
}

static int cmd_protection(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_protection_unrefp) pressure_protection *p = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        _cleanup_free_ char *cgroup = NULL;
        int r;

        r = command_begin(argc, argv, "protection ",
                          "pressurectl [OPTIONS] protection [CGROUP]\n\n"
                          "Show the memory protection of CGROUP (default: the whole tree) and its\n"
                          "descendants as the daemon models it: usage, memory.min and memory.low,\n"
                          "the effective emin/elow, and the state (min, low, none).\n\n"
                          "  --json   print the nodes, one JSON object per line\n",
                          &cgroup, &c);
        if (r >= 0)
                return r;
        r = pressure_client_get_protection(c, cgroup, &p, &error);
        if (r < 0)
                return report_error(c, r, "protection", error);
        if (arg_json) {
                for (size_t i = 0; i < pressure_protection_get_n_nodes(p); i++)
                        print_node_json(pressure_protection_get_node(p, i));
                return 0;
        }
        print_protection_table(p);
        return 0;
}

/* ---- reclaim ------------------------------------------------------------------- */

/* Whether @cgroup is @subtree or below it; every cgroup is below "/" (and below NULL). */
static bool in_subtree(const char *cgroup, const char *subtree) {
        size_t n;

        if (!subtree || streq(subtree, "/"))
                return true;
        if (!cgroup)
                return false;
        n = strlen(subtree);
        return strncmp(cgroup, subtree, n) == 0 && (cgroup[n] == 0 || cgroup[n] == '/');
}

/* A stall figure of a reclaim entry, "0.04%", or "-" when the daemon has none. */
static const char *format_stall(char buf[static 32], int (*get)(const pressure_reclaim *, double *),
                                const pressure_reclaim *rc) {
        double v;

        if (get(rc, &v) < 0)
                return "-";
        snprintf(buf, 32, "%.2f%%", v);
        return buf;
}

/* The controller's table: the entries of @st at or below @subtree, columns as wide as their values. */
static void print_reclaim_table(const pressure_status *st, const char *subtree) {
        int wc = (int) strlen("CGROUP"), ws = (int) strlen("STATE");

        for (size_t i = 0; i < pressure_status_get_n_reclaim(st); i++) {
                const pressure_reclaim *rc = pressure_status_get_reclaim(st, i);
                const char *state = pressure_reclaim_state_to_string(pressure_reclaim_get_state(rc));

                if (!in_subtree(pressure_reclaim_get_cgroup(rc), subtree))
                        continue;
                wc = MAX(wc, (int) strlen(strna(pressure_reclaim_get_cgroup(rc))));
                ws = MAX(ws, (int) strlen(state ?: "unknown"));
        }
        printf("%-*s  %-*s  %9s  %7s  %7s  %8s  %7s\n", wc, "CGROUP", ws, "STATE", "RECLAIMED", "STEP", "STALL",
               "IO-STALL", "FLOOR");
        for (size_t i = 0; i < pressure_status_get_n_reclaim(st); i++) {
                const pressure_reclaim *rc = pressure_status_get_reclaim(st, i);
                const char *state = pressure_reclaim_state_to_string(pressure_reclaim_get_state(rc));
                /* Where the kernel cannot reclaim, the step, stalls and floor mean nothing. */
                bool none = pressure_reclaim_get_state(rc) == PRESSURE_RECLAIM_UNSUPPORTED;
                char b[3][FORMAT_SIZE_MAX], s[2][32];

                if (!in_subtree(pressure_reclaim_get_cgroup(rc), subtree))
                        continue;
                printf("%-*s  %-*s  %9s  %7s  %7s  %8s  %7s\n", wc, strna(pressure_reclaim_get_cgroup(rc)), ws,
                       state ?: "unknown", format_bytes(b[0], pressure_reclaim_get_reclaimed_bytes(rc)),
                       none ? "-" : format_bytes(b[1], pressure_reclaim_get_last_step_bytes(rc)),
                       none ? "-" : format_stall(s[0], pressure_reclaim_get_stall_pct, rc),
                       none ? "-" : format_stall(s[1], pressure_reclaim_get_io_stall_pct, rc),
                       none ? "-" : format_bytes(b[2], pressure_reclaim_get_floor_bytes(rc)));
        }
}

/*
 * `reclaim --json`: one object, {"reclaim": [...]}, with the entries at or
 * below @subtree as the daemon sent them (members this version does not
 * know included). Returns the exit status.
 */
static int print_reclaim_json(pressure_client *c, const pressure_status *status, const char *subtree) {
        _cleanup_json_ json_t *reply = NULL, *out = NULL;
        _cleanup_free_ char *line = NULL;
        json_t *list, *entries = json_array(), *v;
        size_t i;

        out = json_pack("{s:o}", "reclaim", entries);
        if (!out || reply_parse(c, "reclaim", pressure_status_get_json(status), NULL, &reply, NULL) < 0)
                return EXIT_DAEMON_ERROR;
        list = json_object_get(reply, "reclaim");
        json_array_foreach(list, i, v)
                if (in_subtree(jget_str(v, "cgroup"), subtree) && json_array_append(entries, v) < 0)
                        return EXIT_DAEMON_ERROR;
        line = json_dumps(out, JSON_DUMP_FLAGS);
        if (!line)
                return EXIT_DAEMON_ERROR;
        printf("%s\n", line);
        return 0;
}

/* Count the entries of @st at or below @subtree. */
static size_t count_reclaim(const pressure_status *st, const char *subtree) {
        size_t n = 0;

        for (size_t i = 0; i < pressure_status_get_n_reclaim(st); i++)
                if (in_subtree(pressure_reclaim_get_cgroup(pressure_status_get_reclaim(st, i)), subtree))
                        n++;
        return n;
}

static int cmd_reclaim(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        _cleanup_free_ char *subtree = NULL;
        size_t n;
        int r;

        r = command_begin(argc, argv, "reclaim ",
                          "pressurectl [OPTIONS] reclaim [CGROUP]\n\n"
                          "Show the proactive reclaim controller ([Reclaim] in pressured.conf): per\n"
                          "cgroup it holds (CGROUP and below only, if given) its state (probing,\n"
                          "backing-off, at-floor, unsupported), the memory reclaimed in all and by the\n"
                          "last step, the memory and io some stall over the last interval, and the\n"
                          "floor it never reclaims below.\n\n"
                          "  --json   print {\"reclaim\": [...]}, the entries as the daemon sent them\n",
                          &subtree, &c);
        if (r >= 0)
                return r;
        r = pressure_client_get_status(c, &status, &error);
        if (r < 0)
                return report_error(c, r, "reclaim", error);
        if (arg_json)
                return print_reclaim_json(c, status, subtree);

        n = count_reclaim(status, subtree);
        if (pressure_status_get_n_reclaim(status) == 0)
                printf("Proactive reclaim is off: [Reclaim] Cgroups= is empty or matches no cgroup.\n");
        else if (n == 0)
                printf("No cgroup under proactive reclaim at or below %s.\n", subtree);
        else
                print_reclaim_table(status, subtree);
        return 0;
}

/* ---- inject, reload ------------------------------------------------------------ */

static int cmd_inject(int argc, char **argv) {
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "level",    required_argument, NULL, 'l' },
                { "resource", required_argument, NULL, 'R' },
                {}
        };
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        const char *cgroup = NULL;
        int opt, r, level = -1, resource = PRESSURE_RESOURCE_MEMORY;
        uint64_t delivered = 0;

        while ((opt = getopt_long(argc, argv, "hl:", options, NULL)) >= 0) {
                if (common_option(opt))
                        continue;
                switch (opt) {
                case 'h':
                        printf("pressurectl [OPTIONS] inject [CGROUP] --level LEVEL [--resource R]\n\n"
                               "Send a synthetic pressure event of LEVEL (low, medium, critical) to every\n"
                               "pressure subscription on exactly CGROUP (default: the whole system).\n"
                               "Needs root or the daemon's InjectGroup=.\n\n"
                               "  -l --level LEVEL   the level to inject (required)\n"
                               "     --resource R   the subscriptions of memory (default), cpu or io\n"
                               "     --json         print {\"delivered\": N}\n");
                        return 0;
                case 'R':
                        resource = pressure_resource_from_string(optarg);
                        if (resource < 0)
                                return usage_error("inject ", "invalid resource '%s', expected memory, cpu or io",
                                                   optarg);
                        break;
                case 'l':
                        level = pressure_level_from_string(optarg);
                        if (level < 0)
                                return usage_error("inject ", "invalid level '%s', expected low, medium or critical", optarg);
                        break;
                default:
                        return usage_error("inject ", NULL);
                }
        }
        if (optind < argc) {
                cgroup = argv[optind++];
                r = cgroup_arg("inject ", cgroup, NULL);
                if (r != 0)
                        return r;
        }
        if (optind < argc)
                return usage_error("inject ", "unexpected argument '%s'", argv[optind]);
        if (level < 0)
                return usage_error("inject ", "--level is required");

        r = client_open("inject", &c);
        if (r != 0)
                return r;
        r = pressure_client_inject_resource(c, cgroup, (pressure_resource) resource, (pressure_level) level,
                                            &delivered, &error);
        if (r < 0)
                return report_error(c, r, "inject", error);
        if (arg_json)
                printf("{\"delivered\": %" PRIu64 "}\n", delivered);
        else
                printf("Delivered to %" PRIu64 " subscriber%s.\n", delivered, delivered == 1 ? "" : "s");
        return 0;
}

static int cmd_reload(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        int r;

        r = command_begin(argc, argv, "reload ",
                          "pressurectl [OPTIONS] reload\n\n"
                          "Make the daemon re-read its configuration. Live subscriptions survive.\n"
                          "Needs root.\n",
                          NULL, &c);
        if (r >= 0)
                return r;
        r = pressure_client_reload(c, &error);
        if (r < 0)
                return report_error(c, r, "reload", error);
        if (arg_json)
                printf("{}\n");
        return 0;
}

static int cmd_reexec(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        int r;

        r = command_begin(argc, argv, "reexec ",
                          "pressurectl [OPTIONS] reexec\n\n"
                          "Make the daemon execute its binary anew in the same process, handing the new\n"
                          "one every connection, subscription and kernel registration: the upgrade path\n"
                          "where no service manager restarts it. Returns once the new process serves.\n"
                          "Needs root.\n",
                          NULL, &c);
        if (r >= 0)
                return r;
        r = pressure_client_reexecute(c, &error);
        if (r < 0)
                return report_error(c, r, "reexec", error);
        if (arg_json)
                printf("{}\n");
        return 0;
}

/* ---- memory-pressure-env -------------------------------------------------------- */

/* @data in base64, into @out of at least 4 * ((@n + 2) / 3) + 1 bytes. */
static char *base64_encode(const uint8_t *data, size_t n, char *out) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *o = out;

        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) data[i] << 16;
                size_t k = n - i;

                if (k > 1)
                        v |= (uint32_t) data[i + 1] << 8;
                if (k > 2)
                        v |= data[i + 2];
                *o++ = alphabet[(v >> 18) & 63];
                *o++ = alphabet[(v >> 12) & 63];
                *o++ = k > 1 ? alphabet[(v >> 6) & 63] : '=';
                *o++ = k > 2 ? alphabet[v & 63] : '=';
        }
        *o = 0;
        return out;
}

/* What memory-pressure-env prints for each resource: systemd's variables, its unit setting, the socket. */
static const struct {
        const char *watch, *write, *unit_setting, *socket;
} pressure_env[] = {
        [PRESSURE_RESOURCE_MEMORY] = { "MEMORY_PRESSURE_WATCH", "MEMORY_PRESSURE_WRITE", "MemoryPressureWatch",
                                       "memory-pressure" },
        [PRESSURE_RESOURCE_CPU] = { "CPU_PRESSURE_WATCH", "CPU_PRESSURE_WRITE", "CPUPressureWatch", "cpu-pressure" },
        [PRESSURE_RESOURCE_IO] = { "IO_PRESSURE_WATCH", "IO_PRESSURE_WRITE", "IOPressureWatch", "io-pressure" },
};

/*
 * Print memory-pressure-env's lines for resource @r, the socket @path and
 * the trigger @kernel (its kernel form, with its NUL in the encoding, as
 * systemd's); with --json one object of the two variables. Returns the
 * exit status.
 */
static int print_memory_pressure_env(pressure_resource r, const char *path, const char *kernel) {
        char encoded[4 * ((PSI_TRIGGER_FORMAT_MAX + 3) / 3) + 1];
        _cleanup_json_ json_t *o = NULL;
        _cleanup_free_ char *line = NULL;

        base64_encode((const uint8_t *) kernel, strlen(kernel) + 1, encoded);
        if (!arg_json) {
                printf("[Service]\n"
                       "%s=skip\n"
                       "Environment=%s=%s\n"
                       "Environment=%s=%s\n", pressure_env[r].unit_setting, pressure_env[r].watch, path,
                       pressure_env[r].write, encoded);
                return 0;
        }
        o = json_pack("{s:s, s:s}", pressure_env[r].watch, path, pressure_env[r].write, encoded);
        line = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!line)
                return cli_fail("memory-pressure-env", -ENOMEM, "%s", strerror(ENOMEM));
        printf("%s\n", line);
        return 0;
}

static int cmd_memory_pressure_env(int argc, char **argv) {
        static const struct option options[] = { COMMON_OPTIONS, { "psi", required_argument, NULL, 'p' },
                                                 { "resource", required_argument, NULL, 'R' }, {} };
        PsiTrigger t = { PSI_STALL_SOME, 200000, 2000000 };
        int resource = PRESSURE_RESOURCE_MEMORY;
        _cleanup_free_ char *path = NULL;
        char kernel[PSI_TRIGGER_FORMAT_MAX];
        const char *reason;
        int opt, n;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (common_option(opt))
                        continue;
                switch (opt) {
                case 'h':
                        printf("pressurectl [OPTIONS] memory-pressure-env [--psi TRIGGER] [--resource R]\n\n"
                               "Print the [Service] lines of a drop-in that points an sd-event program\n"
                               "(sd_event_add_memory_pressure(), systemd >= 254; the cpu and io ones,\n"
                               "systemd >= 261) at pressured's pressure socket of that resource instead\n"
                               "of its own memory.pressure, cpu.pressure or io.pressure file.\n\n"
                               "  --psi 'STALL THR WIN'  the trigger to ask for (default 'some 200ms 2s')\n"
                               "  --resource R           memory (default), cpu or io: which variables and socket\n"
                               "  --user                 the per-user daemon's socket in $XDG_RUNTIME_DIR\n"
                               "  --socket PATH          the daemon's varlink socket; the memory-pressure\n"
                               "                         socket is next to it\n"
                               "  --json                 print {\"MEMORY_PRESSURE_WATCH\": ..., \"MEMORY_PRESSURE_WRITE\": ...}\n"
                               "                         (CPU_ or IO_ with --resource)\n");
                        return 0;
                case 'p': {
                        pressure_stall stall;

                        if (parse_psi_option(optarg, &stall, &t.threshold_us, &t.window_us) < 0)
                                return usage_error("memory-pressure-env ", "invalid --psi '%s'", optarg);
                        t.stall = stall == PRESSURE_STALL_FULL ? PSI_STALL_FULL : PSI_STALL_SOME;
                        break;
                }
                case 'R':
                        resource = pressure_resource_from_string(optarg);
                        if (resource < 0)
                                return usage_error("memory-pressure-env ",
                                                   "invalid resource '%s', expected memory, cpu or io", optarg);
                        break;
                default:
                        return usage_error("memory-pressure-env ", NULL);
                }
        }
        if (optind < argc)
                return usage_error("memory-pressure-env ", "unexpected argument '%s'", argv[optind]);
        if (psi_trigger_check(&t, &reason) < 0)
                return usage_error("memory-pressure-env ", "invalid --psi: %s", reason);

        if (arg_socket) {
                const char *slash = strrchr(arg_socket, '/');

                n = asprintf(&path, "%.*s/%s", slash ? (int) (slash - arg_socket) : 1, slash ? arg_socket : ".",
                             pressure_env[resource].socket);
        } else if (arg_user) {
                const char *rt = getenv("XDG_RUNTIME_DIR");

                if (!rt || rt[0] != '/')
                        return usage_error("memory-pressure-env ", "--user needs $XDG_RUNTIME_DIR");
                n = asprintf(&path, "%s/pressured/%s", rt, pressure_env[resource].socket);
        } else
                n = asprintf(&path, "/run/pressured/%s", pressure_env[resource].socket);
        if (n < 0)
                return EXIT_DAEMON_ERROR;
        n = psi_trigger_format(&t, PSI_TRIGGER_FORMAT_KERNEL, kernel, sizeof(kernel));
        if (n < 0)
                return EXIT_DAEMON_ERROR;
        return print_memory_pressure_env((pressure_resource) resource, path, kernel);
}

/* ---- watch ---------------------------------------------------------------------- */

typedef struct Watch {
        uint64_t count;    /* exit after this many events; 0 = never */
        uint64_t received;
        bool until_cleared; /* exit 0 at the first "cleared" */
        int exit_code;     /* >= 0: stop with this code */
        Hook *hook;        /* --exec: runs for each event; NULL without */
} Watch;

static void print_counters(const pressure_event *e) {
        static const char *const names[] = { "low", "high", "max", "oom", "oom_kill", "oom_group_kill" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                uint64_t v, d;

                if (pressure_event_get_memory_event(e, (pressure_memory_event) i, &v) < 0)
                        continue;
                printf(" %s=%" PRIu64, names[i], v);
                if (pressure_event_get_memory_event_delta(e, (pressure_memory_event) i, &d) >= 0 && d > 0)
                        printf("(+%" PRIu64 ")", d);
        }
}

static void print_node(const pressure_protection_node *n) {
        char b[5][FORMAT_SIZE_MAX];

        printf(" usage=%s min=%s low=%s emin=%s elow=%s", node_value(b[0], n, PRESSURE_PROTECTION_USAGE),
               node_value(b[1], n, PRESSURE_PROTECTION_MIN_SETTING), node_value(b[2], n, PRESSURE_PROTECTION_LOW_SETTING),
               node_value(b[3], n, PRESSURE_PROTECTION_EMIN), node_value(b[4], n, PRESSURE_PROTECTION_ELOW));
}

/*
 * The killers a kills subscription hears, " by kernel, systemd-oomd", then
 * those that cannot report here and why: "; systemd-oomd cannot report
 * here: REASON", or with none heard "; no killer can report here: kernel:
 * REASON; systemd-oomd: REASON". A daemon that gives no reasons (before
 * 0.4) and hears nobody: " (no killer reports yet)".
 */
static void print_kill_sources(FILE *f, const pressure_event *e) {
        size_t n = pressure_event_get_n_kill_sources(e), m = pressure_event_get_n_unavailable_kill_sources(e);
        const char *reason = NULL;

        if (pressure_event_get_source(e) != PRESSURE_SOURCE_KILLS)
                return;
        if (n == 0 && m == 0)
                fprintf(f, " (no killer reports yet)");
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s%s", i > 0 ? ", " : " by ", pressure_event_get_kill_source(e, i));
        if (n == 0 && m > 0)
                fprintf(f, "; no killer can report here: ");
        for (size_t i = 0; i < m; i++) {
                const char *who = pressure_event_get_unavailable_kill_source(e, i, &reason);

                if (n > 0)
                        fprintf(f, "; %s cannot report here: %s", strna(who), strna(reason));
                else
                        fprintf(f, "%s%s: %s", i > 0 ? "; " : "", strna(who), strna(reason));
        }
}

/*
 * The header line of a watch, from its subscribed event, and again from a
 * trigger_changed one: "Watching CGROUP: SOURCE for level L (TRIGGER)...".
 */
static void print_subscribed(FILE *f, const pressure_event *e) {
        const pressure_trigger *t = pressure_event_get_trigger(e);
        char a[PSI_TRIGGER_FORMAT_MAX];
        pressure_vmpressure_mode mode = PRESSURE_VMPRESSURE_MODE_UNSET;
        pressure_level vl = PRESSURE_LEVEL_NONE;
        uint64_t threshold, window;
        pressure_stall stall;

        fprintf(f, "%s %s: %s",
                pressure_event_get_kind(e) == PRESSURE_EVENT_TRIGGER_CHANGED ? "After a reload of the daemon, watching"
                                                                             : "Watching",
                pressure_event_get_cgroup(e), strna(pressure_source_to_string(pressure_event_get_source(e))));
        /* Memory is the default and goes without saying. */
        if (pressure_event_get_resource(e) != PRESSURE_RESOURCE_MEMORY)
                fprintf(f, " on %s", strna(pressure_resource_to_string(pressure_event_get_resource(e))));
        if (pressure_trigger_get_level(t) != PRESSURE_LEVEL_NONE)
                fprintf(f, " for level %s", pressure_level_to_string(pressure_trigger_get_level(t)));
        if (pressure_trigger_get_psi(t, &stall, &threshold, &window) >= 0)
                fprintf(f, " (%s)", format_psi(a, stall == PRESSURE_STALL_FULL ? "full" : "some", threshold, window));
        if (pressure_trigger_get_vmpressure(t, &vl, &mode) >= 0)
                fprintf(f, " (vmpressure %s%s%s)", strna(pressure_level_to_string(vl)),
                        mode ? "," : "",
                        mode == PRESSURE_VMPRESSURE_MODE_HIERARCHY ? "hierarchy" :
                        mode == PRESSURE_VMPRESSURE_MODE_LOCAL ? "local" :
                        mode == PRESSURE_VMPRESSURE_MODE_DEFAULT ? "default" : "");
        print_kill_sources(f, e);
        if (pressure_event_is_adjusted(e)) {
                const char *reason = pressure_event_get_adjusted_reason(e);

                fprintf(f, ", adjusted by the daemon%s%s", reason ? ": " : "", reason ?: "");
        }
        fprintf(f, "\n");
        fflush(f);
}

static void print_psi(const pressure_event *e) {
        double a10, a60, a300;

        if (pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 10, &a10) < 0)
                return;
        (void) pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 60, &a60);
        (void) pressure_event_get_psi_avg(e, PRESSURE_STALL_SOME, 300, &a300);
        printf(" some=%.2f/%.2f/%.2f", a10, a60, a300);
        if (pressure_event_get_psi_avg(e, PRESSURE_STALL_FULL, 10, &a10) < 0)
                return;
        (void) pressure_event_get_psi_avg(e, PRESSURE_STALL_FULL, 60, &a60);
        (void) pressure_event_get_psi_avg(e, PRESSURE_STALL_FULL, 300, &a300);
        printf(" full=%.2f/%.2f/%.2f", a10, a60, a300);
}

/* " resource=cpu" for an event about cpu or io; nothing for memory, the default. */
static void print_resource(const pressure_event *e) {
        pressure_resource r = pressure_event_get_resource(e);

        if (r != PRESSURE_RESOURCE_MEMORY)
                printf(" resource=%s", strna(pressure_resource_to_string(r)));
}

static void print_cleared(const pressure_event *e) {
        const pressure_episode *ep = pressure_event_get_episode(e);
        pressure_level level = pressure_event_get_level(e);
        char d[64];
        double peak;

        if (level != PRESSURE_LEVEL_NONE)
                printf(" %s", pressure_level_to_string(level));
        printf(" source=%s", strna(pressure_source_to_string(pressure_event_get_source(e))));
        print_resource(e);
        printf(" seq=%" PRIu64, pressure_event_get_seq(e));
        if (!ep)
                return;
        printf(" duration=%s events=%" PRIu64, format_duration(d, pressure_episode_get_duration_us(ep)),
               pressure_episode_get_events(ep));
        if (pressure_episode_get_peak(ep, &peak) >= 0)
                printf(" peak=%.2f%%", peak);
        else if (pressure_episode_get_peak_level(ep) != PRESSURE_LEVEL_NONE)
                printf(" peak=%s", pressure_level_to_string(pressure_episode_get_peak_level(ep)));
        else if (pressure_event_get_source(e) == PRESSURE_SOURCE_PSI)
                printf(" peak=unknown"); /* an episode of injected events only */
}

/*
 * A kill: "2026-12-01 21:40:03  killed  CGROUP  by systemd-oomd (memory-pressure)",
 * with ", 2 kills" in the parentheses when the event reports more than one.
 */
static void print_killed(const pressure_event *e) {
        uint64_t t = pressure_event_get_time_us(e), count = pressure_event_get_count(e);
        time_t sec = (time_t) ((t ?: now_usec(CLOCK_REALTIME)) / USEC_PER_SEC);
        char tb[64] = "-";
        struct tm tm;

        if (localtime_r(&sec, &tm))
                strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M:%S", &tm);
        printf("%s  killed  %s  by %s (%s", tb, pressure_event_get_cgroup(e), strna(pressure_event_get_killed_by(e)),
               strna(pressure_event_get_reason(e)));
        if (count > 1)
                printf(", %" PRIu64 " kills", count);
        printf(")");
        if (pressure_event_get_missed(e) > 0)
                printf("  missed=%" PRIu64, pressure_event_get_missed(e));
        printf("\n");
}

static void print_event_human(const pressure_event *e) {
        pressure_event_kind kind = pressure_event_get_kind(e);
        char tb[64];

        if (kind == PRESSURE_EVENT_KILLED) {
                print_killed(e);
                return;
        }

        printf("%s %s %s", format_time(tb, pressure_event_get_time_us(e)), pressure_event_get_cgroup(e),
               pressure_event_kind_to_string(kind));
        switch (kind) {
        case PRESSURE_EVENT_PRESSURE:
                printf(" %s source=%s", strna(pressure_level_to_string(pressure_event_get_level(e))),
                       strna(pressure_source_to_string(pressure_event_get_source(e))));
                print_resource(e);
                if (pressure_event_is_synthetic(e))
                        printf(" synthetic");
                printf(" count=%" PRIu64 " seq=%" PRIu64, pressure_event_get_count(e), pressure_event_get_seq(e));
                print_psi(e);
                break;
        case PRESSURE_EVENT_MEMORY_EVENTS:
                printf(" seq=%" PRIu64, pressure_event_get_seq(e));
                print_counters(e);
                break;
        case PRESSURE_EVENT_CLEARED:
                print_cleared(e);
                break;
        case PRESSURE_EVENT_PROTECTION:
                printf(" %s -> %s seq=%" PRIu64,
                       strna(pressure_protection_state_to_string(pressure_event_get_previous_protection_state(e))),
                       strna(pressure_protection_state_to_string(pressure_event_get_protection_state(e))),
                       pressure_event_get_seq(e));
                if (pressure_event_get_protection_node(e))
                        print_node(pressure_event_get_protection_node(e));
                break;
        default:
                break;
        }
        if (pressure_event_get_missed(e) > 0)
                printf(" missed=%" PRIu64, pressure_event_get_missed(e));
        printf("\n");
}

static int on_watch_event(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        pressure_event_kind kind = pressure_event_get_kind(e);
        Watch *w = userdata;

        switch (kind) {
        case PRESSURE_EVENT_SUBSCRIBED:
                /* The confirmation is not an event to count: a header line, or with --json the event as sent
                 * (it carries the trigger the daemon registered). */
                if (arg_json)
                        printf("%s\n", pressure_event_get_json(e));
                else
                        print_subscribed(stdout, e);
                fflush(stdout);
                return 0;
        case PRESSURE_EVENT_TRIGGER_CHANGED:
                /* Not an event to count either: the header again, with the new trigger. */
                if (arg_json)
                        printf("%s\n", pressure_event_get_json(e));
                else
                        print_subscribed(stdout, e);
                fflush(stdout);
                return 0;
        case PRESSURE_EVENT_RECONNECTED:
                if (arg_json)
                        printf("{\"kind\":\"reconnected\"}\n");
                else
                        fprintf(stderr, "pressurectl: reconnected to the daemon; events may have been missed\n");
                fflush(stdout);
                return 0;
        case PRESSURE_EVENT_ERROR:
                /* The error of this subscription: the daemon refused it (at first or on a reconnect), or
                 * it could not be reached. */
                w->exit_code = report_error(pressure_subscription_get_client(sub),
                                            pressure_error_get_errno(pressure_event_get_error(e)), "watch",
                                            pressure_event_get_error(e));
                return 0;
        default:
                break;
        }
        /* The watch is over: what else came in the same read is not shown, counted, or run. */
        if (w->exit_code >= 0)
                return 0;

        if (arg_json)
                printf("%s\n", pressure_event_get_json(e));
        else
                print_event_human(e);
        fflush(stdout);
        if (w->hook)
                (void) hook_submit(w->hook, e);

        w->received++;
        if (kind == PRESSURE_EVENT_REMOVED || (w->count > 0 && w->received >= w->count) ||
            (w->until_cleared && kind == PRESSURE_EVENT_CLEARED))
                w->exit_code = 0;
        return 0;
}

/*
 * Where "--exec" is in watch's arguments, or -1: what follows it is the hook's
 * command line, not ours. The values of options that take one are skipped,
 * and "--" ends the search.
 */
static int watch_find_exec(int argc, char **argv) {
        static const char *const with_value[] = {
                "--level", "--psi", "--vmpressure", "--count",
                "--timeout", "--min-interval", "--socket", "--exec-timeout",
        };

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (streq(a, "--exec"))
                        return i;
                if (streq(a, "--"))
                        break;
                if (a[0] == '-' && a[1] == '-') {
                        for (size_t k = 0; k < ELEMENTSOF(with_value); k++)
                                if (streq(a, with_value[k])) {
                                        i++;
                                        break;
                                }
                } else if (a[0] == '-') {
                        /* Short options, maybe grouped: one of -l, -n, -t last takes the next argument. */
                        for (const char *o = a + 1; *o; o++)
                                if (strchr("lnt", *o)) {
                                        if (o[1] == '\0')
                                                i++;
                                        break;
                                }
                }
        }
        return -1;
}

/* pressure_client_wait(), also waking up for the hook's end and its kill deadline. */
static int watch_wait(pressure_client *c, Hook *hook, uint64_t timeout_usec) {
        struct pollfd p[2];
        uint64_t due;
        int r, ms;

        if (!hook)
                return pressure_client_wait(c, timeout_usec);

        r = pressure_client_get_timeout(c, &due);
        if (r < 0)
                return r;
        if (due != PRESSURE_TIMEOUT_INFINITE) {
                uint64_t now = now_usec(CLOCK_MONOTONIC);
                due = due > now ? due - now : 0;
        }
        timeout_usec = MIN(timeout_usec, MIN(due, hook_get_timeout(hook)));
        if (timeout_usec == PRESSURE_TIMEOUT_INFINITE)
                ms = -1;
        else
                ms = (int) MIN((timeout_usec + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) INT32_MAX);
        p[0] = (struct pollfd) { .fd = pressure_client_get_fd(c), .events = (short) pressure_client_get_events(c) };
        p[1] = (struct pollfd) { .fd = hook_get_fd(hook), .events = POLLIN }; /* -1: ignored */
        if (poll(p, ELEMENTSOF(p), ms) < 0 && errno != EINTR)
                return -errno;
        hook_process(hook);
        return pressure_client_process(c);
}

/* Subscribe and handle events until the watch is over; returns the exit status. */
static int watch_run(pressure_client *c, const pressure_selector *sel, Watch *w, uint64_t deadline) {
        int r;

        /* The daemon's answer comes to on_watch_event() like any event, so --timeout covers it too. */
        r = pressure_client_subscribe_async(c, sel, on_watch_event, w, NULL);
        if (r < 0)
                return report_error(c, r, "watch", NULL);

        while (w->exit_code < 0) {
                uint64_t now = now_usec(CLOCK_MONOTONIC), left = PRESSURE_TIMEOUT_INFINITE;

                if (deadline != PRESSURE_TIMEOUT_INFINITE) {
                        if (now >= deadline)
                                return error_report_timeout(stderr, arg_json, "watch", w->received);
                        left = deadline - now;
                }
                r = watch_wait(c, w->hook, left);
                if (r < 0)
                        return report_error(c, r, "watch", NULL);
        }
        return w->exit_code;
}

/* What "pressurectl watch" was asked to do: its command line, parsed. */
typedef struct WatchOptions {
        pressure_selector *sel; /* the cgroup, the source and --min-interval */
        unsigned selectors;     /* how many of --level, --psi, ... were given */
        bool no_episodes;       /* the selector's events have no episodes (--memory-events, --protection) */
        bool not_psi;           /* the selector is no PSI one (--vmpressure, --memory-events, --protection) */
        pressure_resource resource; /* --resource, memory by default */
        uint64_t count;         /* --count, 0 for none */
        bool until_cleared;
        uint64_t deadline;      /* CLOCK_MONOTONIC end of --timeout, or PRESSURE_TIMEOUT_INFINITE */
        bool wait_for_daemon;
        char **exec_argv;       /* --exec's command, NULL-terminated; NULL without --exec */
        uint64_t exec_timeout;  /* --exec-timeout, 0 for none */
        bool has_exec_timeout;
} WatchOptions;

static void watch_help(void) {
        printf("pressurectl [OPTIONS] watch [CGROUP] [SELECTOR] [--count N] [--timeout SEC]\n"
               "                            [--exec-timeout SEC] [--exec CMD [ARG...]]\n\n"
               "Subscribe to CGROUP (default: the whole system) and print one line per\n"
               "event. Survives daemon restarts by reconnecting.\n\n"
               "Selectors (one; the default is --level low):\n"
               "  -l --level LEVEL          low, medium or critical; the daemon picks the source\n"
               "     --psi 'STALL THR WIN'  explicit PSI trigger, e.g. 'some 150ms 2s'\n"
               "     --vmpressure L[,MODE]  cgroup v1 vmpressure; MODE default, hierarchy, local\n"
               "     --memory-events        changes of memory.events\n"
               "     --protection           changes of the effective-protection state\n"
               "     --kills                processes killed for lack of memory in CGROUP or\n"
               "                            below it, by the kernel or by systemd-oomd\n\n"
               "  -r --resource R           what --level and --psi watch: memory (default), cpu\n"
               "                            or io pressure\n\n"
               "Options:\n"
               "  -n --count N              exit 0 after N events (the confirmation does not count)\n"
               "     --until-cleared        exit 0 when the pressure episode is over (\"cleared\")\n"
               "  -t --timeout SEC          exit 124 if they have not arrived within SEC seconds\n"
               "     --min-interval MS      at most one event per MS milliseconds\n"
               "     --wait                 wait for the daemon if it is not running yet\n"
               "     --json                 print the events as received, one JSON object per line,\n"
               "                            the \"subscribed\" one first; no header\n\n"
               "Hooks:\n"
               "     --exec CMD [ARG...]    run CMD for each event, one run at a time; events that\n"
               "                            come during a run are merged into the next one. Must be\n"
               "                            last: the rest of the line is the command. The event is\n"
               "                            in $PRESSURE_KIND, $PRESSURE_LEVEL, $PRESSURE_CGROUP,\n"
               "                            $PRESSURE_SOURCE, $PRESSURE_SEQ, $PRESSURE_MISSED,\n"
               "                            $PRESSURE_SYNTHETIC, $PRESSURE_EVENT (JSON) and\n"
               "                            $PRESSURE_COALESCED (events in this run, 1 or more)\n"
               "     --exec-timeout SEC     SIGTERM a run after SEC seconds, SIGKILL it after as\n"
               "                            long again (at most 5 s more)\n");
}

/* Apply one of the selector options (-l -p -v -m -P -K); returns 0, or the exit status of a usage error. */
static int watch_parse_selector(WatchOptions *o, int opt, const char *arg) {
        switch (opt) {
        case 'l': {
                int level = pressure_level_from_string(arg);
                if (level < 0)
                        return usage_error("watch ", "invalid level '%s', expected low, medium or critical", arg);
                (void) pressure_selector_set_level(o->sel, (pressure_level) level);
                break;
        }
        case 'p': {
                pressure_stall stall;
                uint64_t t, win;

                if (parse_psi_option(arg, &stall, &t, &win) < 0 || pressure_selector_set_psi(o->sel, stall, t, win) < 0)
                        return usage_error("watch ", "invalid PSI trigger '%s', expected e.g. 'some 150ms 2s'", arg);
                break;
        }
        case 'v': {
                pressure_level level;
                pressure_vmpressure_mode mode;

                if (parse_vmpressure_option(arg, &level, &mode) < 0 ||
                    pressure_selector_set_vmpressure(o->sel, level, mode) < 0)
                        return usage_error("watch ", "invalid vmpressure '%s', expected LEVEL[,MODE]", arg);
                o->not_psi = true;
                break;
        }
        case 'm':
                (void) pressure_selector_set_memory_events(o->sel);
                o->no_episodes = o->not_psi = true;
                break;
        case 'P':
                (void) pressure_selector_set_protection(o->sel);
                o->no_episodes = o->not_psi = true;
                break;
        case 'K':
                (void) pressure_selector_set_kills(o->sel);
                o->no_episodes = o->not_psi = true;
                break;
        }
        o->selectors++;
        return 0;
}

/* The longest --timeout and --exec-timeout, in seconds. */
#define WATCH_SECONDS_MAX 1e9

/* Apply one option other than a selector and --help; returns 0, or the exit status of a usage error. */
static int watch_parse_option(WatchOptions *o, int opt, const char *arg) {
        uint64_t u;

        switch (opt) {
        case 'n':
                if (parse_uint(arg, UINT64_MAX, &o->count) < 0 || o->count == 0)
                        return usage_error("watch ", "invalid count '%s', expected a whole number from 1 to %" PRIu64, arg,
                                           UINT64_MAX);
                return 0;
        case 't':
                if (parse_seconds(arg, WATCH_SECONDS_MAX, &u) < 0)
                        return usage_error("watch ", "invalid timeout '%s', expected seconds from 0 to %.0f (fractions allowed)",
                                           arg, WATCH_SECONDS_MAX);
                o->deadline = now_usec(CLOCK_MONOTONIC) + u;
                return 0;
        case 'i':
                if (parse_uint(arg, INT32_MAX, &u) < 0 || pressure_selector_set_min_interval_ms(o->sel, u) < 0)
                        return usage_error("watch ", "invalid interval '%s', expected milliseconds from 0 to %d", arg,
                                           INT32_MAX);
                return 0;
        case 'w':
                o->wait_for_daemon = true;
                return 0;
        case 'C':
                o->until_cleared = true;
                return 0;
        case 'r': {
                int r = pressure_resource_from_string(arg);

                if (r < 0)
                        return usage_error("watch ", "invalid resource '%s', expected memory, cpu or io", arg);
                o->resource = (pressure_resource) r;
                (void) pressure_selector_set_resource(o->sel, o->resource);
                return 0;
        }
        case 'X':
                if (parse_seconds(arg, WATCH_SECONDS_MAX, &o->exec_timeout) < 0 || o->exec_timeout == 0)
                        return usage_error("watch ", "invalid exec timeout '%s', expected seconds over 0, at most %.0f "
                                           "(fractions allowed)", arg, WATCH_SECONDS_MAX);
                o->has_exec_timeout = true;
                return 0;
        default:
                return usage_error("watch ", NULL);
        }
}

/*
 * Parse watch's command line into @o (its selector is allocated here; the
 * caller frees it). Returns -1 if the watch is to run, else the exit status
 * to end with: 0 after --help, EXIT_USAGE for a bad command line.
 */
static int watch_parse(int argc, char **argv, WatchOptions *o) {
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "level",         required_argument, NULL, 'l' },
                { "psi",           required_argument, NULL, 'p' },
                { "vmpressure",    required_argument, NULL, 'v' },
                { "memory-events", no_argument,       NULL, 'm' },
                { "protection",    no_argument,       NULL, 'P' },
                { "kills",         no_argument,       NULL, 'K' },
                { "count",         required_argument, NULL, 'n' },
                { "timeout",       required_argument, NULL, 't' },
                { "min-interval",  required_argument, NULL, 'i' },
                { "wait",          no_argument,       NULL, 'w' },
                { "until-cleared", no_argument,       NULL, 'C' },
                { "resource",      required_argument, NULL, 'r' },
                /* Taken off by watch_find_exec(); listed so that "--exec=CMD" is not "--exec-timeout=CMD". */
                { "exec",          no_argument,       NULL, 'x' },
                { "exec-timeout",  required_argument, NULL, 'X' },
                {}
        };
        int opt, r, exec_at;

        r = pressure_selector_new(&o->sel);
        if (r < 0)
                return EXIT_DAEMON_ERROR;

        /* "--exec CMD [ARG...]" ends watch's own arguments: getopt must not see the command's. */
        exec_at = watch_find_exec(argc, argv);
        if (exec_at >= 0) {
                if (exec_at + 1 >= argc)
                        return usage_error("watch ", "--exec needs a command: --exec CMD [ARG...]");
                o->exec_argv = argv + exec_at + 1; /* argv[argc] is NULL */
                argc = exec_at;
        }

        while ((opt = getopt_long(argc, argv, "hl:n:t:r:", options, NULL)) >= 0) {
                if (common_option(opt))
                        continue;
                if (opt == 'h') {
                        watch_help();
                        return 0;
                }
                r = opt && strchr("lpvmPK", opt) ? watch_parse_selector(o, opt, optarg) : watch_parse_option(o, opt, optarg);
                if (r != 0)
                        return r;
        }
        if (o->selectors > 1)
                return usage_error("watch ",
                                   "give at most one of --level, --psi, --vmpressure, --memory-events, --protection, --kills");
        if (o->resource != PRESSURE_RESOURCE_MEMORY && o->resource != PRESSURE_RESOURCE_NONE && o->not_psi)
                return usage_error("watch ",
                                   "--resource %s needs --level or --psi: the other selectors watch memory only",
                                   pressure_resource_to_string(o->resource));
        if (o->until_cleared && o->no_episodes)
                return usage_error("watch ", "--until-cleared needs a pressure selector (--level, --psi, --vmpressure)");
        if (optind < argc) {
                r = cgroup_arg("watch ", argv[optind], NULL);
                if (r != 0)
                        return r;
                (void) pressure_selector_set_cgroup(o->sel, argv[optind++]);
        }
        if (optind < argc)
                return usage_error("watch ", "unexpected argument '%s'", argv[optind]);
        if (o->has_exec_timeout && !o->exec_argv)
                return usage_error("watch ", "--exec-timeout needs --exec CMD");
        return -1;
}

/* Connect, set up the --exec hook, subscribe and print until the watch is over; returns the exit status. */
static int watch_start(const WatchOptions *o) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(hook_freep) Hook *hook = NULL;
        Watch w = { .count = o->count, .until_cleared = o->until_cleared, .exit_code = -1 };
        int r;

        r = client_open("watch", &c);
        if (r != 0)
                return r;
        (void) pressure_client_set_wait_for_daemon(c, o->wait_for_daemon);
        if (o->exec_argv) {
                r = hook_new(o->exec_argv, o->exec_timeout, &hook);
                if (r < 0)
                        return cli_fail("watch", r, "cannot set up the hook: %s", strerror(-r));
                hook_forward_signals();
                w.hook = hook;
        }

        r = watch_run(c, o->sel, &w, o->deadline);
        if (hook) {
                /* A watch that ended well runs the event still waiting; any end waits for the run going on. */
                if (r != 0)
                        hook_drop_pending(hook);
                hook_drain(hook);
        }
        return r;
}

static int cmd_watch(int argc, char **argv) {
        WatchOptions o = { .deadline = PRESSURE_TIMEOUT_INFINITE };
        int r;

        r = watch_parse(argc, argv, &o);
        if (r < 0)
                r = watch_start(&o);
        pressure_selector_free(o.sel);
        return r;
}

/* ---- top (top.c) ---------------------------------------------------------------- */

static int cmd_top(int argc, char **argv) {
        return top_main(argc, argv, arg_socket, arg_user, arg_json);
}

/* ---- notify (notify.c) ------------------------------------------------------------- */

static int cmd_notify(int argc, char **argv) {
        return notify_main(argc, argv, arg_socket, arg_user, arg_json);
}

/* ---- main ------------------------------------------------------------------------ */

static void help(void) {
        printf("pressurectl [OPTIONS] COMMAND ...\n\n"
               "Query and watch pressured, the memory-pressure notification daemon.\n\n"
               "Commands:\n"
               "  status                      daemon status\n"
               "  history [CGROUP]            recent pressure episodes\n"
               "  watch [CGROUP] [SELECTOR]   subscribe and print events\n"
               "  protection [CGROUP]         protection tree\n"
               "  reclaim [CGROUP]            the proactive reclaim controller\n"
               "  inject [CGROUP] --level L   send a synthetic event\n"
               "  reload                      reload the daemon's configuration\n"
               "  reexec                      execute the daemon anew, keeping every connection\n"
               "  top [CGROUP]                live view of pressure, limits and protection\n"
               "  notify                      desktop notifications of pressure on the session\n"
               "  memory-pressure-env [--psi T] [--resource R]  drop-in lines for sd-event programs\n\n"
               "Options:\n"
               "  -h --help          show this help ('pressurectl COMMAND --help' for a command)\n"
               "  -V --version       show the version\n"
               "     --socket PATH   the daemon's socket (default: $PRESSURED_SOCKET, else\n"
               "                     /run/pressured/io.pressured)\n"
               "     --user          the per-user daemon's socket in $XDG_RUNTIME_DIR\n"
               "     --json          machine-readable output: JSON objects only, one per line;\n"
               "                     failures and notices as JSON on stderr\n\n"
               "Exit status: 0 ok, 1 error reported by the daemon, 2 usage (a value typed\n"
               "wrong, whoever finds it), 3 daemon not reachable, 4 permission denied,\n"
               "124 timeout.\n");
}

int main(int argc, char **argv) {
        static const struct option options[] = { COMMON_OPTIONS, { "version", no_argument, NULL, 'V' }, {} };
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } commands[] = {
                { "status",     cmd_status },
                { "history",    cmd_history },
                { "watch",      cmd_watch },
                { "protection", cmd_protection },
                { "reclaim",    cmd_reclaim },
                { "inject",     cmd_inject },
                { "reload",     cmd_reload },
                { "reexec",     cmd_reexec },
                { "top",        cmd_top },
                { "notify",     cmd_notify },
                { "memory-pressure-env", cmd_memory_pressure_env },
        };
        int opt;

        /* A closed pipe on stdout ends the program quietly; the library itself never raises SIGPIPE. */
        (void) signal(SIGPIPE, SIG_DFL);
        setvbuf(stdout, NULL, _IOLBF, 0);
        /* Known before parsing, so that even a usage error before "--json" is reported as JSON. */
        arg_json = cli_wants_json(argc, argv);
        cli_set_json(arg_json);
        cli_set_args(argv);

        /* Options before the command; "+" stops at the first non-option. */
        while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) >= 0) {
                if (common_option(opt))
                        continue;
                switch (opt) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        if (arg_json)
                                printf("{\"version\":\"%s\"}\n", PACKAGE_VERSION);
                        else
                                printf("pressurectl %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        return usage_error(NULL, NULL);
                }
        }
        if (optind >= argc)
                return usage_error(NULL, "missing command");

        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (streq(commands[i].name, argv[optind])) {
                        int cargc = argc - optind;
                        char **cargv = argv + optind;

                        optind = 0; /* restart getopt on the command's arguments */
                        cli_set_args(cargv);
                        return commands[i].run(cargc, cargv);
                }
        return usage_error(NULL, "unknown command '%s'", argv[optind]);
}
