/* SPDX-License-Identifier: MIT */
/* pressured: command line, configuration, and start-up. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "config-build.h"
#include "log.h"
#include "manager.h"

#define CONFIG_MAIN PRESSURED_CONFDIR "/pressured.conf"
#define CONFIG_DROPINS PRESSURED_CONFDIR "/pressured.conf.d"

typedef struct Args {
        const char *config;
        const char *socket;
        const char *cgroup_root;
        const char *cgroup_v1_root;
        bool user;
        bool dump_config;
        int log_level;
} Args;

static void help(void) {
        printf("Usage: pressured [OPTIONS]\n"
               "\n"
               "Tell programs when memory gets tight: serve memory-pressure notifications\n"
               "(PSI, vmpressure, memory.events, effective protection) over varlink.\n"
               "\n"
               "  -c, --config FILE          read FILE after " CONFIG_MAIN "\n"
               "                             and " CONFIG_DROPINS "/*.conf\n"
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

/* Returns -1 to go on, or the exit status. */
static int parse_argv(int argc, char **argv, Args *a) {
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
        int c;

        *a = (Args) { .log_level = -1 };
        while ((c = getopt_long(argc, argv, "c:s:l:hV", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        a->config = optarg;
                        break;
                case 's':
                        a->socket = optarg;
                        break;
                case ARG_USER:
                        a->user = true;
                        break;
                case ARG_CGROUP_ROOT:
                        a->cgroup_root = optarg;
                        break;
                case ARG_CGROUP_V1_ROOT:
                        a->cgroup_v1_root = optarg;
                        break;
                case 'l':
                        a->log_level = log_level_from_string(optarg);
                        if (a->log_level < 0) {
                                fprintf(stderr, "pressured: invalid log level \"%s\" (debug, info, notice, warning, err)\n", optarg);
                                return 2;
                        }
                        break;
                case ARG_DUMP_CONFIG:
                        a->dump_config = true;
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
        return -1;
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

/* The varlink socket's path: --socket, else under $XDG_RUNTIME_DIR with --user, else Socket= or the default. */
static int socket_path(const Args *a, const Config *config, char **ret) {
        const char *rt = getenv("XDG_RUNTIME_DIR");

        if (a->socket)
                *ret = strdup(a->socket);
        else if (!a->user)
                *ret = strdup(config->socket_path ?: CONFIG_SOCKET_DEFAULT);
        else if (!rt || rt[0] != '/') {
                log_error("--user needs $XDG_RUNTIME_DIR to be set to an absolute path.");
                return -EINVAL;
        } else if (asprintf(ret, "%s/pressured/io.pressured", rt) < 0)
                *ret = NULL;
        return *ret ? 0 : log_error_errno(ENOMEM, "Out of memory.");
}

/* Replace the string *@field with a copy of @value, if given. */
static int override(char **field, const char *value) {
        char *copy;

        if (!value)
                return 0;
        copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

/* The configuration as the daemon would run with it: the command line applied. */
static int dump_config(const Args *a, Config *config) {
        _cleanup_free_ char *text = NULL, *path = NULL;

        if ((a->socket || a->user) && socket_path(a, config, &path) < 0) {
                config_free(config);
                return 1;
        }
        if (a->log_level >= 0)
                config->log_level = a->log_level;
        if (override(&config->socket_path, path) < 0 || override(&config->cgroup_root, a->cgroup_root) < 0 ||
            override(&config->cgroup_v1_root, a->cgroup_v1_root) < 0) {
                config_free(config);
                (void) log_error_errno(ENOMEM, "Out of memory.");
                return 1;
        }
        text = config_format(config);
        config_free(config);
        if (!text)
                return 1;
        fputs(text, stdout);
        return 0;
}

/*
 * The binary Reexecute executes: the path this one was started from,
 * read now, so that an upgrade that replaced the file is what runs.
 */
static char *self_exe(void) {
        char buf[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
        const char *deleted = " (deleted)";
        size_t dl = strlen(deleted);

        if (n <= 0)
                return NULL;
        buf[n] = 0;
        if ((size_t) n > dl && streq(buf + n - dl, deleted))
                buf[n - dl] = 0;
        return strdup(buf);
}

static int run(const Args *a, Config *config, char **argv) {
        _cleanup_free_ char *path = NULL, *exe = self_exe();
        ManagerOptions o = {
                .config_main = CONFIG_MAIN,
                .config_dropins = CONFIG_DROPINS,
                .config_path = a->config,
                .cgroup_root = a->cgroup_root,
                .cgroup_v1_root = a->cgroup_v1_root,
                .user_mode = a->user,
                .socket_given = a->socket != NULL,
                .log_level_override = a->log_level,
                .exe = exe,
                .argv = argv,
        };
        Manager *m = NULL;
        int k;

        if (socket_path(a, config, &path) < 0) {
                config_free(config);
                return 1;
        }
        o.socket_path = path;
        if (a->log_level >= 0 && a->log_level != config->log_level)
                log_debug("Log level %s from the command line.", log_level_to_string(a->log_level));
        (void) signal(SIGPIPE, SIG_IGN);
        bump_nofile();

        k = manager_new(&o, config, &m);
        if (k < 0) {
                log_error_errno(k, "Failed to allocate the manager: %m");
                return 1;
        }
        k = manager_start(m);
        if (k >= 0)
                k = manager_run(m);
        manager_free(m);
        /* The last line: after the clients and registrations said goodbye. */
        if (k >= 0)
                log_struct(LOG_INFO, MESSAGE_ID_STOPPED, "pressured stopped.");
        return k < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        _cleanup_free_ char *error = NULL;
        Config *config = NULL;
        Args a;
        int k;

        log_setup();
        k = parse_argv(argc, argv, &a);
        if (k >= 0)
                return k;

        k = config_load(CONFIG_MAIN, CONFIG_DROPINS, a.config, &config, &error);
        if (k < 0) {
                log_struct(LOG_ERR, MESSAGE_ID_CONFIG_REJECTED, "Invalid configuration: %s",
                           error ? error : strerror(-k));
                return 1;
        }
        if (a.dump_config)
                return dump_config(&a, config);
        log_set_max_level(a.log_level >= 0 ? a.log_level : config->log_level);
        return run(&a, config, argv);
}
