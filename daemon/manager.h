/* SPDX-License-Identifier: MIT */
/*
 * The manager owns the event loop and all daemon state: configuration,
 * the listening socket and its clients, the registrations of kernel
 * pressure sources and the subscriptions sharing them, counters, and the
 * systemd integration (notify, watchdog, reload).
 *
 * The objects it owns have their own modules, bottom-up: the pure
 * parsers and models (trigger.h, varlink-framer.h, kernfile.h, config.h,
 * protection*.h, counters.h, varlink.h, varlink-error.h, subscribe.h,
 * source-choice.h, event.h), the kernel sources (source.h,
 * source-common.h, source-*.c), registrations and fan-out
 * (registration.h), clients (client.h), the varlink methods (methods.h)
 * and what the daemon reports about itself (status.h).
 */
#pragma once

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"
#include "client.h"
#include "config.h"
#include "counters.h"
#include "metrics.h"
#include "registration.h"

typedef struct ProtectionReader ProtectionReader;
typedef struct ProxyServer ProxyServer;

struct Manager {
        struct event_base *base;
        Config *config;
        const char *config_path;    /* --config, or NULL */
        const char *config_main;    /* normally /etc/pressured/pressured.conf */
        const char *config_dropins;

        bool user_mode;
        int log_level_override;     /* --log-level, or -1: wins over LogLevel= on reload too */
        char *socket_path;          /* path we bound and must unlink, or NULL */
        int listen_fd;
        bool socket_activated;
        struct event *ev_accept;
        int spare_fd;               /* reserved to refuse clients cleanly at EMFILE */

        Hierarchy v2;
        Hierarchy v1;
        bool recursive_prot_mount;
        char *cgroup_root_arg;
        char *cgroup_v1_root_arg;

        Client *clients;
        Client *dead;
        unsigned n_clients;
        unsigned n_subscriptions;
        uint64_t next_client_id;
        UserCount *users;
        size_t n_users;
        struct event *ev_reap;

        Registration *registrations;
        unsigned n_registrations;
        bool psi_unprivileged;      /* learned: the kernel wants 2 s windows from us */

        ProtectionReader *protection; /* exists only while protection is tracked */
        struct event *ev_refresh;   /* exists only while protection is subscribed */
        bool prot_refreshing;
        /* counters of readers already freed, so totals stay monotonic */
        uint64_t prot_applied_base, prot_skipped_base;

        struct event *ev_sigterm, *ev_sigint, *ev_sighup;
        struct event *ev_watchdog;  /* exists only while the watchdog is on */
        void *metrics;              /* MetricsServer */
        ProxyServer *proxy;         /* the memory-pressure socket, NULL when off */
        char *proxy_path;           /* where to bind it when not socket-activated; NULL or "": off */
        bool proxy_path_explicit;   /* from [MemoryPressure] Socket=: bound even when socket-activated */

        uint64_t start_monotonic;
        Counters counters;
        int exit_code;
};

/* manager_new - a manager with the default configuration and an event loop. Returns 0 or -ENOMEM. */
int manager_new(Manager **ret);

/* manager_free - close every client, registration and socket; NULL-safe, returns NULL. */
Manager *manager_free(Manager *m);

/* manager_setup_cgroups - find and open the cgroup2 and v1 memory hierarchies. Returns 0 or a negative errno (logged). */
int manager_setup_cgroups(Manager *m);

/* manager_listen - take the socket-activated socket, or bind @socket_path. Returns 0 or a negative errno (logged). */
int manager_listen(Manager *m, const char *socket_path);

/* manager_run - serve until SIGTERM or SIGINT. Returns 0 or a negative errno (logged). */
int manager_run(Manager *m);

/*
 * manager_reload - re-read the configuration; live subscriptions survive.
 * @ret_error: optional; why the configuration was rejected
 *
 * Returns 0, or a negative errno with the previous configuration kept.
 */
int manager_reload(Manager *m, char **ret_error);

/*
 * manager_recursive_protection - whether effective protection is computed
 * recursively: RecursiveProtection=, or with "auto" the cgroup2 mount's
 * memory_recursiveprot option.
 */
static inline bool manager_recursive_protection(const Manager *m) {
        switch (m->config->recursive_protection) {
        case RECURSIVE_PROTECTION_YES:
                return true;
        case RECURSIVE_PROTECTION_NO:
                return false;
        default:
                return m->recursive_prot_mount;
        }
}
