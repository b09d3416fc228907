/* SPDX-License-Identifier: MIT */
/* pressurectl status: the daemon's GetStatus(), as tables or one JSON object. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "error-text.h"
#include "pressure.h"
#include "util.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

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

/* The system bus side, GetStatus "dbus": the connection and the LowMemoryMonitor service. */
static void status_print_dbus(json_t *dbus) {
        const char *lmm = jget_str(dbus, "low_memory_monitor");
        uint64_t warnings = jget_u64(dbus, "low_memory_warnings");

        if (!json_is_object(dbus))
                return;
        printf("System bus:     %s\n", json_is_true(json_object_get(dbus, "connected")) ? "connected" :
               "not connected (the daemon connects only while something needs it)");
        printf("LowMemoryMonitor: ");
        if (streq_ptr(lmm, "off"))
                printf("off ([DBus] LowMemoryMonitor=no)\n");
        else if (streq_ptr(lmm, "owner"))
                printf("serving org.freedesktop.LowMemoryMonitor, %" PRIu64 " LowMemoryWarning signal%s sent\n",
                       warnings, warnings == 1 ? "" : "s");
        else if (streq_ptr(lmm, "waiting-for-bus"))
                printf("on, waiting for the system bus or for the name org.freedesktop.LowMemoryMonitor\n");
        else if (streq_ptr(lmm, "name-taken"))
                printf("on, but the name org.freedesktop.LowMemoryMonitor is another program's or the bus refused "
                       "it (see the log); no signal sent\n");
        else
                printf("%s\n", strna(lmm));
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
        printf("  (SUBSCRIBERS: what holds the registration, each subscription, level stream, proxied\n"
               "  client and the LowMemoryMonitor service counted once; a level stream holds one\n"
               "  registration per level)\n");
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

/* The warnings before a kill (systemd-oomd's pre-kill hook), from a daemon that counts them (0.5). */
static void status_print_prekill(json_t *prekill) {
        if (!json_is_object(prekill))
                return;
        printf("\nWarnings before a kill: %" PRIu64 " warned, %" PRIu64 " acknowledged, %" PRIu64
               " deadline reached, %" PRIu64 " pending\n",
               jget_u64(prekill, "warned"), jget_u64(prekill, "acknowledged"), jget_u64(prekill, "deadline_reached"),
               jget_u64(prekill, "pending"));
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

int cmd_status(int argc, char **argv) {
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
        status_print_dbus(json_object_get(st, "dbus"));
        status_print_registrations(json_object_get(st, "registrations"));
        status_print_fast_triggers(json_object_get(st, "fast_triggers"));
        status_print_prekill(json_object_get(st, "prekill"));
        status_print_counters(json_object_get(st, "counters"));
        return 0;
}
