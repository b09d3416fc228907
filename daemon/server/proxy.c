/* SPDX-License-Identifier: MIT */
/*
 * The systemd pressure proxy (see proxy.h): one listening socket per
 * resource, accepting and identifying peers, reading their trigger line
 * with a bound and a deadline, attaching them to the registration of their
 * own cgroup for that resource, and writing one byte per event without
 * ever blocking.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "event-util.h"
#include "kills.h"
#include "log.h"
#include "proxy.h"
#include "socket-util.h"
#include "varlink-error.h"

static const ListenerOps proxy_listener_ops;

static const char *const proxy_fd_names[_RESOURCE_MAX] = {
        [RESOURCE_MEMORY] = "memory-pressure",
        [RESOURCE_CPU] = "cpu-pressure",
        [RESOURCE_IO] = "io-pressure",
};

const char *proxy_fd_name(Resource r) {
        return r >= 0 && r < _RESOURCE_MAX ? proxy_fd_names[r] : NULL;
}

int proxy_parse_request(const char *buf, size_t len, PsiTrigger *ret, const char **ret_reason) {
        char text[PROXY_LINE_MAX + 1];
        const char *reason = NULL;
        PsiTrigger t;

        *ret = PROXY_DEFAULT_TRIGGER;
        if (ret_reason)
                *ret_reason = NULL;
        if (len > PROXY_LINE_MAX) {
                reason = "its line is longer than a trigger line";
                goto fail;
        }
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] >= 0x7f) {
                        reason = "its line holds binary data";
                        goto fail;
                }
        memcpy(text, buf, len);
        text[len] = 0;
        if (psi_trigger_parse(text, &t) < 0) {
                reason = "its line is not a trigger like \"some 150ms 2s\"";
                goto fail;
        }
        if (psi_trigger_check(&t, &reason) < 0)
                goto fail;
        *ret = t;
        return 0;
fail:
        if (ret_reason)
                *ret_reason = reason;
        return -EINVAL;
}

Level proxy_vmpressure_level(const PsiTrigger *t, const PsiTrigger levels[static _LEVEL_MAX]) {
        for (int l = _LEVEL_MAX - 1; l > LEVEL_LOW; l--) {
                const PsiTrigger *c = &levels[l];

                if (c->stall == PSI_STALL_FULL && t->stall != PSI_STALL_FULL)
                        continue;
                /* t->threshold / t->window >= c->threshold / c->window */
                if ((unsigned __int128) t->threshold_us * c->window_us >=
                    (unsigned __int128) c->threshold_us * t->window_us)
                        return (Level) l;
        }
        return LEVEL_LOW;
}

static ProxyClient *proxy_client_free(ProxyClient *p) {
        ProxyServer *s;

        if (!p)
                return NULL;
        s = p->server;
        if (s->hooks && s->hooks->disconnected)
                s->hooks->disconnected(p, s->hooks_userdata);
        listener_detach(&p->listener);
        log_debug("Proxied client %" PRIu64 " (pid %d, unit %s) disconnected; %" PRIu64 " sent, %" PRIu64 " dropped.",
                  p->id, (int) p->pid, strna(p->unit), p->sent, p->dropped);
        LIST_REMOVE(all, s->clients, p);
        s->n_clients--;
        event_free_and_null(&p->ev_read);
        event_free_and_null(&p->ev_timer);
        safe_close(p->fd);
        safe_close(p->pidfd);
        free(p->unit);
        free(p);
        return NULL;
}

/* The unit a cgroup path belongs to: its last ".service" or ".scope" component. */
static char *unit_from_cgroup(const char *path) {
        const char *best = NULL, *p = path;
        size_t best_len = 0;

        while (p && *p) {
                const char *e;
                size_t n;

                while (*p == '/')
                        p++;
                e = strchrnul(p, '/');
                n = (size_t) (e - p);
                if ((n > 8 && memcmp(e - 8, ".service", 8) == 0) || (n > 6 && memcmp(e - 6, ".scope", 6) == 0)) {
                        best = p;
                        best_len = n;
                }
                p = e;
        }
        return best ? strndup(best, best_len) : NULL;
}

/*
 * The peer's cgroup paths from /proc/PID/cgroup: @ret_v2 from the "0::"
 * line, @ret_v1 from the line whose controllers include "memory".
 */
static int read_peer_cgroups(pid_t pid, char **ret_v2, char **ret_v1) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char path[64];
        size_t size = 0;

        *ret_v2 = *ret_v1 = NULL;
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (getline(&line, &size, f) > 0) {
                char *ctl, *cg, **dst = NULL;

                strip_trailing(line);
                ctl = strchr(line, ':');
                cg = ctl ? strchr(ctl + 1, ':') : NULL;
                if (!cg)
                        continue;
                *cg++ = 0;
                *ctl++ = 0;
                if (streq(line, "0") && ctl[0] == 0)
                        dst = ret_v2;
                else {
                        char *save = NULL;

                        for (char *tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                                if (streq(tok, "memory"))
                                        dst = ret_v1;
                }
                if (dst && !*dst && cgroup_path_normalize(cg, dst) < 0)
                        *dst = NULL;
        }
        return 0;
}

/* The directory of @cgroup in @h if it has @file, else -1. */
static int cgroup_dir_with(const Hierarchy *h, const char *cgroup, const char *file) {
        _cleanup_close_ int fd = -1;

        if (h->fd < 0)
                return -1;
        fd = hierarchy_open_cgroup(h, cgroup);
        return fd >= 0 && faccessat(fd, file, F_OK, 0) == 0 ? TAKE_FD(fd) : -1;
}

/*
 * The registration key for the peer: PSI on its cgroup2 cgroup if that has
 * the pressure file of the client's resource; else, for memory only,
 * vmpressure on its v1 memory cgroup at the matching level; else the
 * system-wide PSI trigger of the resource. @ret_cgroup owns the
 * string @key points to; @ret_dirfd is the directory found to have the
 * file, to register in (-1 for the whole system).
 */
static void proxy_choose(ProxyClient *p, const PsiTrigger *t, RegistrationKey *key, char **ret_cgroup,
                         int *ret_dirfd) {
        ProxyEnv *env = &p->server->env;
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;
        int k;

        k = read_peer_cgroups(p->pid, &v2, &v1);
        if (k < 0)
                log_warning_errno(k, "Cannot read /proc/%d/cgroup of proxied client %" PRIu64 ", "
                                  "it watches the whole system: %m", (int) p->pid, p->id);
        if (!pidfd_alive(p->pidfd)) {
                /* The pid may be someone else's by now: trust nothing read. */
                free(v2);
                free(v1);
                v2 = v1 = NULL;
        }
        free(p->unit);
        p->unit = unit_from_cgroup(v2 ?: v1 ?: "");

        *key = (RegistrationKey) { .type = SOURCE_PSI, .resource = p->resource, .psi = *t };
        *ret_dirfd = -1;
        if (v2 && !streq(v2, "/") &&
            (*ret_dirfd = cgroup_dir_with(env->v2, v2, resource_pressure_file(p->resource))) >= 0)
                *ret_cgroup = TAKE_PTR(v2);
        else if (p->resource == RESOURCE_MEMORY && v1 && !streq(v1, "/") &&
                 (*ret_dirfd = cgroup_dir_with(env->v1, v1, "memory.pressure_level")) >= 0) {
                key->type = SOURCE_VMPRESSURE;
                key->vm_level = proxy_vmpressure_level(t, env->config->levels);
                key->vm_mode = env->config->vmpressure_mode;
                *ret_cgroup = TAKE_PTR(v1);
        } else
                *ret_cgroup = strdup("/");
        key->cgroup = *ret_cgroup;
}

static void proxy_reject_line(ProxyClient *p, const char *reason) {
        log_ratelimited(LOG_WARNING, 0, NULL, 10, 20,
                        "Proxied %s client pid %d (unit %s) did not ask for a valid PSI trigger: %s. It gets the default trigger.",
                        resource_to_string(p->resource), (int) p->pid, strna(p->unit), reason);
        counter_inc(p->server->env.counters, COUNTER_PROXY_INVALID_REQUESTS);
}

static void proxy_attach(ProxyClient *p, const PsiTrigger *t) {
        ProxyEnv *env = &p->server->env;
        _cleanup_free_ char *cgroup = NULL;
        _cleanup_close_ int dirfd = -1;
        _cleanup_(varlink_error_done) VarlinkError e = {};
        SourceFailure f = {};
        RegistrationKey key;
        Registration *r;
        char desc[PSI_TRIGGER_FORMAT_MAX], reason[POLICY_REASON_MAX];
        const char *why;
        PsiTrigger fallback;
        bool adjusted;
        int k;

        p->line_done = true;
        event_free_and_null(&p->ev_timer);
        proxy_choose(p, t, &key, &cgroup, &dirfd);
        if (!cgroup) {
                log_warning("Out of memory attaching proxied client %" PRIu64 "; it stays silent.", p->id);
                return;
        }
        /* Known only now: the whole system's file has rules of its own (cpu "full"). */
        if (key.type == SOURCE_PSI && streq(cgroup, "/") &&
            psi_trigger_check_resource(&key.psi, key.resource, true, &why) < 0) {
                proxy_reject_line(p, why);
                fallback = PROXY_DEFAULT_TRIGGER;
                key.psi = fallback;
                t = &fallback;
        }
        k = registration_acquire_for(env->registry, &key, dirfd, p->uid, true, &r, &adjusted, reason, &f);
        if (k < 0) {
                varlink_error_from_failure(&e, &f, key.cgroup);
                /* Stay connected and silent: closing would make sd-event spin. */
                log_warning_errno(k, "Proxied %s client %" PRIu64 " (pid %d, unit %s) cannot watch %s, "
                                  "it stays connected without events: %s: %s",
                                  resource_to_string(p->resource), p->id, (int) p->pid, strna(p->unit), cgroup,
                                  strna(e.name), strna(json_string_value(json_object_get(e.parameters, "reason"))));
                return;
        }
        listener_attach(&p->listener, r);
        if (p->server->hooks && p->server->hooks->attached)
                p->server->hooks->attached(p, p->server->hooks_userdata);
        (void) psi_trigger_format(t, PSI_TRIGGER_FORMAT_CONFIG, desc, sizeof(desc));
        log_debug("Proxied client %" PRIu64 " (pid %d, uid %u, unit %s) connected: %s %s on %s (%s).", p->id,
                  (int) p->pid, (unsigned) p->uid, strna(p->unit), resource_to_string(r->src.resource),
                  source_type_to_string(r->src.type), r->src.cgroup, desc);
        if (adjusted && r->src.type == SOURCE_PSI) {
                char used[PSI_TRIGGER_FORMAT_MAX];

                (void) psi_trigger_format(&r->src.used, PSI_TRIGGER_FORMAT_CONFIG, used, sizeof(used));
                log_ratelimited(LOG_NOTICE, 0, NULL, 10, 5,
                                "Proxied client pid %d (uid %u, unit %s) asked for \"%s\", registered \"%s\": %s.",
                                (int) p->pid, (unsigned) p->uid, strna(p->unit), desc, used, reason);
        }
}

static void proxy_decide(ProxyClient *p) {
        const char *reason;
        PsiTrigger t;

        if (proxy_parse_request(p->line, p->len, &t, &reason) < 0)
                proxy_reject_line(p, reason);
        proxy_attach(p, &t);
}

static void on_proxy_timeout(evutil_socket_t fd, short what, void *userdata) {
        ProxyClient *p = userdata;

        if (p->len == 0) {
                /* Nothing written: MEMORY_PRESSURE_WRITE was unset. */
                PsiTrigger t = PROXY_DEFAULT_TRIGGER;

                proxy_attach(p, &t);
        } else
                proxy_decide(p); /* an unterminated line: judged as it is */
}

static void on_proxy_read(evutil_socket_t fd, short what, void *userdata) {
        ProxyClient *p = userdata;
        char buf[4096];
        ssize_t n;

        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                proxy_client_free(p);
                return;
        }
        if (p->line_done)
                return; /* read and discarded */

        for (ssize_t i = 0; i < n; i++) {
                if (buf[i] == 0 || buf[i] == '\n') {
                        proxy_decide(p);
                        return;
                }
                if (p->len >= PROXY_LINE_MAX) {
                        proxy_reject_line(p, "its line is longer than a trigger line");
                        PsiTrigger t = PROXY_DEFAULT_TRIGGER;
                        proxy_attach(p, &t);
                        return;
                }
                p->line[p->len++] = buf[i];
        }
}

static unsigned proxy_clients_of(ProxyServer *s, uid_t uid) {
        ProxyClient *p;
        unsigned n = 0;

        LIST_FOREACH(all, p, s->clients)
                if (p->uid == uid)
                        n++;
        return n;
}

static void proxy_accept_one(ProxySocket *sock, int fd) {
        ProxyServer *s = sock->server;
        ProxyEnv *env = &s->env;
        _cleanup_close_ int cfd = fd;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct timeval tv = usec_to_timeval(PROXY_READ_TIMEOUT_USEC);
        ProxyClient *p;
        int pidfd = -1;
        _cleanup_free_ char *v2 = NULL, *v1 = NULL;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                log_warning_errno(errno, "Failed to get the credentials of a proxied client: %m");
                return;
        }
        if ((env->varlink ? env->varlink->n_clients : 0) + s->n_clients >= env->config->max_clients) {
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                "Limit MaxClients=%u reached, refusing a %s client of uid %u.",
                                env->config->max_clients, proxy_fd_name(sock->resource), (unsigned) cred.uid);
                return;
        }
        if (cred.uid != 0 && proxy_clients_of(s, cred.uid) >= env->config->max_clients_per_user) {
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                "Limit MaxClientsPerUser=%u reached, refusing a %s client of uid %u.",
                                env->config->max_clients_per_user, proxy_fd_name(sock->resource), (unsigned) cred.uid);
                return;
        }
        pidfd = socket_peer_pidfd(fd, cred.pid);

        p = calloc(1, sizeof(*p));
        if (!p) {
                safe_close(pidfd);
                return;
        }
        *p = (ProxyClient) {
                .listener = { .ops = &proxy_listener_ops, .uid = cred.uid, .explicit_psi = true, .kick = true,
                              .level = _LEVEL_INVALID },
                .server = s,
                .id = ++s->next_id,
                .resource = sock->resource,
                .fd = TAKE_FD(cfd),
                .pidfd = pidfd,
                .pid = cred.pid,
                .uid = cred.uid,
                .decide_by = now_usec(CLOCK_MONOTONIC) + PROXY_READ_TIMEOUT_USEC,
        };
        LIST_PREPEND(all, s->clients, p);
        s->n_clients++;
        counter_inc(env->counters, COUNTER_PROXY_CONNECTIONS);
        if (read_peer_cgroups(p->pid, &v2, &v1) >= 0)
                p->unit = unit_from_cgroup(v2 ?: v1 ?: "");

        p->ev_read = event_new(env->base, p->fd, EV_READ | EV_PERSIST, on_proxy_read, p);
        p->ev_timer = evtimer_new(env->base, on_proxy_timeout, p);
        if (!p->ev_read || !p->ev_timer || event_add(p->ev_read, NULL) < 0 || evtimer_add(p->ev_timer, &tv) < 0) {
                log_warning("Out of memory accepting a proxied client.");
                proxy_client_free(p);
                return;
        }
        if (s->hooks && s->hooks->connected)
                s->hooks->connected(p, s->hooks_userdata);
}

int proxy_adopt_client(ProxyServer *s, int fd, const SnapshotProxyClient *snap, Registration *r) {
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        /* The deadline it had: a takeover neither shortens nor extends it. */
        uint64_t due = snap->decide_by_usec > now && snap->decide_by_usec - now <= PROXY_READ_TIMEOUT_USEC ?
                       snap->decide_by_usec : now;
        struct timeval tv = usec_to_timeval(due - now);
        ProxyClient *p = calloc(1, sizeof(*p));

        if (!p) {
                safe_close(fd);
                return -ENOMEM;
        }
        *p = (ProxyClient) {
                .listener = { .ops = &proxy_listener_ops, .uid = snap->uid, .explicit_psi = true, .kick = true,
                              .level = _LEVEL_INVALID },
                .server = s,
                .id = snap->id,
                .resource = snap->resource,
                .fd = fd,
                .pidfd = snap->line_done ? -1 : socket_peer_pidfd(fd, snap->pid),
                .pid = snap->pid,
                .uid = snap->uid,
                .len = snap->line.size < PROXY_LINE_MAX ? snap->line.size : PROXY_LINE_MAX,
                .line_done = snap->line_done,
                .sent = snap->sent,
                .dropped = snap->dropped,
                .decide_by = due,
        };
        LIST_PREPEND(all, s->clients, p);
        s->n_clients++;
        if (snap->id > s->next_id)
                s->next_id = snap->id;
        memcpy(p->line, snap->line.data ?: "", p->len);
        if (snap->unit && !(p->unit = strdup(snap->unit))) {
                proxy_client_free(p);
                return -ENOMEM;
        }
        p->ev_read = event_new(s->env.base, p->fd, EV_READ | EV_PERSIST, on_proxy_read, p);
        if (!p->line_done)
                p->ev_timer = evtimer_new(s->env.base, on_proxy_timeout, p);
        if (!p->ev_read || event_add(p->ev_read, NULL) < 0 ||
            (!p->line_done && (!p->ev_timer || evtimer_add(p->ev_timer, &tv) < 0))) {
                proxy_client_free(p);
                return -ENOMEM;
        }
        if (r)
                listener_attach(&p->listener, r);
        return 0;
}

int proxy_client_export(const ProxyClient *p, SnapshotProxyClient *ret) {
        SnapshotProxyClient e = {
                .id = p->id,
                .resource = p->resource,
                .pid = p->pid,
                .uid = p->uid,
                .line_done = p->line_done,
                .decide_by_usec = p->line_done ? 0 : p->decide_by,
                .registration = p->listener.reg ? p->listener.reg->id : 0,
                .sent = p->sent,
                .dropped = p->dropped,
        };

        if ((p->unit && !(e.unit = strdup(p->unit))) || snapshot_bytes_set(&e.line, p->line, p->len) < 0) {
                free(e.unit);
                return -ENOMEM;
        }
        *ret = e;
        return 0;
}

static void on_proxy_accept(evutil_socket_t lfd, short what, void *userdata) {
        ProxySocket *sock = userdata;

        for (int i = 0; i < 64; i++) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (fd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_ratelimited(LOG_WARNING, errno, NULL, 10, 5,
                                                "Failed to accept a %s client: %m", proxy_fd_name(sock->resource));
                        return;
                }
                proxy_accept_one(sock, fd);
        }
}

int proxy_new(const ProxyEnv *env, ProxyServer **ret) {
        ProxyServer *s = calloc(1, sizeof(*s));

        if (!s)
                return log_error_errno(ENOMEM, "Out of memory.");
        s->env = *env;
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                s->sockets[r] = (ProxySocket) { .server = s, .resource = r, .fd = -1 };
        *ret = s;
        return 0;
}

int proxy_listen(ProxyServer *s, Resource resource, int listen_fd, const char *path) {
        ProxySocket *sock = &s->sockets[resource];

        if (sock->fd >= 0) {
                safe_close(listen_fd);
                return -EEXIST;
        }
        if (path && !(sock->path = strdup(path))) {
                safe_close(listen_fd);
                return log_error_errno(ENOMEM, "Out of memory.");
        }
        sock->fd = listen_fd;
        sock->ev_accept = event_new(s->env.base, sock->fd, EV_READ | EV_PERSIST, on_proxy_accept, sock);
        if (!sock->ev_accept || event_add(sock->ev_accept, NULL) < 0)
                return log_error_errno(ENOMEM, "Failed to watch the %s socket.", proxy_fd_name(resource));
        return 0;
}

void proxy_set_config(ProxyServer *s, const Config *config) {
        if (s)
                s->env.config = config;
}

void proxy_forget_paths(ProxyServer *s) {
        for (Resource r = 0; s && r < _RESOURCE_MAX; r++) {
                free(s->sockets[r].path);
                s->sockets[r].path = NULL;
        }
}

/* The local address of @fd, a pathname AF_UNIX socket; false if it is not one. */
static bool socket_local_path(int fd, struct sockaddr_un *ret, socklen_t *ret_len) {
        *ret_len = sizeof(*ret);
        return getsockname(fd, (struct sockaddr *) ret, ret_len) == 0 && ret->sun_family == AF_UNIX &&
               *ret_len > offsetof(struct sockaddr_un, sun_path) + 1 && ret->sun_path[0] != 0;
}

Resource proxy_resource_of_fd(const ProxyServer *s, int fd) {
        struct sockaddr_un a, l;
        socklen_t alen, llen;

        if (!socket_local_path(fd, &a, &alen))
                return RESOURCE_MEMORY;
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                if (s->sockets[r].fd >= 0 && socket_local_path(s->sockets[r].fd, &l, &llen) && llen == alen &&
                    memcmp(a.sun_path, l.sun_path, alen - offsetof(struct sockaddr_un, sun_path)) == 0)
                        return r;
        return RESOURCE_MEMORY;
}

ProxyServer *proxy_stop(ProxyServer *s) {
        if (!s)
                return NULL;
        while (s->clients)
                proxy_client_free(s->clients);
        for (Resource r = 0; r < _RESOURCE_MAX; r++) {
                ProxySocket *sock = &s->sockets[r];

                event_free_and_null(&sock->ev_accept);
                safe_close(sock->fd);
                if (sock->path) {
                        (void) unlink(sock->path);
                        free(sock->path);
                }
        }
        free(s);
        return NULL;
}

/* One byte per event, never blocking; a full socket drops the byte and counts it. */
static bool proxy_deliver(Listener *l, Body *body, uint64_t count) {
        ProxyClient *p = (ProxyClient *) l;
        Counters *counters = p->server->env.counters;

        if (send(p->fd, "\n", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1) {
                p->sent++;
                counter_inc(counters, COUNTER_PROXY_EVENTS_SENT);
                return true;
        }
        /* Full (or gone: its end of file comes through the loop). */
        p->dropped++;
        counter_inc(counters, COUNTER_PROXY_EVENTS_DROPPED);
        return false;
}

unsigned proxy_warn_under(ProxyServer *s, const char *victim) {
        ProxyClient *p;
        unsigned n = 0;

        LIST_FOREACH(all, p, s ? s->clients : NULL) {
                const Registration *r = p->listener.reg;

                /* Its cgroup is its registration's; one that watches the whole system is in none. */
                if (!r || streq(r->src.cgroup, "/") || !kills_covers(victim, r->src.cgroup))
                        continue;
                if (proxy_deliver(&p->listener, NULL, 1))
                        n++;
        }
        return n;
}

/* The cgroup is gone: stay connected and silent, since closing would make sd-event spin. */
static void proxy_removed(Listener *l, Registration *r) {
        ProxyClient *p = (ProxyClient *) l;

        log_info("Cgroup %s is gone; proxied client pid %d stays connected without events.", r->src.cgroup,
                 (int) p->pid);
}

static const ListenerOps proxy_listener_ops = {
        .deliver = proxy_deliver,
        .removed = proxy_removed,
};

const ProxyClient *proxy_client_of(const Listener *l) {
        return l->ops == &proxy_listener_ops ? (const ProxyClient *) l : NULL;
}
