/* SPDX-License-Identifier: MIT */
/* pressurectl reclaim: the cgroups under proactive reclaim and their controller, from GetStatus(). */
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

int cmd_reclaim(int argc, char **argv) {
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
        n = count_reclaim(status, subtree);
        /* Nothing at or below a CGROUP that may not exist: the daemon's error, as history's. */
        if (subtree && n == 0) {
                r = cgroup_check_exists(c, "reclaim", subtree);
                if (r >= 0)
                        return r;
        }
        if (arg_json)
                return print_reclaim_json(c, status, subtree);

        if (pressure_status_get_n_reclaim(status) == 0)
                printf("Proactive reclaim is off: [Reclaim] Cgroups= is empty or matches no cgroup.\n");
        else if (n == 0)
                printf("No cgroup under proactive reclaim at or below %s.\n", subtree);
        else
                print_reclaim_table(status, subtree);
        return 0;
}
