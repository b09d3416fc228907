/* SPDX-License-Identifier: MIT */
/* pressurectl reexec: make the daemon execute its binary anew, keeping every connection (Reexecute()). */
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

int cmd_reexec(int argc, char **argv) {
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
