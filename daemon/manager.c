/* SPDX-License-Identifier: MIT */
/*
 * The manager: event loop, configuration and reload, cgroup hierarchies,
 * the listening sockets (own or socket-activated), signals, sd_notify and
 * the watchdog, and the wiring of the layers below.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "config-build.h"
#include "event-util.h"
#include "log.h"
#include "low-memory-monitor.h"
#include "event.h"
#include "manager.h"
#include "methods.h"
#include "metrics.h"
#include "oomd-watch.h"
#include "prekill.h"
#include "proxy.h"
#include "reclaim-controller.h"
#include "registration.h"
#include "report.h"
#include "socket-util.h"
#include "socket-watch.h"
#include "source-protection.h"
#include "status.h"
#include "system-bus.h"
#include "takeover.h"

struct Manager {
        struct event_base *base;
        Config *config;
        char *config_main, *config_dropins, *config_path;
        char *socket_path_arg;      /* where to bind the varlink socket */
        char *cgroup_root_arg, *cgroup_v1_root_arg;
        bool user_mode;
        bool socket_given;          /* --socket: no system-wide hook socket by default */
        int log_level_override;

        Hierarchy v2, v1;
        bool mount_recursiveprot;
        Counters counters;

        SourceEnv env;
        ProtectionSource *protection; /* NULL without a cgroup2 hierarchy */
        ReclaimController *reclaim;   /* [Reclaim]; holds nothing while Cgroups= is empty */
        Registry registry;
        ClientServer *clients;
        ProxyServer *proxy;         /* the pressure proxy sockets, NULL when all are off */
        ReportServer *report;       /* systemd-report's socket, NULL when off */
        SocketWatch *socket_watch;  /* the varlink socket we bound, watched; NULL if inherited */
        LowMemoryMonitor *lmm;      /* [DBus] LowMemoryMonitor= */
        LevelStreams *levels;       /* Subscribe "levels" */
        Prekill *prekill;           /* systemd-oomd's pre-kill hook and its warnings */
        Methods methods;
        StatusContext status;
        MetricsServer *metrics;
        Takeover *takeover;         /* restarts, crashes and Reexecute without anyone noticing */
        bool bound_socket, bound_proxy[_RESOURCE_MAX], bound_prekill, bound_report; /* this process bound them (else inherited) */

        char *socket_path;          /* the varlink socket we bound and must unlink, or NULL */
        struct event *ev_sigterm, *ev_sigint, *ev_sighup;
        struct event *ev_watchdog;  /* exists only while the watchdog is on */
};

static int manager_reload_cb(void *userdata, char **ret_error) {
        return manager_reload(userdata, ret_error);
}

static int manager_reexecute_cb(void *userdata, Client *c) {
        Manager *m = userdata;

        return takeover_schedule_reexec(m->takeover);
}

/* Every object below keeps a pointer to the configuration in force. */
static void manager_set_config(Manager *m, Config *c) {
        m->config = c;
        m->methods.config = c;
        m->status.config = c;
        if (m->clients)
                m->clients->config = c;
        proxy_set_config(m->proxy, c);
        prekill_set_config(m->prekill, c);
        report_server_set_config(m->report, c);
}

static int strdup_opt(const char *s, char **ret) {
        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

int manager_new(const ManagerOptions *o, Config *config, Manager **ret) {
        Manager *m = calloc(1, sizeof(*m));

        if (!m) {
                config_free(config);
                return -ENOMEM;
        }
        m->config = config;
        m->log_level_override = o->log_level_override;
        m->user_mode = o->user_mode;
        m->socket_given = o->socket_given;
        m->v1.fd = m->v2.fd = -1;
        m->status.start_monotonic = now_usec(CLOCK_MONOTONIC);
        m->base = event_base_new();
        if (!m->base || strdup_opt(o->config_main, &m->config_main) < 0 ||
            strdup_opt(o->config_dropins, &m->config_dropins) < 0 || strdup_opt(o->config_path, &m->config_path) < 0 ||
            strdup_opt(o->socket_path, &m->socket_path_arg) < 0 || strdup_opt(o->cgroup_root, &m->cgroup_root_arg) < 0 ||
            strdup_opt(o->cgroup_v1_root, &m->cgroup_v1_root_arg) < 0) {
                manager_free(m);
                return -ENOMEM;
        }
        m->env = (SourceEnv) { .base = m->base, .v2 = &m->v2, .v1 = &m->v1, .counters = &m->counters };
        registry_init(&m->registry, &m->env, config, &m->counters, event_data_body);
        /* No connection until a user needs one; NULL address: $DBUS_SYSTEM_BUS_ADDRESS or the default. */
        if (system_bus_new(&m->env.bus, m->base, NULL) < 0 ||
            low_memory_monitor_new(&m->registry, m->env.bus, &m->lmm) < 0 ||
            level_streams_new(m->base, &m->registry, &m->counters, &m->levels) < 0) {
                manager_free(m);
                return -ENOMEM;
        }
        /* systemd-oomd's kills: on the bus only while a kills source exists. */
        if (oomd_watch_new(m->env.bus, &m->counters, &m->env.oomd) < 0 ||
            prekill_new(&(PrekillEnv) { .base = m->base, .config = config, .registry = &m->registry,
                                        .levels = m->levels, .v2 = &m->v2, .v1 = &m->v1, .oomd_root = "/" },
                        &m->prekill) < 0) {
                manager_free(m);
                return -ENOMEM;
        }
        m->status = (StatusContext) {
                .registry = &m->registry,
                .counters = &m->counters,
                .lmm = m->lmm,
                .bus = m->env.bus,
                .v2 = &m->v2,
                .v1 = &m->v1,
                .prekill = &m->prekill->book,
                .start_monotonic = m->status.start_monotonic,
        };
        m->methods = (Methods) {
                .registry = &m->registry,
                .levels = m->levels,
                .v2 = &m->v2,
                .v1 = &m->v1,
                .counters = &m->counters,
                .status = &m->status,
                .prekill = m->prekill,
                .reload = manager_reload_cb,
                .reexecute = manager_reexecute_cb,
                .userdata = m,
        };
        /* Level events carry the headroom GetHeadroom reads. */
        level_streams_set_headroom(m->levels, methods_level_headroom, &m->methods);
        /* The first kills subscription's "subscribed" waits for systemd-oomd's picture. */
        oomd_watch_set_settled(m->env.oomd, methods_kills_settled, &m->methods);
        if (takeover_new(&(TakeoverEnv) { .base = m->base, .registry = &m->registry, .counters = &m->counters,
                                          .methods = &m->methods, .status = &m->status, .prekill = m->prekill },
                         &m->takeover) < 0 ||
            takeover_set_exec(m->takeover, o->exe, o->argv) < 0) {
                manager_free(m);
                return -ENOMEM;
        }
        manager_set_config(m, config);
        *ret = m;
        return 0;
}

Manager *manager_free(Manager *m) {
        bool handed_over;

        if (!m)
                return NULL;
        m->socket_watch = socket_watch_free(m->socket_watch);
        /* The next process serves the socket files. */
        handed_over = m->takeover && takeover_detached(m->takeover);
        if (handed_over) {
                proxy_forget_paths(m->proxy);
                if (m->prekill)
                        prekill_forget_path(m->prekill);
                report_server_forget_path(m->report);
        }
        /* The warnings stop first: clients going away at the end answer no call of systemd-oomd. */
        prekill_stop(m->prekill);
        /* systemd-report's Lists under way are answered as far as their sockets take it. */
        report_server_stop_walk(m->report);
        m->report = report_server_free(m->report);
        /* Every registration goes with its last listener; handed over, the kernel keeps them. */
        m->registry.handed_over = handed_over;
        m->clients = client_server_free(m->clients);
        m->proxy = proxy_stop(m->proxy);
        m->prekill = prekill_free(m->prekill);
        m->lmm = low_memory_monitor_free(m->lmm);
        m->levels = level_streams_free(m->levels);
        registry_done(&m->registry);
        methods_done(&m->methods);
        /* Its sources went with the registrations. */
        m->env.oomd = oomd_watch_free(m->env.oomd);
        m->protection = protection_source_free(m->protection);
        m->reclaim = reclaim_controller_free(m->reclaim);
        /* After every user of the bus. */
        m->env.bus = system_bus_free(m->env.bus);
        metrics_server_free(m->metrics);
        /* After everything that told it of connections and registrations ending. */
        m->takeover = takeover_free(m->takeover);
        event_free_and_null(&m->ev_sigterm);
        event_free_and_null(&m->ev_sigint);
        event_free_and_null(&m->ev_sighup);
        event_free_and_null(&m->ev_watchdog);
        if (m->socket_path) {
                if (!handed_over)
                        (void) unlink(m->socket_path);
                free(m->socket_path);
        }
        hierarchy_close(&m->v1);
        hierarchy_close(&m->v2);
        free(m->config_main);
        free(m->config_dropins);
        free(m->config_path);
        free(m->socket_path_arg);
        free(m->cgroup_root_arg);
        free(m->cgroup_v1_root_arg);
        config_free(m->config);
        if (m->base)
                event_base_free(m->base);
        free(m);
        return NULL;
}

static bool manager_recursive_protection(const Manager *m) {
        return config_recursive_protection(m->config, m->mount_recursiveprot);
}

static void manager_open_hierarchy(Hierarchy *h, const char *path, const char *what, const char *consequence) {
        int k;

        if (!path)
                return;
        k = hierarchy_open(h, path);
        if (k < 0)
                log_warning_errno(k, "Failed to open %s %s, %s: %m", what, path, consequence);
}

static int manager_setup_cgroups(Manager *m) {
        _cleanup_free_ char *text = NULL;
        CgroupMounts mounts = {};
        const char *v2, *v1;
        int k;

        k = read_full_file("/proc/self/mountinfo", 16 << 20, &text, NULL);
        if (k < 0)
                log_warning_errno(k, "Failed to read /proc/self/mountinfo, ignoring: %m");
        else {
                k = mountinfo_parse(text, &mounts);
                if (k < 0)
                        return log_error_errno(k, "Failed to parse /proc/self/mountinfo: %m");
        }

        v2 = m->cgroup_root_arg ?: m->config->cgroup_root ?: mounts.v2_root;
        v1 = m->cgroup_v1_root_arg ?: m->config->cgroup_v1_root ?: mounts.v1_memory_root;
        m->mount_recursiveprot = mounts.v2_recursive_prot && !m->cgroup_root_arg && !m->config->cgroup_root;
        m->status.mount_recursiveprot = m->mount_recursiveprot;

        manager_open_hierarchy(&m->v2, v2, "cgroup2 hierarchy", "cgroup2 sources are unavailable");
        manager_open_hierarchy(&m->v1, v1, "cgroup v1 memory hierarchy", "vmpressure is unavailable");
        log_info("cgroup2 hierarchy: %s; cgroup v1 memory hierarchy: %s; recursive protection: %s.",
                 strna(m->v2.path), strna(m->v1.path), manager_recursive_protection(m) ? "yes" : "no");
        cgroup_mounts_done(&mounts);

        k = protection_source_new(m->base, &m->counters, m->v2.path, manager_recursive_protection(m),
                                  m->config->refresh_usec, &m->protection);
        if (k < 0)
                return log_error_errno(k, "Out of memory.");
        m->env.protection = m->protection;
        m->methods.protection = m->protection;
        m->status.protection = m->protection;

        k = reclaim_controller_new(m->base, m->v2.path, m->v2.fd, manager_recursive_protection(m), &m->reclaim);
        if (k < 0)
                return log_error_errno(k, "Out of memory.");
        m->status.reclaim = m->reclaim;
        /* A controller that cannot start is logged and stays off; the daemon serves on. */
        (void) reclaim_controller_configure(m->reclaim, m->config, manager_recursive_protection(m));
        return 0;
}

/* Take an inherited listening socket: non-blocking, close-on-exec. */
static int manager_take_fd(int fd) {
        if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                return log_error_errno(EINVAL, "The inherited fd %d is not a listening AF_UNIX stream socket.", fd);
        (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        (void) fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
}

/*
 * The listening sockets among the inherited @fds: passed by the service
 * manager (told apart by their FileDescriptorName=, an unnamed one being
 * the varlink socket), or by the process before a takeover. @ret_proxy_fds
 * gets the pressure proxy sockets by resource, -1 where none came.
 * Returns 1 if there is one, 0 if none, or a negative errno (logged).
 */
static int manager_inherited_fds(NamedFds *fds, int *ret_varlink_fd, int ret_proxy_fds[static _RESOURCE_MAX],
                                 int *ret_prekill_fd, int *ret_report_fd) {
        int varlink_fd = named_fds_take(fds, "varlink"), proxy_fds[_RESOURCE_MAX];
        int prekill_fd = named_fds_take(fds, PREKILL_FD_NAME), report_fd = named_fds_take(fds, REPORT_FD_NAME);
        bool any = varlink_fd >= 0 || prekill_fd >= 0 || report_fd >= 0, ok = true;

        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                any = (proxy_fds[r] = named_fds_take(fds, proxy_fd_name(r))) >= 0 || any;
        for (size_t i = 0; i < fds->n;) {
                NamedFd f = fds->fds[i];

                if (takeover_is_fd_name(f.name)) {
                        i++;
                        continue;
                }
                fds->fds[i] = fds->fds[--fds->n];
                if (varlink_fd < 0) {
                        varlink_fd = f.fd;
                        any = true;
                } else {
                        log_warning("Received an extra socket (fd %d, \"%s\"), ignoring it.", f.fd, f.name);
                        (void) close(f.fd);
                }
        }
        if (!any)
                return 0;
        if (varlink_fd < 0)
                ok = log_error_errno(EINVAL, "The service manager passed no varlink socket.") >= 0;
        else
                ok = manager_take_fd(varlink_fd) >= 0;
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                ok = ok && (proxy_fds[r] < 0 || manager_take_fd(proxy_fds[r]) >= 0);
        ok = ok && (prekill_fd < 0 || manager_take_fd(prekill_fd) >= 0);
        ok = ok && (report_fd < 0 || manager_take_fd(report_fd) >= 0);
        if (!ok) {
                safe_close(varlink_fd);
                safe_close(prekill_fd);
                for (Resource r = 0; r < _RESOURCE_MAX; r++)
                        safe_close(proxy_fds[r]);
                safe_close(report_fd);
                return -EINVAL;
        }
        *ret_varlink_fd = varlink_fd;
        *ret_prekill_fd = prekill_fd;
        memcpy(ret_proxy_fds, proxy_fds, sizeof(proxy_fds));
        *ret_report_fd = report_fd;
        return 1;
}

/*
 * The modes of a socket the daemon binds, and of the directory it makes for
 * it: a system daemon's @system_mode (who may do what is decided per call,
 * or by the peer's cgroup) in a 0755 directory; a per-user daemon's every
 * socket is its user's alone, 0600 in a 0700 directory, whatever it serves.
 */
static void manager_socket_modes(const Manager *m, mode_t system_mode, mode_t *ret_mode, mode_t *ret_dir_mode) {
        *ret_mode = m->user_mode ? 0600 : system_mode;
        *ret_dir_mode = m->user_mode ? 0700 : 0755;
}

/*
 * Where the daemon binds the hook socket: [Prekill] Socket=, else the
 * system's hook socket, but not under --user, with --socket (a private
 * instance) or when the service manager passes the sockets (the default
 * one is then the socket unit's). NULL: off.
 */
static const char *manager_prekill_path(const Manager *m, bool inherited) {
        const char *path = m->config->prekill_socket;

        if (path)
                return path[0] ? path : NULL;
        return inherited || m->user_mode || m->socket_given ? NULL : PREKILL_SOCKET_DEFAULT;
}

/* Serve the hook on @fd (taken over), bound by us at @path or inherited. */
static int manager_start_prekill(Manager *m, int fd, const char *path) {
        int k = prekill_listen(m->prekill, fd, path);

        if (k < 0)
                return log_error_errno(k, "Out of memory.");
        if (path)
                log_info("Serving systemd-oomd's pre-kill hook on %s.", path);
        else
                log_info("Serving systemd-oomd's pre-kill hook on the socket passed by the service manager.");
        return 0;
}

/*
 * Bind a socket the daemon can do without (the pre-kill hook's,
 * systemd-report's) at @path, for @what, with the system daemon's mode
 * 0666. One that cannot be bound is said once and left off: the daemon
 * serves on without it. Returns the fd, or -1.
 */
static int manager_bind_optional(Manager *m, const char *path, const char *what) {
        mode_t mode, dir_mode;
        int fd, k;

        manager_socket_modes(m, 0666, &mode, &dir_mode);
        k = socket_listen_unix(path, mode, dir_mode, NULL, &fd);
        if (k < 0) {
                log_error("Cannot serve %s on %s, going on without it: %s", what, path,
                          k == -EADDRINUSE ? "another process serves it" : strerror(-k));
                return -1;
        }
        return fd;
}

/* Bind and serve the hook at @path (NULL: off), if it can be bound. */
static int manager_bind_prekill(Manager *m, const char *path) {
        int fd;

        if (!path) {
                log_debug("The pre-kill hook socket is off.");
                return 0;
        }
        /* Anyone may connect to the system daemon's (systemd-oomd reaches it with CAP_DAC_OVERRIDE anyway);
         * Notify checks the caller. */
        fd = manager_bind_optional(m, path, "systemd-oomd's pre-kill hook");
        if (fd < 0)
                return 0;
        m->bound_prekill = true;
        return manager_start_prekill(m, fd, path);
}

/* Serve the pressure protocol of @resource on @fd (taken over), bound by us at @path or inherited. */
static int manager_start_proxy(Manager *m, Resource resource, int fd, const char *path) {
        ProxyEnv env = {
                .base = m->base,
                .config = m->config,
                .registry = &m->registry,
                .counters = &m->counters,
                .v2 = &m->v2,
                .v1 = &m->v1,
                .varlink = m->clients,
        };
        int k;

        if (!m->proxy && (k = proxy_new(&env, &m->proxy)) < 0) {
                safe_close(fd);
                return k;
        }
        k = proxy_listen(m->proxy, resource, fd, path);
        if (k < 0)
                return k;
        m->status.proxy = m->proxy;
        if (path)
                log_info("Serving the %s protocol on %s.", proxy_fd_name(resource), path);
        else
                log_info("Serving the %s protocol on the socket passed by the service manager.",
                         proxy_fd_name(resource));
        return 0;
}

/* Bind and serve the socket of @resource at @path; NULL or "" leaves it off. */
static int manager_bind_proxy(Manager *m, Resource resource, const char *path) {
        mode_t mode, dir_mode;
        int fd, k;

        if (!path || !path[0]) {
                log_debug("The %s socket is off.", proxy_fd_name(resource));
                return 0;
        }
        /* Any service may connect to the system daemon's; each gets only its own cgroup. */
        manager_socket_modes(m, 0666, &mode, &dir_mode);
        k = socket_listen_unix(path, mode, dir_mode, NULL, &fd);
        if (k == -EADDRINUSE)
                return log_error_errno(k, "Another process is serving %s; not taking it over.", path);
        if (k < 0)
                return log_error_errno(k, "Failed to listen on %s: %m", path);
        m->bound_proxy[resource] = true;
        return manager_start_proxy(m, resource, fd, path);
}

/*
 * Where the socket of @resource goes: its key in [MemoryPressure] (Socket=,
 * CpuSocket=, IoSocket=), else next to the varlink socket under its fd name.
 */
static char *manager_proxy_path(const Manager *m, Resource resource) {
        const char *slash = strrchr(m->socket_path_arg, '/');
        char *p;

        if (m->config->mp_sockets[resource])
                return strdup(m->config->mp_sockets[resource]);
        if (asprintf(&p, "%.*s/%s", slash ? (int) (slash - m->socket_path_arg) : 1,
                     slash ? m->socket_path_arg : ".", proxy_fd_name(resource)) < 0)
                return NULL;
        return p;
}

/* Serve systemd-report's protocol on @fd (taken over), bound by us at @path or inherited. */
static int manager_start_report(Manager *m, int fd, const char *path) {
        int k = report_server_new(m->base, m->config, &m->status, fd, path, &m->report);

        if (k < 0)
                return k;
        if (path)
                log_info("Serving metrics for systemd-report on %s.", path);
        else
                log_info("Serving metrics for systemd-report on the socket passed by the service manager.");
        return 0;
}

/* Bind and serve systemd-report's socket at @path (NULL: off), if it can be bound. */
static int manager_bind_report(Manager *m, const char *path) {
        int fd;

        if (!path) {
                log_debug("The %s socket is off.", REPORT_FD_NAME);
                return 0;
        }
        /* Anyone may read the system daemon's metrics, as systemd's own report sockets let them. */
        fd = manager_bind_optional(m, path, "metrics for systemd-report");
        if (fd < 0)
                return 0;
        m->bound_report = true;
        return manager_start_report(m, fd, path);
}

/*
 * Where systemd-report's socket goes: [Report] Socket= ("": off), else
 * CONFIG_REPORT_SOCKET_DEFAULT for the system daemon. Off for --user, and
 * with --socket: a private instance must not take the system daemon's
 * name in systemd-report's directory (as for the pre-kill hook).
 */
static const char *manager_report_path(const Manager *m) {
        const char *p = m->config->report_socket;

        if (p)
                return p[0] ? p : NULL;
        return m->user_mode || m->socket_given ? NULL : CONFIG_REPORT_SOCKET_DEFAULT;
}

static int manager_serve(Manager *m, int fd) {
        return client_server_new(m->base, m->config, fd, methods_dispatch, &m->methods, &m->clients);
}

/* Serve the inherited listening sockets; the paths a previous process bound stay ours to unlink. */
static int manager_serve_inherited(Manager *m, int varlink_fd, int proxy_fds[static _RESOURCE_MAX],
                                   char *const proxy_paths[static _RESOURCE_MAX], int prekill_fd, int report_fd) {
        const char *own = takeover_socket_path(m->takeover);
        mode_t mode, dir_mode;
        int k;

        k = manager_serve(m, varlink_fd);
        if (k >= 0 && own && !(m->socket_path = strdup(own)))
                k = log_error_errno(ENOMEM, "Out of memory.");
        /* A socket this daemon bound itself before a Reexecute is watched as it was. */
        manager_socket_modes(m, 0666, &mode, &dir_mode);
        if (k >= 0 && own)
                (void) socket_watch_new(m->base, m->clients, own, mode, dir_mode, &m->socket_watch);
        /* Without a proxy fd, bind only a configured path: the default one belongs to the socket unit. */
        for (Resource r = 0; r < _RESOURCE_MAX; r++) {
                if (k >= 0 && proxy_fds[r] >= 0)
                        k = manager_start_proxy(m, r, TAKE_FD(proxy_fds[r]), takeover_proxy_path(m->takeover, r));
                else if (k >= 0 && m->config->mp_sockets[r])
                        k = manager_bind_proxy(m, r, proxy_paths[r]);
                proxy_fds[r] = safe_close(proxy_fds[r]);
        }
        if (k >= 0 && prekill_fd >= 0)
                k = manager_start_prekill(m, TAKE_FD(prekill_fd), takeover_prekill_path(m->takeover));
        else if (k >= 0)
                k = manager_bind_prekill(m, manager_prekill_path(m, true));
        safe_close(prekill_fd);
        /* Without a report fd, bind only a configured path: the default one belongs to the socket unit. */
        if (k >= 0 && report_fd >= 0)
                k = manager_start_report(m, TAKE_FD(report_fd), takeover_report_path(m->takeover));
        else if (k >= 0 && m->config->report_socket)
                k = manager_bind_report(m, manager_report_path(m));
        safe_close(report_fd);
        if (k >= 0)
                log_info("Serving on the socket %s.", takeover_generation(m->takeover) > 0 ?
                         "taken over from the previous process" : "passed by the service manager");
        return k;
}

static void proxy_paths_free(char *(*paths)[_RESOURCE_MAX]) {
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                free((*paths)[r]);
}

static int manager_listen(Manager *m, NamedFds *fds) {
        _cleanup_(proxy_paths_free) char *proxy_paths[_RESOURCE_MAX] = {};
        const char *path = m->socket_path_arg;
        mode_t mode, dir_mode;
        int varlink_fd = -1, proxy_fds[_RESOURCE_MAX] = { -1, -1, -1 }, prekill_fd = -1, report_fd = -1, fd, k;
        bool replaced;

        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                if (!(proxy_paths[r] = manager_proxy_path(m, r)))
                        return log_error_errno(ENOMEM, "Out of memory.");
        k = manager_inherited_fds(fds, &varlink_fd, proxy_fds, &prekill_fd, &report_fd);
        if (k < 0)
                return k;
        if (k > 0)
                return manager_serve_inherited(m, varlink_fd, proxy_fds, proxy_paths, prekill_fd, report_fd);

        if (socket_unix_is_live(path) > 0)
                return log_error_errno(EADDRINUSE, "Another pressured is already serving %s; not taking it over.", path);
        /* The pressure proxy sockets first: once the varlink socket accepts,
         * whoever waited for it finds the daemon's sockets all in place. */
        for (Resource r = 0; r < _RESOURCE_MAX; r++) {
                k = manager_bind_proxy(m, r, proxy_paths[r]);
                if (k < 0)
                        return k;
        }
        k = manager_bind_prekill(m, manager_prekill_path(m, false));
        if (k >= 0)
                k = manager_bind_report(m, manager_report_path(m));
        if (k < 0)
                return k;
        /* System mode: anyone may connect; access control is per call. */
        manager_socket_modes(m, 0666, &mode, &dir_mode);
        k = socket_listen_unix(path, mode, dir_mode, &replaced, &fd);
        if (k == -EADDRINUSE)
                return log_error_errno(k, "Another pressured is already serving %s; not taking it over.", path);
        if (k < 0)
                return log_error_errno(k, "Failed to listen on %s: %m", path);
        if (replaced)
                log_info("Removed the stale socket %s left by a previous instance.", path);
        log_info("Listening on %s.", path);
        m->bound_socket = true;
        m->socket_path = strdup(path);
        if (!m->socket_path) {
                safe_close(fd);
                return log_error_errno(ENOMEM, "Out of memory.");
        }
        k = manager_serve(m, fd);
        if (k >= 0)
                (void) socket_watch_new(m->base, m->clients, path, mode, dir_mode, &m->socket_watch);
        return k;
}

static int signals_setup(Manager *m);

/*
 * systemd 254 and later say how many fds the store holds ($FDSTORE): too
 * few for the limits means a restart closes what did not fit.
 */
static void manager_check_fdstore(const Manager *m) {
        const char *e = getenv("FDSTORE");
        uint64_t max, need = (uint64_t) m->config->max_clients + m->config->max_registrations +
                             2 * ((uint64_t) m->config->prekill_max_calls + PREKILL_EXTRA_CONNECTIONS) + 10;

        if (!e || safe_atou64(e, &max) < 0 || max == 0 || max >= need)
                return;
        log_warning("FileDescriptorStoreMax=%" PRIu64 " of the service is below the %" PRIu64
                    " fds [Limits] MaxClients=, MaxRegistrations= and [Prekill] MaxCalls= may need: a restart closes what does not fit.",
                    max, need);
}

/* What the process was started with: the sockets, and what a previous process handed over. */
static int manager_inherit(Manager *m, NamedFds *fds) {
        int k = named_fds_inherit(fds);

        if (k == -ENOMEM)
                return log_error_errno(k, "Out of memory.");
        if (k < 0)
                log_error_errno(k, "The list of inherited fds is malformed, ignoring it: %m");
        k = takeover_inherit(m->takeover, fds);
        return k == -ENOMEM ? log_error_errno(k, "Out of memory.") : k;
}

int manager_start(Manager *m) {
        _cleanup_(named_fds_done) NamedFds fds = {};
        const char *bound_proxy_paths[_RESOURCE_MAX];
        int k = manager_setup_cgroups(m);

        if (k < 0)
                return k;
        /* Before the sockets accept: whoever connected may stop us at once. */
        k = signals_setup(m);
        if (k < 0)
                return k;
        k = manager_inherit(m, &fds);
        if (k < 0)
                return k;
        k = manager_listen(m, &fds);
        if (k < 0)
                return k;
        /* The proxy may have started first: its peers count against MaxClients= with the varlink ones. */
        if (m->proxy)
                m->proxy->env.varlink = m->clients;
        m->status.clients = m->clients;
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                bound_proxy_paths[r] = m->bound_proxy[r] ? m->proxy->sockets[r].path : NULL;
        takeover_set_servers(m->takeover, m->clients, m->proxy, m->reclaim, m->bound_socket ? m->socket_path : NULL,
                             bound_proxy_paths, m->bound_prekill ? m->prekill->hook_path : NULL);
        takeover_set_report(m->takeover, m->report, m->bound_report);
        if (prekill_set_servers(m->prekill, m->clients, m->proxy) < 0)
                return log_error_errno(ENOSPC, "Too many observers of the clients.");
        takeover_restore(m->takeover, &fds);
        /* A bus that is not there is retried: only out of memory fails. */
        k = low_memory_monitor_set_enabled(m->lmm, m->config->dbus_low_memory_monitor);
        takeover_finish(m->takeover);
        manager_check_fdstore(m);
        return k;
}

static void on_sigterm(evutil_socket_t sig, short what, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s, shutting down.", sig == SIGINT ? "SIGINT" : "SIGTERM");
        (void) sd_notify(0, "STOPPING=1\nSTATUS=Shutting down.");
        /* With the fd store the next process (if there is one) takes over. */
        (void) takeover_handover(m->takeover);
        event_base_loopbreak(m->base);
}

static void on_sighup(evutil_socket_t sig, short what, void *userdata) {
        Manager *m = userdata;
        _cleanup_free_ char *error = NULL;

        (void) manager_reload(m, &error);
}

static void on_watchdog(evutil_socket_t fd, short what, void *userdata) {
        (void) sd_notify(0, "WATCHDOG=1");
}

/* The watchdog timer exists only while the service manager asks for pings. */
static void watchdog_setup(Manager *m) {
        uint64_t usec = 0;
        struct timeval tv;

        if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) {
                event_free_and_null(&m->ev_watchdog);
                return;
        }
        if (!m->ev_watchdog)
                m->ev_watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
        tv = usec_to_timeval(usec / 2);
        if (!m->ev_watchdog || event_add(m->ev_watchdog, &tv) < 0) {
                log_error("Failed to arm the watchdog timer; the service manager will restart the daemon.");
                return;
        }
        (void) sd_notify(0, "WATCHDOG=1");
}

static int metrics_setup(Manager *m, const char *listen) {
        MetricsServer *s = NULL;
        int k;

        takeover_set_metrics(m->takeover, NULL);
        m->metrics = metrics_server_free(m->metrics);
        if (!listen)
                return 0;
        k = metrics_server_new(m->base, listen, status_metrics_walk, status_write_metrics, &m->status, &s);
        if (k < 0)
                return k;
        m->metrics = s;
        takeover_set_metrics(m->takeover, s);
        log_info("Serving metrics on http://%s/metrics.", listen);
        return 0;
}

static int signals_setup(Manager *m) {
        m->ev_sigterm = evsignal_new(m->base, SIGTERM, on_sigterm, m);
        m->ev_sigint = evsignal_new(m->base, SIGINT, on_sigterm, m);
        m->ev_sighup = evsignal_new(m->base, SIGHUP, on_sighup, m);
        if (!m->ev_sigterm || !m->ev_sigint || !m->ev_sighup || event_add(m->ev_sigterm, NULL) < 0 ||
            event_add(m->ev_sigint, NULL) < 0 || event_add(m->ev_sighup, NULL) < 0)
                return log_error_errno(ENOMEM, "Failed to set up signal handling.");
        return 0;
}

int manager_run(Manager *m) {
        int k;

        k = metrics_setup(m, m->config->metrics_listen);
        /* A process that took connections over serves them even without its metrics. */
        if (k < 0 && takeover_generation(m->takeover) > 0)
                log_error("Serving on without the metrics endpoint; a reload binds it again once the address is free.");
        else if (k < 0)
                return k;
        watchdog_setup(m);

        if (takeover_generation(m->takeover) > 0)
                log_struct(LOG_INFO, MESSAGE_ID_STARTED, "pressured %s started (generation %" PRIu64 ").",
                           PACKAGE_VERSION, takeover_generation(m->takeover));
        else
                log_struct(LOG_INFO, MESSAGE_ID_STARTED, "pressured %s started.", PACKAGE_VERSION);
        (void) sd_notify(0, "READY=1\nSTATUS=Serving.");

        if (event_base_dispatch(m->base) < 0)
                return log_error_errno(EIO, "The event loop failed.");

        (void) sd_notify(0, "STOPPING=1");
        return 0;
}

/* Reject the loaded @c: log @why, keep the previous configuration. */
static int reload_reject(Manager *m, Config *c, int k, const char *why, char **ret_error) {
        log_struct(LOG_ERR, MESSAGE_ID_CONFIG_REJECTED, "Configuration rejected, keeping the previous one: %s",
                   why ?: strerror(-k));
        config_free(c);
        (void) sd_notify(0, "READY=1\nSTATUS=Serving (configuration rejected).");
        if (ret_error)
                *ret_error = why ? strdup(why) : NULL;
        return k;
}

int manager_reload(Manager *m, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        Config *c = NULL, *old;
        int k;

        (void) sd_notifyf(0, "RELOADING=1\nSTATUS=Reloading.\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
        /* A socket removed behind the daemon's back is bound again, whatever the configuration says. */
        (void) socket_watch_rebind(m->socket_watch);

        k = config_load(m->config_main, m->config_dropins, m->config_path, &c, &error);
        if (k < 0)
                return reload_reject(m, NULL, k, error, ret_error);
        /* Bound anew when it changed, or when it could not be bound before. */
        if (!streq_ptr(c->metrics_listen, m->config->metrics_listen) || (c->metrics_listen && !m->metrics)) {
                k = metrics_setup(m, c->metrics_listen);
                if (k < 0) {
                        char buf[256];

                        snprintf(buf, sizeof(buf), "[Metrics] Listen=%s cannot be used: %s", c->metrics_listen,
                                 strerror(-k));
                        (void) metrics_setup(m, m->config->metrics_listen);
                        return reload_reject(m, c, -EINVAL, buf, ret_error);
                }
        }

        old = m->config;
        manager_set_config(m, c);
        log_set_max_level(m->log_level_override >= 0 ? m->log_level_override : c->log_level);
        registry_reconfigure(&m->registry, old, c);
        config_free(old);
        (void) low_memory_monitor_set_enabled(m->lmm, c->dbus_low_memory_monitor);
        if (m->protection)
                protection_source_configure(m->protection, manager_recursive_protection(m), c->refresh_usec);
        if (m->reclaim)
                (void) reclaim_controller_configure(m->reclaim, c, manager_recursive_protection(m));
        watchdog_setup(m);
        manager_check_fdstore(m);

        log_struct(LOG_INFO, MESSAGE_ID_RELOADED, "Configuration reloaded.");
        (void) sd_notify(0, "READY=1\nSTATUS=Serving.");
        return 0;
}
