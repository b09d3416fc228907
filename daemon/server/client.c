/* SPDX-License-Identifier: MIT */
/* Clients of the varlink socket: accept, read, dispatch, write, close. */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "client.h"
#include "event-util.h"
#include "log.h"
#include "varlink-error.h"

/* Call @fn of every observer that has one, with @args and its userdata. */
#define CLIENT_SERVER_TELL(m, fn, ...)                                                          \
        do {                                                                                    \
                for (size_t _i = 0; _i < CLIENT_SERVER_HOOKS_MAX; _i++)                         \
                        if ((m)->hooks[_i] && (m)->hooks[_i]->fn)                               \
                                (m)->hooks[_i]->fn(__VA_ARGS__, (m)->hooks_userdata[_i]);       \
        } while (0)

static void client_arm_timer(Client *c);
static void client_kick(Client *c);
static void client_process(Client *c);

static UserCount *user_find(ClientServer *m, uid_t uid) {
        for (size_t i = 0; i < m->n_users; i++)
                if (m->users[i].uid == uid)
                        return &m->users[i];
        return NULL;
}

static int user_add(ClientServer *m, uid_t uid) {
        UserCount *u = user_find(m, uid), *nu;

        if (u) {
                u->n++;
                return 0;
        }
        nu = realloc(m->users, (m->n_users + 1) * sizeof(UserCount));
        if (!nu)
                return -ENOMEM;
        m->users = nu;
        m->users[m->n_users++] = (UserCount) { .uid = uid, .n = 1 };
        return 0;
}

static void user_remove(ClientServer *m, uid_t uid) {
        UserCount *u = user_find(m, uid);

        if (!u)
                return;
        if (--u->n == 0) {
                *u = m->users[--m->n_users];
                if (m->n_users == 0) {
                        free(m->users);
                        m->users = NULL;
                }
        }
}

Client *client_free(Client *c) {
        ClientServer *m;

        if (!c)
                return NULL;
        m = c->server;
        if (c->stream) {
                void *stream = TAKE_PTR(c->stream);

                m->n_streams--;
                c->stream_free(stream);
        }
        event_free_and_null(&c->ev_read);
        event_free_and_null(&c->ev_write);
        event_free_and_null(&c->ev_timer);
        safe_close(c->fd);
        varlink_reader_done(&c->in);
        outqueue_done(&c->out);
        cgroup_view_done(&c->view);
        if (c->dead)
                LIST_REMOVE(dead, m->dead, c);
        CLIENT_SERVER_TELL(m, disconnected, c);
        live_page_release(m->live, c->live_slot);
        LIST_REMOVE(clients, m->clients, c);
        m->n_clients--;
        m->n_refused -= c->refused;
        user_remove(m, c->uid);
        log_debug("Client %" PRIu64 " disconnected.", c->id);
        free(c);
        return NULL;
}

void client_kill(Client *c) {
        ClientServer *m = c->server;

        if (c->dead)
                return;
        /* Fan-out skips dead clients; the client (and its subscription, which may
         * hold the last reference to a registration being iterated) is freed
         * from the loop, outside any fan-out. */
        c->dead = true;
        LIST_PREPEND(dead, m->dead, c);
        event_active(m->ev_reap, 0, 0);
}

LiveSlot *client_live(Client *c) {
        return live_page_slot(c->server->live, c->live_slot);
}

/*
 * What the live page says of @c's output: the last event wholly written,
 * and whether a message is half-way or a reply is still owed. An event
 * lost with the process shows as a gap in seq; a reply has no seq, so a
 * successor must not carry on a connection that was owed one (the first
 * reply of a stream, "subscribed", among them).
 */
static void client_live_sync(Client *c) {
        LiveSlot *l = client_live(c);

        if (!l)
                return;
        if (c->out.done_seq > l->written_seq)
                l->written_seq = c->out.done_seq;
        if (outqueue_partial(&c->out) || outqueue_owes_reply(&c->out))
                l->flags |= LIVE_SLOT_PARTIAL;
        else
                l->flags &= ~LIVE_SLOT_PARTIAL;
}

/*
 * Before a write that may stop part-way, the live page says a message is
 * half-written: killed before the write returns, the process leaves a
 * successor that closes the connection rather than write after half a
 * message. A write of one small message (below MESSAGE_ATOMIC_BYTES) is
 * never split by the kernel (an AF_UNIX stream queues it as one buffer or
 * not at all), and needs no such note.
 */
#define MESSAGE_ATOMIC_BYTES 16384

static void client_live_writing(Client *c) {
        LiveSlot *l = client_live(c);

        if (l)
                l->flags |= LIVE_SLOT_PARTIAL;
}

static void client_kick(Client *c) {
        int k;

        if (c->dead)
                return;
        if (c->write_armed || c->hold_output) {
                client_live_sync(c);
                return;
        }
        client_live_writing(c);
        k = outqueue_flush(&c->out, c->fd);
        client_live_sync(c);
        if (k < 0) {
                client_kill(c);
                return;
        }
        if (k == 0) {
                if (event_add(c->ev_write, NULL) < 0) {
                        client_kill(c);
                        return;
                }
                c->write_armed = true;
        }
}

int client_send_owned(Client *c, char *msg, size_t size) {
        int k = outqueue_push_owned(&c->out, msg, size);

        if (k < 0) {
                client_kill(c);
                return k;
        }
        client_kick(c);
        return 0;
}

int client_send_event(Client *c, const char *prefix, size_t n, Body *body, uint64_t seq, size_t limit) {
        int k;

        if (c->dead)
                return -ECONNRESET;
        if (outqueue_is_empty(&c->out) && !c->write_armed && !c->hold_output) {
                /* Nothing queued: hand prefix and body to the socket directly and
                 * queue only what it did not take. */
                ssize_t w;

                if (n + body->size >= MESSAGE_ATOMIC_BYTES)
                        client_live_writing(c);
                w = outqueue_write_direct(c->fd, prefix, n, body);
                if (w < 0 && w != -EAGAIN) {
                        client_kill(c);
                        return (int) w;
                }
                if (w >= 0 && (size_t) w == n + body->size) {
                        LiveSlot *l = client_live(c);

                        if (l && seq > l->written_seq)
                                l->written_seq = seq;
                        if (l && n + body->size >= MESSAGE_ATOMIC_BYTES)
                                l->flags &= ~LIVE_SLOT_PARTIAL;
                        return 0;
                }
                k = outqueue_push_event_partial(&c->out, prefix, n, body, seq, w < 0 ? 0 : (size_t) w);
        } else
                k = outqueue_push_event(&c->out, prefix, n, body, seq, limit);
        if (k < 0)
                return k == -ENOMEM ? -ENOBUFS : k;
        client_kick(c);
        return 0;
}

static void client_stream_changed(Client *c) {
        ClientServer *m = c->server;

        CLIENT_SERVER_TELL(m, stream, c);
}

void client_stream_start(Client *c, void *stream, ClientStreamFreeFn stream_free) {
        c->stream = stream;
        c->stream_free = stream_free;
        c->server->n_streams++;
        client_stream_changed(c);
}

void client_stream_ended(Client *c) {
        if (!c->stream)
                return;
        c->stream = NULL;
        c->server->n_streams--;
        client_stream_changed(c);
        /* Pipelined calls that waited behind the stream may proceed, from the loop: not inside the
         * caller, which may be going through its own lists. */
        if (!c->dead)
                event_active(c->ev_read, EV_TIMEOUT, 0);
}

void client_stream_end(Client *c, char *msg, size_t size) {
        if (msg && !c->dead)
                (void) client_send_owned(c, msg, size);
        else {
                free(msg);
                if (!c->dead)
                        client_kill(c); /* the stream cannot end as it should */
        }
        client_stream_ended(c);
}

static void client_pause_reading(Client *c, bool pause) {
        if (pause == c->read_paused)
                return;
        if (pause)
                event_del(c->ev_read);
        else if (event_add(c->ev_read, NULL) < 0) {
                client_kill(c);
                return;
        }
        c->read_paused = pause;
}

static void on_client_write(evutil_socket_t fd, short what, void *userdata) {
        Client *c = userdata;
        int k;

        client_live_writing(c);
        k = outqueue_flush(&c->out, c->fd);
        client_live_sync(c);
        if (k < 0) {
                client_kill(c);
                return;
        }
        if (k > 0) {
                event_del(c->ev_write);
                c->write_armed = false;
                if (c->read_paused) {
                        client_pause_reading(c, false);
                        if (!c->dead)
                                client_process(c);
                }
        }
}

/* Answer a call of @c with the error @e (consumed); nothing to a oneway call. */
static void client_send_error(Client *c, bool oneway, VarlinkError *e) {
        size_t n;
        char *msg = oneway ? NULL : varlink_error_new(e->name, TAKE_PTR(e->parameters), &n);

        if (msg)
                (void) client_send_owned(c, msg, n);
        varlink_error_done(e);
}

/*
 * @c is over its socket's bound (refuse_late): its first call is refused
 * and it is closed. The first message on a connection finds its socket
 * empty, which takes it whole before the close.
 */
static void client_refuse_call(Client *c, const VarlinkCall *call) {
        ClientServer *m = c->server;
        unsigned value = m->limit_value ?: m->max_clients;
        VarlinkError e = {};

        log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                        "Client %" PRIu64 " (uid %u) came over %s=%u, refusing its call.", c->id, (unsigned) c->uid,
                        m->max_clients_key, value);
        varlink_error_limit_exceeded(&e, -EUSERS, m->max_clients_key, value);
        client_send_error(c, call->oneway, &e);
        client_kill(c);
}

static void handle_message(Client *c, const char *msg, size_t size) {
        VarlinkCall call = {};
        int k;

        k = varlink_call_parse(msg, size, &call);
        if (k == -EBADMSG) {
                log_ratelimited(LOG_NOTICE, 0, NULL, 10, 5,
                                "Client %" PRIu64 " (uid %u) sent a malformed message, closing its connection.",
                                c->id, (unsigned) c->uid);
                client_kill(c);
                return;
        }
        if (k == -EINVAL) {
                VarlinkError e = {};

                varlink_error_invalid_parameter(&e, "parameters");
                client_send_error(c, call.oneway, &e);
        } else if (c->refused)
                client_refuse_call(c, &call);
        else
                c->server->dispatch(c, &call, c->server->userdata);
        varlink_call_done(&call);
}

/* Whether input was read that is not handled yet, for a successor after a crash. */
static void client_live_input(Client *c, bool pending) {
        LiveSlot *l = client_live(c);

        if (!l)
                return;
        if (pending)
                l->flags |= LIVE_SLOT_INPUT;
        else
                l->flags &= ~LIVE_SLOT_INPUT;
}

/* Answer every complete buffered call, in order, unless a stream is active. */
static void client_process(Client *c) {
        ClientServer *m = c->server;

        client_live_input(c, true);
        /* Calls wait behind a stream, and behind a Reexecute the next process answers. */
        while (!c->dead && !c->stream && !c->owes_reexecute) {
                const char *msg;
                size_t size;
                int k;

                if (c->out.bytes > m->config->output_buffer_bytes) {
                        /* The client does not read its answers: stop reading its calls. */
                        if (!c->read_paused)
                                log_debug("Client %" PRIu64 " does not read its replies (%zu bytes queued), "
                                          "its calls wait.", c->id, c->out.bytes);
                        client_pause_reading(c, true);
                        break;
                }
                k = varlink_reader_next(&c->in, &msg, &size);
                if (k < 0) {
                        log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                        "Client %" PRIu64 " (uid %u) sent a message over MaxMessageBytes=%" PRIu64 ", closing its connection.",
                                        c->id, (unsigned) c->uid, m->config->max_message_bytes);
                        client_kill(c);
                        return;
                }
                if (k == 0)
                        break;
                c->last_activity = now_usec(CLOCK_MONOTONIC);
                handle_message(c, msg, size);
        }
        if (c->dead)
                return;
        /* A call waiting behind a stream is input a successor could not answer. */
        client_live_input(c, varlink_reader_pending(&c->in) > 0 || c->owes_reexecute);

        if (varlink_reader_pending(&c->in) == 0) {
                c->partial_since = 0;
                varlink_reader_trim(&c->in);
        }
        else if (c->partial_since == 0)
                c->partial_since = now_usec(CLOCK_MONOTONIC);
        client_arm_timer(c);
}

static void on_client_read(evutil_socket_t fd, short what, void *userdata) {
        Client *c = userdata;
        ClientServer *m = c->server;
        /* Not woken by input: calls waited behind a stream that ended (client_stream_ended()). */
        ssize_t n = what & EV_READ ? varlink_reader_fill(&c->in, c->fd) : 1;

        if (n == -EAGAIN)
                return;
        if (n <= 0) {
                if (n < 0 && n != -ECONNRESET)
                        log_debug_errno((int) n, "Failed to read from client %" PRIu64 ": %m", c->id);
                client_kill(c);
                return;
        }
        /* While a stream runs, further calls wait; but not without bound. */
        if (c->stream && varlink_reader_pending(&c->in) > m->config->max_message_bytes) {
                log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                                "Client %" PRIu64 " sent too much data during a stream, closing its connection.",
                                c->id);
                client_kill(c);
                return;
        }
        client_process(c);
}

static void on_client_timer(evutil_socket_t fd, short what, void *userdata) {
        Client *c = userdata;

        log_ratelimited(LOG_NOTICE, 0, MESSAGE_ID_LIMIT_HIT, 10, 5,
                        "Client %" PRIu64 " (uid %u) %s, closing its connection.", c->id, (unsigned) c->uid,
                        c->partial_since ? "did not finish its message in time" : "was idle too long");
        client_kill(c);
}

/*
 * A client with an active stream needs no timer. Otherwise it must finish a
 * started message within RequestTimeoutSec and make a call within
 * IdleTimeoutSec (one to be refused, within RequestTimeoutSec).
 */
static void client_arm_timer(Client *c) {
        ClientServer *m = c->server;
        uint64_t now, due;
        struct timeval tv;

        if (c->stream && c->partial_since == 0) {
                event_free_and_null(&c->ev_timer);
                return;
        }
        now = now_usec(CLOCK_MONOTONIC);
        if (c->partial_since)
                due = c->partial_since + m->config->request_timeout_usec;
        else
                due = c->last_activity + (c->refused ? m->config->request_timeout_usec : m->config->idle_timeout_usec);
        if (!c->ev_timer) {
                c->ev_timer = evtimer_new(m->base, on_client_timer, c);
                if (!c->ev_timer) {
                        client_kill(c);
                        return;
                }
        }
        tv = usec_to_timeval(due > now ? due - now : 0);
        if (evtimer_add(c->ev_timer, &tv) < 0)
                client_kill(c);
}

/* Tell a refused client why (@e, consumed), best effort, and close it. */
static void refuse(int fd, VarlinkError *e) {
        size_t n;
        char *msg = varlink_error_new(e->name, TAKE_PTR(e->parameters), &n);

        if (msg)
                (void) send(fd, msg, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        free(msg);
        safe_close(fd);
}

/*
 * A peer whose cgroup namespace could not be read (it exited, or its /proc
 * files could not be read) cannot have its cgroup paths translated:
 * refuse it rather than guess that it sees what the daemon sees.
 */
static void refuse_unknown_view(int fd, const struct ucred *cred, int error) {
        VarlinkError e = {};

        log_ratelimited(LOG_NOTICE, error, NULL, 10, 3,
                        "Cannot read the cgroup namespace of the client pid %d (uid %u), refusing it: %m",
                        (int) cred->pid, (unsigned) cred->uid);
        varlink_error_permission_denied(&e, "the daemon could not read the caller's cgroup namespace");
        refuse(fd, &e);
}

/* A client on @fd (taken over) numbered @id, watched for input; no hook is told. */
static int client_setup(ClientServer *m, int fd, const struct ucred *cred, uint64_t id, Client **ret) {
        Client *c = calloc(1, sizeof(*c));
        int k;

        if (!c) {
                safe_close(fd);
                return -ENOMEM;
        }
        k = user_add(m, cred->uid);
        if (k < 0) {
                free(c);
                safe_close(fd);
                return k;
        }
        c->server = m;
        c->id = id;
        c->live_slot = -1;
        c->fd = fd;
        c->uid = cred->uid;
        c->gid = cred->gid;
        c->pid = cred->pid;
        c->last_activity = now_usec(CLOCK_MONOTONIC);
        varlink_reader_init(&c->in, m->config->max_message_bytes);
        outqueue_init(&c->out);
        LIST_PREPEND(clients, m->clients, c);
        m->n_clients++;

        c->ev_read = event_new(m->base, fd, EV_READ | EV_PERSIST, on_client_read, c);
        c->ev_write = event_new(m->base, fd, EV_WRITE | EV_PERSIST, on_client_write, c);
        if (!c->ev_read || !c->ev_write || event_add(c->ev_read, NULL) < 0 ||
            (m->live && (c->live_slot = live_page_claim(m->live, c->id | m->live_bit)) < 0)) {
                client_free(c);
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

int client_new(ClientServer *m, int fd, const struct ucred *cred, Client **ret) {
        Client *c;
        int k = client_setup(m, fd, cred, ++m->next_client_id, &c);

        if (k < 0)
                return k;
        CLIENT_SERVER_TELL(m, connected, c);
        client_arm_timer(c);
        *ret = c;
        return 0;
}

static int strdup_or_null(const char *s, char **ret) {
        *ret = NULL;
        if (s && !(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

/* Put back what was left to write to @c, in order. */
static int client_restore_output(Client *c, const SnapshotClient *snap) {
        for (size_t i = 0; i < snap->n_output; i++) {
                const SnapshotBytes *b = &snap->output[i].bytes;
                char *copy = malloc(b->size);
                int k;

                if (!copy)
                        return -ENOMEM;
                memcpy(copy, b->data, b->size);
                k = outqueue_push_restored(&c->out, copy, b->size, snap->output[i].seq);
                if (k < 0)
                        return k;
        }
        return 0;
}

int client_adopt(ClientServer *m, int fd, const SnapshotClient *snap, Client **ret) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        Client *c;
        int k;

        /* The peer is who the kernel says: its credentials are fixed at connect time. */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                k = -errno;
                safe_close(fd);
                return k;
        }
        if (cred.uid != snap->uid || cred.gid != snap->gid) {
                safe_close(fd);
                return -EBADMSG;
        }
        k = client_setup(m, fd, &cred, snap->id, &c);
        if (k < 0)
                return k;
        c->owes_reexecute = snap->owes_reexecute;
        c->refused = snap->refused;
        m->n_refused += c->refused;
        if (strdup_or_null(snap->view_v2, &c->view.v2_root) < 0 ||
            strdup_or_null(snap->view_v1, &c->view.v1_root) < 0 ||
            (snap->input.size > 0 && varlink_reader_feed(&c->in, snap->input.data, snap->input.size) < 0) ||
            client_restore_output(c, snap) < 0) {
                client_free(c);
                return -ENOMEM;
        }
        if (snap->id > m->next_client_id)
                m->next_client_id = snap->id;
        *ret = c;
        return 0;
}

int client_export(const Client *c, bool complete, size_t budget, SnapshotClient *ret, uint64_t *ret_dropped) {
        SnapshotClient s = {
                .id = c->id,
                .uid = c->uid,
                .gid = c->gid,
                .pid = c->pid,
                .owes_reexecute = c->owes_reexecute,
                .refused = c->refused,
        };
        uint64_t dropped = 0;
        int k;

        k = strdup_or_null(c->view.v2_root, &s.view_v2);
        if (k >= 0)
                k = strdup_or_null(c->view.v1_root, &s.view_v1);
        if (k >= 0 && complete)
                k = snapshot_bytes_set(&s.input, c->in.buf + c->in.start, varlink_reader_pending(&c->in));
        if (k >= 0 && complete)
                k = outqueue_export(&c->out, budget, &s.output, &s.n_output, &dropped);
        if (k < 0) {
                snapshot_client_done(&s);
                return k;
        }
        *ret = s;
        *ret_dropped = dropped;
        return 0;
}

void client_hold_output(Client *c) {
        c->hold_output = true;
}

void client_release_output(Client *c) {
        if (!c->hold_output)
                return;
        c->hold_output = false;
        client_kick(c);
}

void client_resume(Client *c) {
        client_kick(c);
        client_live_sync(c);
        if (!c->dead)
                client_process(c);
}

/*
 * Whether a connection of @cred is taken: 0; 1 to be refused on its first
 * call (refuse_late); or -EUSERS, refused now (with @e; closed without a
 * word on a socket that refuses late).
 */
static int client_admit(ClientServer *m, const struct ucred *cred, VarlinkError *e) {
        unsigned max = m->max_clients ?: m->config->max_clients, per_user = m->config->max_clients_per_user;
        const char *key = m->max_clients_key ?: "MaxClients";
        UserCount *u = user_find(m, cred->uid);

        if (m->n_clients - m->n_refused >= max && !(m->exempt && m->exempt(cred->uid))) {
                if (m->refuse_late && m->n_refused < max)
                        return 1;
                log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                                "Limit %s=%u reached, %s a client of uid %u.", key, m->limit_value ?: max,
                                m->refuse_late ? "closing" : "refusing", (unsigned) cred->uid);
                return m->refuse_late ? -EUSERS : varlink_error_limit_exceeded(e, -EUSERS, key, max);
        }
        if (m->refuse_late || cred->uid == 0 || !u || u->n < per_user)
                return 0;
        log_ratelimited(LOG_WARNING, 0, MESSAGE_ID_LIMIT_HIT, 10, 3,
                        "Limit MaxClientsPerUser=%u reached for uid %u, refusing a client.", per_user,
                        (unsigned) cred->uid);
        return varlink_error_limit_exceeded(e, -EUSERS, "MaxClientsPerUser", per_user);
}

/* Out of fds: the reserved one accepts and closes a client, refused cleanly instead of hanging. */
static void client_refuse_spare(ClientServer *m) {
        VarlinkError e = {};
        int fd;

        m->spare_fd = safe_close(m->spare_fd);
        fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
                varlink_error_open_files(&e, -EMFILE);
                refuse(fd, &e);
        }
        m->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        log_ratelimited(LOG_WARNING, EMFILE, MESSAGE_ID_LIMIT_HIT, 10, 3, "Out of file descriptors, refusing a client: %m");
}

/* Take the connection @fd (taken over) of @cred, under the socket's bounds. */
static void client_accept_one(ClientServer *m, int fd, const struct ucred *cred) {
        VarlinkError e = {};
        CgroupView view = {};
        Client *c;
        int admit = client_admit(m, cred, &e), k;

        if (admit < 0) {
                if (e.name)
                        refuse(fd, &e);
                else
                        safe_close(fd);
                return;
        }
        k = m->views ? peer_view_read(fd, cred->pid, &m->own_ns, &view) : 0;
        if (k < 0) {
                refuse_unknown_view(fd, cred, k);
                return;
        }
        k = client_new(m, fd, cred, &c);
        if (k < 0) {
                cgroup_view_done(&view);
                log_error_errno(k, "Failed to set up a client: %m");
                return;
        }
        c->view = view;
        if (admit > 0) {
                c->refused = true;
                m->n_refused++;
                client_arm_timer(c); /* its call is due within RequestTimeoutSec= */
        }
        log_debug("Client %" PRIu64 " connected (pid %d, uid %u%s%s%s%s)%s.", c->id, (int) c->pid,
                  (unsigned) c->uid, view.v2_root ? ", cgroup namespace at " : "", view.v2_root ?: "",
                  view.v1_root ? ", v1 memory at " : "", view.v1_root ?: "", c->refused ? ", over the bound" : "");
}

static void on_accept(evutil_socket_t lfd, short what, void *userdata) {
        ClientServer *m = userdata;

        for (int i = 0; i < 64; i++) {
                struct ucred cred;
                socklen_t len = sizeof(cred);
                int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

                if (fd < 0 && (errno == EMFILE || errno == ENFILE) && m->spare_fd >= 0) {
                        client_refuse_spare(m);
                        continue;
                }
                if (fd < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                log_ratelimited(LOG_WARNING, errno, NULL, 10, 3, "Failed to accept a client: %m");
                        return;
                }
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                        log_warning_errno(errno, "Failed to get peer credentials, closing: %m");
                        safe_close(fd);
                        continue;
                }
                client_accept_one(m, fd, &cred);
        }
}

void client_server_reap(ClientServer *m) {
        while (m->dead)
                client_free(m->dead);
}

static void on_reap(evutil_socket_t fd, short what, void *userdata) {
        client_server_reap(userdata);
}

int client_server_set_listener(ClientServer *s, int fd) {
        _cleanup_(event_freep) struct event *ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_accept, s);

        if (!ev || event_add(ev, NULL) < 0) {
                safe_close(fd);
                return -ENOMEM;
        }
        event_free_and_null(&s->ev_accept);
        safe_close(s->listen_fd);
        s->ev_accept = TAKE_PTR(ev);
        s->listen_fd = fd;
        CLIENT_SERVER_TELL(s, listener, s);
        return 0;
}

int client_server_new(struct event_base *base, const Config *config, int listen_fd, ClientDispatchFn dispatch,
                      void *userdata, ClientServer **ret) {
        ClientServer *m = calloc(1, sizeof(*m));
        int k;

        if (!m) {
                safe_close(listen_fd);
                return log_error_errno(ENOMEM, "Out of memory.");
        }
        *m = (ClientServer) {
                .base = base,
                .config = config,
                .dispatch = dispatch,
                .userdata = userdata,
                .listen_fd = listen_fd,
                .spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC),
                .views = true,
        };
        k = cgroup_ns_id_of(0, &m->own_ns);
        if (k < 0)
                log_warning_errno(k, "Cannot read the daemon's own cgroup namespace; peers' namespaces are found from their mounts only: %m");
        m->ev_reap = event_new(base, -1, 0, on_reap, m);
        if (listen_fd >= 0)
                m->ev_accept = event_new(base, listen_fd, EV_READ | EV_PERSIST, on_accept, m);
        if (!m->ev_reap || (listen_fd >= 0 && (!m->ev_accept || event_add(m->ev_accept, NULL) < 0))) {
                client_server_free(m);
                return log_error_errno(ENOMEM, "Failed to watch the listening socket.");
        }
        *ret = m;
        return 0;
}

int client_server_add_hooks(ClientServer *s, const ClientServerHooks *hooks, void *userdata) {
        for (size_t i = 0; i < CLIENT_SERVER_HOOKS_MAX; i++)
                if (!s->hooks[i]) {
                        s->hooks[i] = hooks;
                        s->hooks_userdata[i] = userdata;
                        return 0;
                }
        return -ENOSPC;
}

ClientServer *client_server_free(ClientServer *m) {
        if (!m)
                return NULL;
        while (m->clients)
                client_free(m->clients);
        event_free_and_null(&m->ev_accept);
        event_free_and_null(&m->ev_reap);
        safe_close(m->listen_fd);
        safe_close(m->spare_fd);
        free(m->users);
        free(m);
        return NULL;
}
