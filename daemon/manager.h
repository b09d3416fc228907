/* SPDX-License-Identifier: MIT */
/*
 * The manager, the top of the daemon: it owns the event loop and every
 * object of the layers below (daemon/README.md draws them), wires them
 * together with the callbacks they take, and handles what belongs to the
 * process: the configuration and its reload, the cgroup hierarchies, the
 * listening sockets (own or socket-activated), signals, sd_notify and the
 * watchdog. Its state is its own: struct Manager is defined in manager.c.
 */
#pragma once

#include <stdbool.h>

#include "config.h"

typedef struct Manager Manager;

/* How the daemon was started; copied by manager_new(). */
typedef struct ManagerOptions {
        const char *config_main;    /* normally /etc/pressured/pressured.conf */
        const char *config_dropins; /* normally /etc/pressured/pressured.conf.d */
        const char *config_path;    /* --config, or NULL */
        const char *socket_path;    /* where to bind the varlink socket when not socket-activated */
        bool socket_given;          /* --socket: a private instance, which binds no system-wide hook by default */
        const char *cgroup_root;    /* --cgroup-root, or NULL */
        const char *cgroup_v1_root; /* --cgroup-v1-root, or NULL */
        bool user_mode;             /* --user */
        int log_level_override;     /* --log-level, or -1: wins over LogLevel= on reload too */
        const char *exe;            /* the binary Reexecute executes, or NULL */
        char *const *argv;          /* and its arguments */
} ManagerOptions;

/*
 * manager_new - a manager for @options with the configuration @config
 * (taken over, also on failure) and an event loop. Returns 0 or -ENOMEM.
 */
int manager_new(const ManagerOptions *options, Config *config, Manager **ret);

/* manager_free - close every client, registration and socket; NULL-safe, returns NULL. */
Manager *manager_free(Manager *m);

/*
 * manager_start - find the cgroup hierarchies, and serve the varlink socket
 * and the memory, cpu and io pressure sockets (socket-activated or bound). Returns 0 or a
 * negative errno (logged).
 */
int manager_start(Manager *m);

/*
 * manager_run - serve until SIGTERM or SIGINT. With systemd's fd store,
 * SIGTERM hands every connection and registration to the next process
 * (the store keeps them; a stop releases it). Returns 0 or a negative
 * errno (logged).
 */
int manager_run(Manager *m);

/*
 * manager_reload - re-read the configuration; live subscriptions survive.
 * @ret_error: optional; why the configuration was rejected
 *
 * Returns 0, or a negative errno with the previous configuration kept.
 */
int manager_reload(Manager *m, char **ret_error);
