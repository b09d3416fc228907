/* SPDX-License-Identifier: MIT */
/* pressured: command line, configuration, and start-up. */
#include <getopt.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "config-build.h"
#include "log.h"
#include "manager.h"

static void help(void) {
        printf("Usage: pressured [OPTIONS]\n"
               "\n"
               "Tell programs when memory gets tight: serve memory-pressure notifications\n"
               "(PSI, vmpressure, memory.events, effective protection) over varlink.\n"
               "\n"
               "  -c, --config FILE          read FILE after /etc/pressured/pressured.conf and its\n"
               "                             drop-ins\n"
               "  -s, --socket PATH          listen on PATH (default /run/pressured/io.pressured,\n"
               "                             with --user $XDG_RUNTIME_DIR/pressured/io.pressured)\n"
               "      --user                 run as a per-user daemon\n"
               "      --cgroup-root DIR      cgroup2 hierarchy (default: from /proc/self/mountinfo)\n"
               "      --cgroup-v1-root DIR   cgroup v1 memory hierarchy (default: from mountinfo)\n"
               "  -l, --log-level LEVEL      debug, info, notice, warning or err\n"
               "      --dump-config          print the effective configuration and exit\n"
               "  -h, --help                 show this help\n"
               "  -V, --version              show the version\n"
               "\n"
               "See pressured(8) and pressured.conf(5).\n");
}

/*
 * Every client and every kernel registration costs fds, and the protection
 * reader keeps cgroup files open: use the hard limit, as the loop is epoll
 * based and never select()s.
 */
static void bump_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_debug_errno(errno, "Failed to raise RLIMIT_NOFILE, ignoring: %m");
}

int main(int argc, char **argv) {
        enum { ARG_USER = 0x100, ARG_CGROUP_ROOT, ARG_CGROUP_V1_ROOT, ARG_DUMP_CONFIG };
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "socket", required_argument, NULL, 's' },
                { "user", no_argument, NULL, ARG_USER },
                { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
                { "cgroup-v1-root", required_argument, NULL, ARG_CGROUP_V1_ROOT },
                { "log-level", required_argument, NULL, 'l' },
                { "dump-config", no_argument, NULL, ARG_DUMP_CONFIG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {}
        };
        const char *arg_config = NULL, *arg_socket = NULL, *arg_root = NULL, *arg_v1_root = NULL;
        _cleanup_free_ char *error = NULL, *user_socket = NULL;
        bool arg_user = false, arg_dump = false;
        int arg_log_level = -1, c, k;
        Manager *m = NULL;
        Config *config = NULL;
        const char *socket_path;

        log_setup();

        while ((c = getopt_long(argc, argv, "c:s:l:hV", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        arg_config = optarg;
                        break;
                case 's':
                        arg_socket = optarg;
                        break;
                case ARG_USER:
                        arg_user = true;
                        break;
                case ARG_CGROUP_ROOT:
                        arg_root = optarg;
                        break;
                case ARG_CGROUP_V1_ROOT:
                        arg_v1_root = optarg;
                        break;
                case 'l':
                        arg_log_level = log_level_from_string(optarg);
                        if (arg_log_level < 0) {
                                fprintf(stderr, "pressured: invalid log level \"%s\" (debug, info, notice, warning, err)\n", optarg);
                                return 2;
                        }
                        break;
                case ARG_DUMP_CONFIG:
                        arg_dump = true;
                        break;
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("pressured %s\n", PACKAGE_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "Try 'pressured --help'.\n");
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "pressured: unexpected argument \"%s\"; try 'pressured --help'.\n", argv[optind]);
                return 2;
        }

        k = config_load(PRESSURED_CONFDIR "/pressured.conf", PRESSURED_CONFDIR "/pressured.conf.d", arg_config,
                        &config, &error);
        if (k < 0) {
                log_struct(LOG_ERR, MESSAGE_ID_CONFIG_REJECTED, "Invalid configuration: %s",
                           error ? error : strerror(-k));
                return 1;
        }
        if (arg_dump) {
                _cleanup_free_ char *text = config_format(config);

                config_free(config);
                if (!text)
                        return 1;
                fputs(text, stdout);
                return 0;
        }
        log_set_max_level(arg_log_level >= 0 ? arg_log_level : config->log_level);

        if (arg_socket)
                socket_path = arg_socket;
        else if (arg_user) {
                const char *rt = getenv("XDG_RUNTIME_DIR");

                if (!rt || rt[0] != '/') {
                        log_error("--user needs $XDG_RUNTIME_DIR to be set to an absolute path.");
                        config_free(config);
                        return 1;
                }
                if (asprintf(&user_socket, "%s/pressured/io.pressured", rt) < 0) {
                        config_free(config);
                        return 1;
                }
                socket_path = user_socket;
        } else
                socket_path = config->socket_path ?: "/run/pressured/io.pressured";

        (void) signal(SIGPIPE, SIG_IGN);
        bump_nofile();

        k = manager_new(&m);
        if (k < 0) {
                config_free(config);
                log_error_errno(k, "Failed to allocate the manager: %m");
                return 1;
        }
        config_free(m->config);
        m->config = config;
        m->config_path = arg_config;
        m->config_main = PRESSURED_CONFDIR "/pressured.conf";
        m->config_dropins = PRESSURED_CONFDIR "/pressured.conf.d";
        m->user_mode = arg_user;
        m->log_level_override = arg_log_level;
        if ((arg_root && !(m->cgroup_root_arg = strdup(arg_root))) ||
            (arg_v1_root && !(m->cgroup_v1_root_arg = strdup(arg_v1_root)))) {
                manager_free(m);
                return 1;
        }
        /* The memory-pressure socket: Socket= of [MemoryPressure], else next
         * to the varlink socket (/run/pressured/memory-pressure, or under
         * $XDG_RUNTIME_DIR/pressured with --user). */
        m->proxy_path_explicit = m->config->mp_socket != NULL;
        if (m->config->mp_socket)
                m->proxy_path = strdup(m->config->mp_socket);
        else {
                const char *slash = strrchr(socket_path, '/');

                if (asprintf(&m->proxy_path, "%.*s/memory-pressure", slash ? (int) (slash - socket_path) : 1,
                             slash ? socket_path : ".") < 0)
                        m->proxy_path = NULL;
        }
        if (!m->proxy_path) {
                manager_free(m);
                return 1;
        }
        if (arg_log_level >= 0 && arg_log_level != config->log_level)
                log_debug("Log level %s from the command line.", log_level_to_string(arg_log_level));

        k = manager_setup_cgroups(m);
        if (k >= 0)
                k = manager_listen(m, socket_path);
        if (k >= 0)
                k = manager_run(m);
        manager_free(m);
        return k < 0 ? 1 : 0;
}
