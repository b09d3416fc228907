/* SPDX-License-Identifier: MIT */
/*
 * pressurectl: the command line of pressured. Talks to the daemon only
 * through libpressure's public API; jansson renders the JSON replies that
 * the library hands back as text. This file holds the global options and
 * the dispatch; each command is a file of its own (commands.h), and what
 * they share is in cli.c.
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "config-build.h"
#include "cli.h"
#include "commands.h"
#include "util.h"

static void pressurectl_help(void) {
        printf("pressurectl [OPTIONS] COMMAND ...\n\n"
               "Query and watch pressured, the memory-pressure notification daemon.\n\n"
               "Commands:\n"
               "  status                      daemon status\n"
               "  history [CGROUP]            recent pressure episodes\n"
               "  watch [CGROUP] [SELECTOR]   subscribe and print events\n"
               "  protection [CGROUP]         protection tree\n"
               "  reclaim [CGROUP]            the proactive reclaim controller\n"
               "  headroom [CGROUP]           memory usage, nearest limit and headroom\n"
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
                { "headroom",   cmd_headroom },
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
                        pressurectl_help();
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
