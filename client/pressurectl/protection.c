/* SPDX-License-Identifier: MIT */
/* pressurectl protection: the effective-protection tree of a cgroup, from GetProtection(). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
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
#define MIN(a, b) ((a) < (b) ? (a) : (b))

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

int cmd_protection(int argc, char **argv) {
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
