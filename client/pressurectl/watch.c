/* SPDX-License-Identifier: MIT */
/*
 * pressurectl watch: subscribe and print one line (or JSON object) per
 * event until the watch is over; --exec runs a hook for each (hook.c). A
 * warning before a kill is acknowledged when its hook run is over, or at
 * once without --exec (prekill.c).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "duration.h"
#include "error-text.h"
#include "hook.h"
#include "prekill.h"
#include "pressure.h"
#include "trigger.h"
#include "util.h"
#include "watch-levels.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

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

typedef struct Watch {
        uint64_t count;    /* exit after this many events; 0 = never */
        uint64_t received;
        bool until_cleared; /* exit 0 at the first "cleared" */
        int exit_code;     /* >= 0: stop with this code */
        Hook *hook;        /* --exec: runs for each event; NULL without */
        pressure_client *client; /* for the acknowledgements of warnings */
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
        if (kind == PRESSURE_EVENT_PREKILL) {
                prekill_print(stdout, pressure_event_get_time_us(e), pressure_event_get_cgroup(e),
                              pressure_event_get_killed_by(e), pressure_event_get_deadline_us(e),
                              pressure_event_get_missed(e));
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

/* A warning before a kill: the hook runs for it and acknowledges when done, or it is acknowledged now. */
static void watch_prekill(Watch *w, const pressure_event *e) {
        HookPrekill p = { .cgroup = pressure_event_get_cgroup(e), .json = pressure_event_get_json(e),
                          .deadline_us = pressure_event_get_deadline_us(e), .seq = pressure_event_get_seq(e),
                          .missed = pressure_event_get_missed(e) };

        if (pressure_event_get_prekill_id(e, &p.id) < 0)
                return;
        if (w->hook)
                (void) hook_submit_prekill(w->hook, &p);
        else
                (void) prekill_send_ack(w->client, p.id, p.deadline_us);
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
        if (kind == PRESSURE_EVENT_PREKILL)
                watch_prekill(w, e);
        else if (w->hook)
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
        bool levels;            /* --levels: a level stream (watch-levels.c) instead of a subscription */
        char *cgroup;           /* CGROUP in its normal form, NULL for the whole system */
        bool has_min_interval;
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
               "                            below it, by the kernel or by systemd-oomd, and\n"
               "                            systemd-oomd's warnings before a kill (prekill,\n"
               "                            acknowledged at once, or when the hook's run is over)\n"
               "     --levels               the memory level (normal, low, medium, critical)\n"
               "                            with headroom and reclaim target: the level now,\n"
               "                            then one line per change (pressured 0.4 or later)\n\n"
               "  -r --resource R           what --level and --psi watch: memory (default), cpu\n"
               "                            or io pressure\n\n"
               "Options:\n"
               "  -n --count N              exit 0 after N events (the confirmation does not count;\n"
               "                            with --levels, the level now does)\n"
               "     --until-cleared        exit 0 when the pressure episode is over (\"cleared\")\n"
               "  -t --timeout SEC          exit 124 if they have not arrived within SEC seconds\n"
               "                            (over 0; without it, no end)\n"
               "     --min-interval TIME    at most one event per TIME, e.g. 500ms or 2s; a bare\n"
               "                            number counts milliseconds (not with --levels: the\n"
               "                            daemon holds a level for [Levels] StepDownSec= instead)\n"
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
               "                            $PRESSURE_COALESCED (events in this run, 1 or more);\n"
               "                            for --levels $PRESSURE_KIND is \"level\", $PRESSURE_LEVEL\n"
               "                            normal to critical, $PRESSURE_SOURCE empty, and the\n"
               "                            headroom is in $PRESSURE_EVENT; a warning before a\n"
               "                            kill runs at once, with $PRESSURE_KIND \"prekill\" and\n"
               "                            $PRESSURE_DEADLINE_US, and is acknowledged when the\n"
               "                            run exits or is terminated at the deadline\n"
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
        case 'L':
                o->levels = o->no_episodes = o->not_psi = true;
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
                /* 0 would end the watch before it began: refused, as --exec-timeout 0 is. */
                if (parse_seconds(arg, (uint64_t) WATCH_SECONDS_MAX * USEC_PER_SEC, &u) < 0 || u == 0)
                        return usage_error("watch ", "invalid timeout '%s', expected seconds over 0, at most %.0f "
                                           "(fractions allowed); leave --timeout out to watch without end", arg,
                                           WATCH_SECONDS_MAX);
                o->deadline = now_usec(CLOCK_MONOTONIC) + u;
                return 0;
        case 'i':
                /* The duration grammar; a bare number counts milliseconds, as it did before 0.5. */
                if (parse_duration(arg, USEC_PER_MSEC, (uint64_t) INT32_MAX * USEC_PER_MSEC, &u) < 0 ||
                    u % USEC_PER_MSEC != 0 || pressure_selector_set_min_interval_ms(o->sel, u / USEC_PER_MSEC) < 0)
                        return usage_error("watch ", "invalid interval '%s', expected a duration in whole "
                                           "milliseconds from 0 to %dms, e.g. 500ms or 2s (a bare number counts "
                                           "milliseconds)", arg, INT32_MAX);
                o->has_min_interval = true;
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
                if (parse_seconds(arg, (uint64_t) WATCH_SECONDS_MAX * USEC_PER_SEC, &o->exec_timeout) < 0 ||
                    o->exec_timeout == 0)
                        return usage_error("watch ", "invalid exec timeout '%s', expected seconds over 0, at most %.0f "
                                           "(fractions allowed); leave --exec-timeout out to let runs take their time",
                                           arg, WATCH_SECONDS_MAX);
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
                { "levels",        no_argument,       NULL, 'L' },
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
                r = opt && strchr("lpvmPKL", opt) ? watch_parse_selector(o, opt, optarg) : watch_parse_option(o, opt, optarg);
                if (r != 0)
                        return r;
        }
        if (o->selectors > 1)
                return usage_error("watch ",
                                   "give at most one of --level, --psi, --vmpressure, --memory-events, --protection, --kills, "
                                   "--levels");
        if (o->resource != PRESSURE_RESOURCE_MEMORY && o->resource != PRESSURE_RESOURCE_NONE && o->not_psi)
                return usage_error("watch ",
                                   "--resource %s needs --level or --psi: the other selectors watch memory only",
                                   pressure_resource_to_string(o->resource));
        if (o->levels && o->has_min_interval)
                return usage_error("watch ", "--min-interval does not go with --levels: the daemon holds each level "
                                   "for [Levels] StepDownSec= instead");
        if (o->until_cleared && o->no_episodes)
                return usage_error("watch ", "--until-cleared needs a pressure selector (--level, --psi, --vmpressure)");
        if (optind < argc) {
                r = cgroup_arg("watch ", argv[optind], &o->cgroup);
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
        w.client = c;
        (void) pressure_client_set_wait_for_daemon(c, o->wait_for_daemon);
        if (o->exec_argv) {
                r = hook_new(o->exec_argv, o->exec_timeout, &hook);
                if (r < 0)
                        return cli_fail("watch", r, "cannot set up the hook: %s", strerror(-r));
                hook_set_prekill_done(hook, prekill_hook_done, c);
                hook_forward_signals();
                w.hook = hook;
        }

        if (o->levels)
                r = watch_levels_run(c, &(LevelWatchOptions) { .cgroup = o->cgroup, .count = o->count,
                                                               .deadline = o->deadline,
                                                               .wait_for_daemon = o->wait_for_daemon, .hook = hook });
        else
                r = watch_run(c, o->sel, &w, o->deadline);
        if (hook) {
                /* A watch that ended well runs the event still waiting; any end waits for the run going on. */
                if (r != 0)
                        hook_drop_pending(hook);
                hook_drain(hook);
        }
        return r;
}

int cmd_watch(int argc, char **argv) {
        WatchOptions o = { .deadline = PRESSURE_TIMEOUT_INFINITE };
        int r;

        r = watch_parse(argc, argv, &o);
        if (r < 0)
                r = watch_start(&o);
        pressure_selector_free(o.sel);
        free(o.cgroup);
        return r;
}
