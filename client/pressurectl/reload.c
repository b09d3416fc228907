/* SPDX-License-Identifier: MIT */
/* pressurectl reload: make the daemon re-read its configuration (Reload()). */
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

int cmd_reload(int argc, char **argv) {
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
