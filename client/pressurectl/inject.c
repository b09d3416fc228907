/* SPDX-License-Identifier: MIT */
/* pressurectl inject: a synthetic pressure event for the subscriptions on a cgroup (Inject()). */
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

int cmd_inject(int argc, char **argv) {
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
                printf("{\"delivered\":%" PRIu64 "}\n", delivered);
        else
                printf("Delivered %" PRIu64 " time%s: once to each subscriber of each registration on %s that "
                       "took the %s event (a level stream is one on each of its levels up to it; "
                       "LowMemoryMonitor only when it sent the signal).\n", delivered, delivered == 1 ? "" : "s",
                       cgroup ?: "/", pressure_level_to_string((pressure_level) level));
        return 0;
}
