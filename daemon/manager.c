/* SPDX-License-Identifier: MIT */
/*
 * The manager: event loop, configuration and reload, cgroup hierarchies,
 * the listening socket (own or socket-activated), signals, sd_notify and
 * the watchdog, GetStatus and the metrics export.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include "config-build.h"
#include "log.h"
#include "manager.h"
#include "registration-episode.h"
#include "proxy.h"
#include "source-protection.h"
#include "status.h"

int manager_new(Manager **ret) {
        Manager *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->listen_fd = -1;
        m->spare_fd = -1;
        m->log_level_override = -1;
        m->v1.fd = m->v2.fd = -1;
        m->start_monotonic = now_usec(CLOCK_MONOTONIC);
        m->base = event_base_new();
        m->config = config_new_default();
        if (!m->base || !m->config) {
                manager_free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

static void free_event(struct event **e) {
        if (*e) {
                event_free(*e);
                *e = NULL;
        }
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;
        while (m->clients)
                client_free(m->clients);
        m->proxy = proxy_stop(m->proxy);
        free(m->proxy_path);
        /* Every registration went with its last subscriber. */
        source_protection_shutdown(m);
        metrics_server_free(m->metrics);
        free_event(&m->ev_accept);
        free_event(&m->ev_reap);
        free_event(&m->ev_sigterm);
        free_event(&m->ev_sigint);
        free_event(&m->ev_sighup);
        free_event(&m->ev_watchdog);
        free_event(&m->ev_refresh);
        safe_close(m->listen_fd);
        safe_close(m->spare_fd);
        if (m->socket_path) {
                (void) unlink(m->socket_path);
                free(m->socket_path);
        }
        hierarchy_close(&m->v1);
        hierarchy_close(&m->v2);
        free(m->cgroup_root_arg);
        free(m->cgroup_v1_root_arg);
        free(m->users);
        config_free(m->config);
        if (m->base)
                event_base_free(m->base);
        free(m);
        return NULL;
}

int manager_setup_cgroups(Manager *m) {
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
        m->recursive_prot_mount = mounts.v2_recursive_prot && !m->cgroup_root_arg && !m->config->cgroup_root;

        hierarchy_close(&m->v2);
        hierarchy_close(&m->v1);
        if (v2) {
                k = hierarchy_open(&m->v2, v2);
                if (k < 0)
                        log_warning_errno(k, "Failed to open cgroup2 hierarchy %s, cgroup2 sources are unavailable: %m", v2);
        }
        if (v1) {
                k = hierarchy_open(&m->v1, v1);
                if (k < 0)
                        log_warning_errno(k, "Failed to open cgroup v1 memory hierarchy %s, vmpressure is unavailable: %m", v1);
        }
        log_info("cgroup2 hierarchy: %s; cgroup v1 memory hierarchy: %s; recursive protection: %s.",
                 strna(m->v2.path), strna(m->v1.path), manager_recursive_protection(m) ? "yes" : "no");
        cgroup_mounts_done(&mounts);
        return 0;
}

static int socket_is_live(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) == 0)
                return 1;
        return errno == ECONNREFUSED || errno == ENOENT ? 0 : -errno;
}

static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *dir = strdup(path);
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = 0;
        for (char *p = dir + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(dir, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static void strv_freep(char ***p) {
        if (*p)
                for (char **s = *p; *s; s++)
                        free(*s);
        free(*p);
}

int manager_listen(Manager *m, const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        _cleanup_(strv_freep) char **names = NULL;
        int n, k;

        n = sd_listen_fds_with_names(1, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to get sockets from the service manager: %m");
        if (n > 0) {
                int varlink_fd = -1, mp_fd = -1;

                /* The memory-pressure socket is told apart by its FileDescriptorName=. */
                for (int i = 0; i < n; i++) {
                        int afd = SD_LISTEN_FDS_START + i;

                        if (names && names[i] && streq(names[i], "memory-pressure") && mp_fd < 0)
                                mp_fd = afd;
                        else if (varlink_fd < 0)
                                varlink_fd = afd;
                        else {
                                log_warning("Received an extra socket (fd %d), ignoring it.", afd);
                                (void) close(afd);
                        }
                }
                if (varlink_fd < 0)
                        return log_error_errno(EINVAL, "The service manager passed no varlink socket.");
                if (sd_is_socket_unix(varlink_fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                        return log_error_errno(EINVAL, "The inherited fd %d is not a listening AF_UNIX stream socket.",
                                               varlink_fd);
                if (mp_fd >= 0 && sd_is_socket_unix(mp_fd, SOCK_STREAM, 1, NULL, 0) <= 0)
                        return log_error_errno(EINVAL, "The inherited fd %d is not a listening AF_UNIX stream socket.",
                                               mp_fd);
                /* Without a memory-pressure fd, bind only a configured path:
                 * the default one belongs to the socket unit. */
                k = proxy_start(m, mp_fd, mp_fd >= 0 || !m->proxy_path_explicit ? NULL : m->proxy_path);
                if (k < 0)
                        return k;
                m->listen_fd = varlink_fd;
                m->socket_activated = true;
                (void) fcntl(m->listen_fd, F_SETFL, fcntl(m->listen_fd, F_GETFL) | O_NONBLOCK);
                (void) fcntl(m->listen_fd, F_SETFD, FD_CLOEXEC);
                log_info("Serving on the socket passed by the service manager.");
                return client_accept_start(m);
        }

        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path %s is too long.", path);
        strcpy(sa.sun_path, path);

        k = mkdir_parents(path, m->user_mode ? 0700 : 0755);
        if (k < 0)
                return log_error_errno(k, "Failed to create the directory of %s: %m", path);

        k = socket_is_live(path);
        if (k > 0)
                return log_error_errno(EADDRINUSE, "Another pressured is already serving %s; not taking it over.", path);
        if (k == 0 && unlink(path) == 0)
                log_info("Removed the stale socket %s left by a previous instance.", path);

        /* The memory-pressure socket first: once the varlink socket accepts,
         * whoever waited for it finds the daemon's sockets all in place. */
        k = proxy_start(m, -1, m->proxy_path);
        if (k < 0)
                return k;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create socket: %m");
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return log_error_errno(errno, "Failed to bind %s: %m", path);
        m->socket_path = strdup(path);
        if (!m->socket_path)
                return log_error_errno(ENOMEM, "Out of memory.");
        /* System mode: anyone may connect; access control is per call. */
        if (chmod(path, m->user_mode ? 0600 : 0666) < 0)
                return log_error_errno(errno, "Failed to set the mode of %s: %m", path);
        if (listen(fd, SOMAXCONN) < 0)
                return log_error_errno(errno, "Failed to listen on %s: %m", path);
        m->listen_fd = TAKE_FD(fd);
        log_info("Listening on %s.", path);
        return client_accept_start(m);
}

static void on_reap(evutil_socket_t fd, short what, void *userdata) {
        client_reap(userdata);
}

static void on_sigterm(evutil_socket_t sig, short what, void *userdata) {
        Manager *m = userdata;

        log_info("Received %s, shutting down.", sig == SIGINT ? "SIGINT" : "SIGTERM");
        (void) sd_notify(0, "STOPPING=1\nSTATUS=Shutting down.");
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
                free_event(&m->ev_watchdog);
                return;
        }
        if (!m->ev_watchdog)
                m->ev_watchdog = event_new(m->base, -1, EV_PERSIST, on_watchdog, m);
        if (!m->ev_watchdog)
                return;
        tv = usec_to_timeval(usec / 2);
        event_add(m->ev_watchdog, &tv);
        (void) sd_notify(0, "WATCHDOG=1");
}

static int metrics_setup(Manager *m, const char *listen) {
        MetricsServer *s = NULL;
        int k;

        m->metrics = metrics_server_free(m->metrics);
        if (!listen)
                return 0;
        k = metrics_server_new(m->base, listen, status_write_metrics, m, &s);
        if (k < 0)
                return k;
        m->metrics = s;
        log_info("Serving metrics on http://%s/metrics.", listen);
        return 0;
}

int manager_run(Manager *m) {
        int k;

        m->ev_reap = event_new(m->base, -1, 0, on_reap, m);
        m->ev_sigterm = evsignal_new(m->base, SIGTERM, on_sigterm, m);
        m->ev_sigint = evsignal_new(m->base, SIGINT, on_sigterm, m);
        m->ev_sighup = evsignal_new(m->base, SIGHUP, on_sighup, m);
        if (!m->ev_reap || !m->ev_sigterm || !m->ev_sigint || !m->ev_sighup ||
            event_add(m->ev_sigterm, NULL) < 0 || event_add(m->ev_sigint, NULL) < 0 ||
            event_add(m->ev_sighup, NULL) < 0)
                return log_error_errno(ENOMEM, "Failed to set up signal handling.");

        k = metrics_setup(m, m->config->metrics_listen);
        if (k < 0)
                return k;
        watchdog_setup(m);

        log_struct(LOG_INFO, MESSAGE_ID_STARTED, "pressured %s started.", PACKAGE_VERSION);
        (void) sd_notify(0, "READY=1\nSTATUS=Serving.");

        if (event_base_dispatch(m->base) < 0)
                return log_error_errno(EIO, "The event loop failed.");

        (void) sd_notify(0, "STOPPING=1");
        log_struct(LOG_INFO, MESSAGE_ID_STOPPED, "pressured stopped.");
        return 0;
}

/* Move level subscriptions whose configured trigger changed. */
static void reload_levels(Manager *m, const Config *old) {
        Registration *r, *rn;

        LIST_FOREACH_SAFE(registrations, r, rn, m->registrations) {
                Subscription *s, *sn;

                LIST_FOREACH_SAFE(subscriptions, s, sn, r->subscriptions) {
                        RegistrationKey key = { .type = r->type, .cgroup = r->cgroup };
                        VarlinkError e = {};
                        Registration *to;
                        int k;

                        if (!s->by_level)
                                continue;
                        if (r->type == SOURCE_PSI) {
                                if (psi_trigger_equal(&old->levels[s->level], &m->config->levels[s->level]))
                                        continue;
                                key.psi = m->config->levels[s->level];
                        } else if (r->type == SOURCE_VMPRESSURE) {
                                if (old->vmpressure_mode == m->config->vmpressure_mode)
                                        continue;
                                key.vm_level = s->level;
                                key.vm_mode = m->config->vmpressure_mode;
                        } else
                                continue;

                        k = registration_acquire(m, &key, &to, &e);
                        if (k < 0) {
                                log_warning("Could not move a %s subscription on %s to the new trigger (%s), keeping the old one.",
                                            level_to_string(s->level), r->cgroup, strna(e.name));
                                varlink_error_done(&e);
                                continue;
                        }
                        /* Frees r when its last subscription moved; sn is NULL then. */
                        subscription_move(s, to);
                }
        }
}

int manager_reload(Manager *m, char **ret_error) {
        _cleanup_free_ char *error = NULL;
        Registration *r;
        Config *c = NULL, *old;
        int k;

        (void) sd_notifyf(0, "RELOADING=1\nSTATUS=Reloading.\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));

        k = config_load(m->config_main, m->config_dropins, m->config_path, &c, &error);
        if (k < 0) {
                log_struct(LOG_ERR, MESSAGE_ID_CONFIG_REJECTED, "Configuration rejected, keeping the previous one: %s",
                           error ? error : strerror(-k));
                (void) sd_notify(0, "READY=1\nSTATUS=Serving (configuration rejected).");
                if (ret_error)
                        *ret_error = TAKE_PTR(error);
                return k;
        }

        if (!streq_ptr(c->metrics_listen, m->config->metrics_listen)) {
                k = metrics_setup(m, c->metrics_listen);
                if (k < 0) {
                        char buf[256];

                        snprintf(buf, sizeof(buf), "[Metrics] Listen=%s cannot be used: %s", c->metrics_listen,
                                 strerror(-k));
                        log_struct(LOG_ERR, MESSAGE_ID_CONFIG_REJECTED, "Configuration rejected, keeping the previous one: %s", buf);
                        (void) metrics_setup(m, m->config->metrics_listen);
                        config_free(c);
                        (void) sd_notify(0, "READY=1");
                        if (ret_error)
                                *ret_error = strdup(buf);
                        return -EINVAL;
                }
        }

        old = m->config;
        m->config = c;
        log_set_max_level(m->log_level_override >= 0 ? m->log_level_override : c->log_level);
        reload_levels(m, old);
        config_free(old);
        LIST_FOREACH(registrations, r, m->registrations)
                registration_episode_reconfigure(r);
        source_protection_reconfigure(m);
        watchdog_setup(m);

        log_struct(LOG_INFO, MESSAGE_ID_RELOADED, "Configuration reloaded.");
        (void) sd_notify(0, "READY=1\nSTATUS=Serving.");
        return 0;
}
