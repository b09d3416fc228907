/* SPDX-License-Identifier: MIT */
/* The pre-kill hook socket and its connections: see prekill-hook.h. */
#include <inttypes.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config-build.h"
#include "io.systemd.oom.Prekill.varlink.h"
#include "log.h"
#include "prekill-hook.h"
#include "prekill-book.h"
#include "varlink.h"

#define HOOK_INTERFACE "io.systemd.oom.Prekill"
#define HOOK_SERVICE "org.varlink.service"

static void hook_conn_process(HookConn *h);
static void hook_conn_arm_timer(HookConn *h);

/* ---- closing ---- */

static HookConn *hook_conn_free(HookConn *h) {
        HookServer *s;

        if (!h)
                return NULL;
        s = h->server;
        if (h->owed && s->ops->abandoned)
                s->ops->abandoned(h, s->ops_userdata);
        if (s->hooks && s->hooks->disconnected)
                s->hooks->disconnected(h, s->hooks_userdata);
        if (h->dead)
                LIST_REMOVE(dead, s->dead, h);
        LIST_REMOVE(conns, s->conns, h);
        s->n_conns--;
        if (h->refused)
                s->n_refused--;
        if (h->ev_read)
                event_free(h->ev_read);
        if (h->ev_write)
                event_free(h->ev_write);
        if (h->ev_timer)
                event_free(h->ev_timer);
        live_page_release(s->live, h->live_slot);
        varlink_reader_done(&h->in);
        outqueue_done(&h->out);
        safe_close(h->fd);
        log_debug("Hook connection %" PRIu64 " closed.", h->id);
        free(h);
        return NULL;
}

/* Close @h from the loop: safe while its owner is in a callback of it. */
static void hook_conn_kill(HookConn *h) {
        if (h->dead)
                return;
        h->dead = true;
        LIST_PREPEND(dead, h->server->dead, h);
        event_active(h->server->ev_reap, 0, 0);
}

void hook_server_reap(HookServer *s) {
        while (s->dead)
                hook_conn_free(s->dead);
}

static void on_reap(evutil_socket_t fd, short what, void *userdata) {
        hook_server_reap(userdata);
}

/* ---- the live page ---- */

/* What the live page says of @h: the answer owed (seq) and the last one written (written_seq). */
static void hook_conn_live(HookConn *h) {
        LiveSlot *l = live_page_slot(h->server->live, h->live_slot);

        if (!l)
                return;
        l->seq = h->owed ? h->owed : l->seq;
        if (outqueue_is_empty(&h->out)) {
                /* The answer is wholly written: a successor after a crash does not answer again. */
                if (h->answering)
                        l->written_seq = h->answering;
                h->answering = 0;
                l->flags &= ~LIVE_SLOT_PARTIAL;
        } else
                l->flags |= LIVE_SLOT_PARTIAL;
        if (varlink_reader_pending(&h->in) > 0)
                l->flags |= LIVE_SLOT_INPUT;
        else
                l->flags &= ~LIVE_SLOT_INPUT;
}

/* ---- writing ---- */

static void hook_conn_flush(HookConn *h) {
        LiveSlot *l = live_page_slot(h->server->live, h->live_slot);
        int k;

        if (h->dead)
                return;
        if (l)
                l->flags |= LIVE_SLOT_PARTIAL;
        k = outqueue_flush(&h->out, h->fd);
        hook_conn_live(h);
        if (k < 0) {
                hook_conn_kill(h);
                return;
        }
        if (k > 0 && h->write_armed) {
                event_del(h->ev_write);
                h->write_armed = false;
        }
        if (k > 0 && h->closing) {
                hook_conn_kill(h);
                return;
        }
        if (k == 0 && !h->write_armed) {
                if (event_add(h->ev_write, NULL) < 0) {
                        hook_conn_kill(h);
                        return;
                }
                h->write_armed = true;
        }
}

static void on_hook_write(evutil_socket_t fd, short what, void *userdata) {
        HookConn *h = userdata;

        hook_conn_flush(h);
        if (!h->dead && !h->write_armed)
                hook_conn_process(h);
}

/* Queue @msg (@size bytes, taken over; NULL: it could not be made, and @h is closed). */
static void hook_conn_send(HookConn *h, char *msg, size_t size) {
        if (!msg || outqueue_push_owned(&h->out, msg, size) < 0) {
                hook_conn_kill(h);
                return;
        }
        hook_conn_flush(h);
}

static void hook_reply(HookConn *h, bool oneway, json_t *params) {
        size_t n = 0;
        char *msg;

        if (oneway) {
                json_decref(params);
                return;
        }
        msg = params ? varlink_reply_new(params, false, &n) : NULL;
        hook_conn_send(h, msg, n);
}

static void hook_reply_error(HookConn *h, bool oneway, VarlinkError *e) {
        size_t n;
        char *msg;

        if (oneway || !e->name) {
                varlink_error_done(e);
                return;
        }
        msg = varlink_error_new(e->name, TAKE_PTR(e->parameters), &n);
        varlink_error_done(e);
        hook_conn_send(h, msg, n);
}

void hook_conn_owe(HookConn *h, uint64_t id) {
        h->owed = id;
        hook_conn_live(h);
        hook_conn_arm_timer(h);
}

void hook_conn_answer(HookConn *h) {
        static const char msg[] = "{\"parameters\":{}}";
        char *copy;

        if (h->dead)
                return;
        h->answering = h->owed;
        h->owed = 0;
        copy = malloc(sizeof(msg));
        hook_conn_send(h, copy ? memcpy(copy, msg, sizeof(msg)) : NULL, sizeof(msg));
        /* Its next call (on_hook_write() goes on with them) waits for the caller to return. */
        if (!h->dead && !h->write_armed)
                event_active(h->ev_write, EV_WRITE, 0);
}

/* ---- the calls ---- */

/* Reject any parameter of @params but @allowed (NULL or one name). */
static int hook_check_params(json_t *params, const char *allowed, VarlinkError *e) {
        const char *key;
        json_t *v;

        json_object_foreach(params, key, v)
                if (!allowed || !streq(key, allowed))
                        return varlink_error_invalid_parameter(e, key);
        return 0;
}

static int hook_get_info(HookConn *h, const VarlinkCall *call, VarlinkError *e) {
        int k = hook_check_params(call->parameters, NULL, e);

        if (k < 0)
                return k;
        hook_reply(h, call->oneway,
                   json_pack("{s:s, s:s, s:s, s:s, s:[s, s]}", "vendor", "pressured", "product", "pressured",
                             "version", PACKAGE_VERSION, "url", "man:pressured(8)",
                             "interfaces", HOOK_SERVICE, HOOK_INTERFACE));
        return 0;
}

static int hook_get_interface_description(HookConn *h, const VarlinkCall *call, VarlinkError *e) {
        json_t *v = json_object_get(call->parameters, "interface");
        int k = hook_check_params(call->parameters, "interface", e);
        const char *name;

        if (k < 0)
                return k;
        if (!json_is_string(v))
                return varlink_error_invalid_parameter(e, "interface");
        name = json_string_value(v);
        if (streq(name, HOOK_INTERFACE))
                hook_reply(h, call->oneway, json_pack("{s:s}", "description", io_systemd_oom_prekill_varlink));
        else if (streq(name, HOOK_SERVICE))
                hook_reply(h, call->oneway, json_pack("{s:s}", "description", varlink_service_description));
        else
                return varlink_error_interface_not_found(e, name);
        return 0;
}

static int hook_notify(HookConn *h, const VarlinkCall *call, VarlinkError *e) {
        HookServer *s = h->server;
        json_t *v = json_object_get(call->parameters, "cgroup");
        int k = hook_check_params(call->parameters, "cgroup", e);

        if (k < 0)
                return k;
        if (!json_is_string(v))
                return varlink_error_invalid_parameter(e, "cgroup");
        k = s->ops->notify(h, json_string_value(v), call->oneway, e, s->ops_userdata);
        if (k > 0)
                hook_reply(h, call->oneway, json_object());
        return k < 0 ? k : 0;
}

/* The error for a method this socket does not serve. */
static int hook_unknown(const char *method, VarlinkError *e) {
        const char *dot = strrchr(method, '.');
        _cleanup_free_ char *iface = dot ? strndup(method, (size_t) (dot - method)) : NULL;

        if (!dot)
                return varlink_error_method_not_found(e, method);
        if (!iface)
                return -ENOMEM;
        if (streq(iface, HOOK_INTERFACE) || streq(iface, HOOK_SERVICE))
                return varlink_error_method_not_found(e, method);
        return varlink_error_interface_not_found(e, iface);
}

static void hook_dispatch(HookConn *h, const VarlinkCall *call) {
        VarlinkError e = {};
        int k;

        if (h->refused) {
                /* Over the limit: this first call is refused, and the connection closed once that is written. */
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Hook connection %" PRIu64 " (uid %u) is over [Prekill] MaxCalls=%u + %d, refusing its call.",
                                h->id, (unsigned) h->uid, h->server->config->prekill_max_calls, HOOK_EXTRA_CONNECTIONS);
                k = varlink_error_limit_exceeded(&e, -EUSERS, "MaxCalls", h->server->config->prekill_max_calls);
                h->closing = true;
        } else if (streq(call->method, HOOK_INTERFACE ".Notify"))
                k = hook_notify(h, call, &e);
        else if (streq(call->method, HOOK_SERVICE ".GetInfo"))
                k = hook_get_info(h, call, &e);
        else if (streq(call->method, HOOK_SERVICE ".GetInterfaceDescription"))
                k = hook_get_interface_description(h, call, &e);
        else
                k = hook_unknown(call->method, &e);
        if (k >= 0)
                return;
        if (!e.name) {
                log_error_errno(k, "Failed to handle %s on the hook socket: %m", call->method);
                varlink_error_internal(&e, k);
        }
        hook_reply_error(h, call->oneway, &e);
        if (h->closing && call->oneway)
                hook_conn_kill(h);
}

static void hook_conn_message(HookConn *h, const char *msg, size_t size) {
        VarlinkCall call = {};
        VarlinkError e = {};
        int k = varlink_call_parse(msg, size, &call);

        if (k == -EBADMSG) {
                log_ratelimited(LOG_NOTICE, 0, NULL, 10, 5,
                                "Hook connection %" PRIu64 " (uid %u) sent a malformed message, closing it.", h->id,
                                (unsigned) h->uid);
                hook_conn_kill(h);
                return;
        }
        if (k == -EINVAL) {
                varlink_error_invalid_parameter(&e, "parameters");
                hook_reply_error(h, call.oneway, &e);
        } else
                hook_dispatch(h, &call);
        varlink_call_done(&call);
}

/* Handle the complete calls read, one answer at a time. */
static void hook_conn_process(HookConn *h) {
        while (!h->dead && !h->owed && !h->closing) {
                const char *msg;
                size_t size;
                int k = varlink_reader_next(&h->in, &msg, &size);

                if (k < 0) {
                        log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                        "Hook connection %" PRIu64 " sent a message over %d bytes, closing it.", h->id,
                                        PREKILL_HOOK_MESSAGE_MAX);
                        hook_conn_kill(h);
                        return;
                }
                if (k == 0)
                        break;
                h->last_activity = now_usec(CLOCK_MONOTONIC);
                hook_conn_message(h, msg, size);
        }
        if (h->dead)
                return;
        if (varlink_reader_pending(&h->in) == 0) {
                h->partial_since = 0;
                varlink_reader_trim(&h->in);
        } else if (h->partial_since == 0 && !h->owed)
                h->partial_since = now_usec(CLOCK_MONOTONIC);
        hook_conn_live(h);
        hook_conn_arm_timer(h);
}

static void on_hook_read(evutil_socket_t fd, short what, void *userdata) {
        HookConn *h = userdata;
        ssize_t n = varlink_reader_fill(&h->in, h->fd);

        if (n == -EAGAIN)
                return;
        if (n <= 0) {
                if (n < 0 && n != -ECONNRESET)
                        log_debug_errno((int) n, "Failed to read from hook connection %" PRIu64 ": %m", h->id);
                hook_conn_kill(h);
                return;
        }
        /* What waits behind an owed answer, or is not a call yet, is bounded too. */
        if (varlink_reader_pending(&h->in) > 2 * PREKILL_HOOK_MESSAGE_MAX) {
                log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                "Hook connection %" PRIu64 " (uid %u) sent too much, closing it.", h->id,
                                (unsigned) h->uid);
                hook_conn_kill(h);
                return;
        }
        hook_conn_process(h);
}

static void on_hook_timer(evutil_socket_t fd, short what, void *userdata) {
        HookConn *h = userdata;

        log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                        "Hook connection %" PRIu64 " (uid %u) %s, closing it.", h->id, (unsigned) h->uid,
                        h->partial_since ? "did not finish its message in time" : "was idle too long");
        hook_conn_kill(h);
}

/*
 * While an answer is owed nothing times out. Otherwise a started message
 * must end within RequestTimeoutSec= and a call come within
 * IdleTimeoutSec=; a connection over the limit gets RequestTimeoutSec= for
 * its first call.
 */
static void hook_conn_arm_timer(HookConn *h) {
        const Config *c = h->server->config;
        uint64_t now = now_usec(CLOCK_MONOTONIC), due;
        struct timeval tv;

        if (h->owed || h->dead) {
                evtimer_del(h->ev_timer);
                return;
        }
        if (h->partial_since)
                due = h->partial_since + c->request_timeout_usec;
        else
                due = h->last_activity + (h->refused ? c->request_timeout_usec : c->idle_timeout_usec);
        tv = usec_to_timeval(due > now ? due - now : 0);
        if (evtimer_add(h->ev_timer, &tv) < 0)
                hook_conn_kill(h);
}

/* ---- connections ---- */

/* A connection on @fd (taken over) numbered @id, watched for input; no hook is told. */
static int hook_conn_setup(HookServer *s, int fd, const struct ucred *cred, uint64_t id, HookConn **ret) {
        HookConn *h = calloc(1, sizeof(*h));

        if (!h) {
                safe_close(fd);
                return -ENOMEM;
        }
        *h = (HookConn) { .server = s, .id = id, .fd = fd, .uid = cred->uid, .gid = cred->gid, .pid = cred->pid,
                          .live_slot = -1, .last_activity = now_usec(CLOCK_MONOTONIC) };
        varlink_reader_init(&h->in, PREKILL_HOOK_MESSAGE_MAX);
        outqueue_init(&h->out);
        LIST_PREPEND(conns, s->conns, h);
        s->n_conns++;
        h->ev_read = event_new(s->base, fd, EV_READ | EV_PERSIST, on_hook_read, h);
        h->ev_write = event_new(s->base, fd, EV_WRITE | EV_PERSIST, on_hook_write, h);
        h->ev_timer = evtimer_new(s->base, on_hook_timer, h);
        if (!h->ev_read || !h->ev_write || !h->ev_timer || event_add(h->ev_read, NULL) < 0 ||
            (s->live && (h->live_slot = live_page_claim(s->live, id | HOOK_LIVE_ID_BIT)) < 0)) {
                hook_conn_free(h);
                return -ENOMEM;
        }
        *ret = h;
        return 0;
}

static void hook_accept_one(HookServer *s, int fd) {
        unsigned limit = s->config->prekill_max_calls + HOOK_EXTRA_CONNECTIONS;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        bool refuse;
        HookConn *h;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                log_warning_errno(errno, "Failed to get the credentials of a hook connection, closing it: %m");
                safe_close(fd);
                return;
        }
        refuse = s->n_conns - s->n_refused >= limit && !s->ops->trusted(cred.uid, s->ops_userdata);
        if (refuse && s->n_refused >= limit) {
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Too many connections on the hook socket, closing one of uid %u at once.",
                                (unsigned) cred.uid);
                safe_close(fd);
                return;
        }
        if (hook_conn_setup(s, fd, &cred, ++s->next_id, &h) < 0) {
                log_warning("Out of memory accepting a hook connection.");
                return;
        }
        h->refused = refuse;
        s->n_refused += refuse;
        if (s->hooks && s->hooks->connected)
                s->hooks->connected(h, s->hooks_userdata);
        hook_conn_arm_timer(h);
        log_debug("Hook connection %" PRIu64 " (pid %d, uid %u)%s.", h->id, (int) h->pid, (unsigned) h->uid,
                  refuse ? ", over the limit" : "");
}

static void on_hook_accept(evutil_socket_t lfd, short what, void *userdata) {
        HookServer *s = userdata;

        for (int i = 0; i < 16; i++) {
                int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (fd < 0) {
                        if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_ratelimited(LOG_WARNING, errno, NULL, 10, 5, "Failed to accept a hook connection: %m");
                        return;
                }
                hook_accept_one(s, fd);
        }
}

HookConn *hook_conn_find(const HookServer *s, uint64_t id) {
        HookConn *h;

        LIST_FOREACH(conns, h, s && id ? s->conns : NULL)
                if (h->id == id && !h->dead)
                        return h;
        return NULL;
}

int hook_conn_export(const HookConn *h, bool complete, SnapshotHook *ret) {
        SnapshotHook x = { .id = h->id, .uid = h->uid, .gid = h->gid, .pid = h->pid, .owed = h->owed,
                           .refused = h->refused };
        SnapshotOutput *out = NULL;
        size_t n_out = 0;
        uint64_t dropped;
        int k = 0;

        if (complete)
                k = snapshot_bytes_set(&x.input, h->in.buf + h->in.start, varlink_reader_pending(&h->in));
        if (k >= 0 && complete)
                k = outqueue_export(&h->out, SNAPSHOT_HOOK_BYTES_MAX, &out, &n_out, &dropped);
        /* Its answers, back to back: what is left of them is one string of bytes. */
        for (size_t i = 0; k >= 0 && i < n_out; i++) {
                char *joined = out[i].bytes.size ? realloc(x.output.data, x.output.size + out[i].bytes.size) : NULL;

                if (out[i].bytes.size == 0)
                        continue;
                if (!joined) {
                        k = -ENOMEM;
                        break;
                }
                memcpy(joined + x.output.size, out[i].bytes.data, out[i].bytes.size);
                x.output = (SnapshotBytes) { joined, x.output.size + out[i].bytes.size };
        }
        for (size_t i = 0; i < n_out; i++)
                free(out[i].bytes.data);
        free(out);
        if (k < 0) {
                snapshot_hook_done(&x);
                return k;
        }
        *ret = x;
        return 0;
}

int hook_conn_adopt(HookServer *s, int fd, const SnapshotHook *snap, HookConn **ret) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        HookConn *h;
        char *copy;
        int k;

        /* The peer is who the kernel says: its credentials are fixed at connect time. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != snap->uid ||
            cred.gid != snap->gid) {
                k = len == sizeof(cred) ? -EBADMSG : -errno;
                safe_close(fd);
                return k;
        }
        k = hook_conn_setup(s, fd, &cred, snap->id, &h);
        if (k < 0)
                return k;
        h->owed = snap->owed;
        h->refused = snap->refused;
        s->n_refused += h->refused;
        if (snap->id > s->next_id)
                s->next_id = snap->id;
        copy = snap->output.size ? malloc(snap->output.size) : NULL;
        if ((snap->input.size && varlink_reader_feed(&h->in, snap->input.data, snap->input.size) < 0) ||
            (snap->output.size && (!copy || outqueue_push_restored(&h->out, memcpy(copy, snap->output.data,
                                                                                   snap->output.size),
                                                                  snap->output.size, 0) < 0))) {
                hook_conn_free(h);
                return -ENOMEM;
        }
        hook_conn_live(h);
        *ret = h;
        return 0;
}

void hook_conn_resume(HookConn *h) {
        hook_conn_flush(h);
        if (!h->dead)
                hook_conn_process(h);
}

/* ---- the server ---- */

int hook_server_new(struct event_base *base, const Config *config, const HookOps *ops, void *userdata,
                    HookServer **ret) {
        HookServer *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        *s = (HookServer) { .base = base, .config = config, .fd = -1, .ops = ops, .ops_userdata = userdata };
        s->ev_reap = event_new(base, -1, 0, on_reap, s);
        if (!s->ev_reap) {
                free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

int hook_server_listen(HookServer *s, int fd, const char *path) {
        if (s->fd >= 0) {
                safe_close(fd);
                return -EEXIST;
        }
        if (path && !(s->path = strdup(path))) {
                safe_close(fd);
                return -ENOMEM;
        }
        s->fd = fd;
        s->ev_accept = event_new(s->base, fd, EV_READ | EV_PERSIST, on_hook_accept, s);
        if (!s->ev_accept || event_add(s->ev_accept, NULL) < 0)
                return -ENOMEM;
        return 0;
}

void hook_server_set_config(HookServer *s, const Config *config) {
        if (s)
                s->config = config;
}

void hook_server_forget_path(HookServer *s) {
        if (!s)
                return;
        free(s->path);
        s->path = NULL;
}

HookServer *hook_server_free(HookServer *s) {
        if (!s)
                return NULL;
        while (s->conns) {
                /* The process ends: nothing is abandoned (a successor, if any, answers). */
                s->conns->owed = 0;
                hook_conn_free(s->conns);
        }
        if (s->ev_accept)
                event_free(s->ev_accept);
        if (s->ev_reap)
                event_free(s->ev_reap);
        safe_close(s->fd);
        if (s->path) {
                (void) unlink(s->path);
                free(s->path);
        }
        free(s);
        return NULL;
}
