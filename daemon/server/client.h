/* SPDX-License-Identifier: MIT */
/*
 * The server layer (daemon/README.md): what peers talk to. client.h (the
 * varlink socket and its clients), methods.h (the methods, installed as
 * the clients' dispatch callback), subscription.h (a Subscribe stream, a
 * registration Listener), proxy.h (the memory, cpu and io pressure
 * sockets, whose clients are Listeners too), status.h (GetStatus and /metrics),
 * metrics.h (the HTTP endpoint), peer-view.h (a peer's cgroup
 * namespace, read once when it connects) and reclaim-controller.h with
 * reclaim-worker.h (proactive reclaim: its timer and its writer thread),
 * low-memory-monitor.h (org.freedesktop.LowMemoryMonitor on the system
 * bus, whose three registrations' Listeners it holds), socket-watch.h
 * (the removal of the daemon's own socket, and binding it again).
 *
 * Clients of the varlink socket: accepting them under the configured
 * limits, reading and framing their calls, answering in order, writing
 * their output without ever blocking the loop, and closing them on
 * protocol errors, timeouts or hang-up.
 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "config.h"
#include "cgroup-ns.h"
#include "fdstore.h"
#include "list.h"
#include "outqueue.h"
#include "peer-view.h"
#include "snapshot.h"
#include "varlink.h"

typedef struct Client Client;
typedef struct ClientServer ClientServer;

/* Called for each call a client makes, in order; may queue answers and start a stream. */
typedef void (*ClientDispatchFn)(Client *c, VarlinkCall *call, void *userdata);

/* What a client's active stream is to the client: freed with it. */
typedef void (*ClientStreamFreeFn)(void *stream);

struct Client {
        ClientServer *server;
        uint64_t id;
        int fd;
        struct event *ev_read;
        struct event *ev_write;
        struct event *ev_timer;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        CgroupView view;            /* the peer's cgroup namespace roots; all NULL: the daemon's view */
        VarlinkReader in;
        OutQueue out;
        void *stream;               /* active stream, or NULL: later calls wait */
        ClientStreamFreeFn stream_free;
        int live_slot;              /* in the server's live page, -1 none */
        bool owes_reexecute;        /* a Reexecute call waits for the next process's answer */
        bool hold_output;           /* nothing is written until client_release_output() */
        uint64_t partial_since;     /* monotonic time the unfinished message began, 0 none */
        uint64_t last_activity;
        bool dead;
        bool read_paused;
        bool write_armed;
        bool refused;               /* over its socket's bound: its first call is refused (refuse_late) */
        LIST_FIELDS(Client, clients);
        LIST_FIELDS(Client, dead);
};

/* Connections per uid, for MaxClientsPerUser=. */
typedef struct UserCount {
        uid_t uid;
        unsigned n;
} UserCount;

/* Who is told as clients come and go (the takeover bookkeeping); every callback is optional. */
typedef struct ClientServerHooks {
        void (*connected)(Client *c, void *userdata);
        void (*disconnected)(Client *c, void *userdata);
        void (*stream)(Client *c, void *userdata);         /* its stream began or ended */
        void (*listener)(ClientServer *s, void *userdata); /* the listening socket was replaced */
} ClientServerHooks;

/* Observers of the clients (client_server_add_hooks()): the takeover and the pre-kill warnings. */
#define CLIENT_SERVER_HOOKS_MAX 2

/*
 * A varlink socket and its clients: the io.pressured socket, and with a
 * dispatch and a bound of their own, systemd-report's and the pre-kill
 * hook's.
 */
struct ClientServer {
        struct event_base *base;
        const Config *config;
        ClientDispatchFn dispatch;
        void *userdata;
        int listen_fd;
        struct event *ev_accept;
        struct event *ev_reap;
        int spare_fd;               /* reserved to refuse clients cleanly at EMFILE */
        CgroupNsId own_ns;          /* the daemon's cgroup namespace */
        Client *clients;
        Client *dead;
        unsigned n_clients;
        unsigned n_streams;         /* clients with an active stream */
        uint64_t next_client_id;
        UserCount *users;
        size_t n_users;
        LivePage *live;             /* what every connection was last told, for a successor after a crash; or NULL */
        uint64_t live_bit;          /* or-ed into its clients' ids in the live page, apart from another socket's */
        bool views;                 /* each peer's cgroup namespace is read (the io.pressured socket's methods) */
        /*
         * A bound of its own, for another socket served this way: the most
         * connections at once and the key that sets it (0 and NULL: [Limits]
         * MaxClients=), the value LimitExceeded names (0: max_clients).
         * With refuse_late, a connection over it is taken and refused on
         * its first call (closed after RequestTimeoutSec= without one), as
         * many again as the bound; beyond those it is closed at once, and
         * MaxClientsPerUser= does not apply: nothing is said before a call.
         * Peers of a uid exempt() names are never refused for the number.
         */
        unsigned max_clients;
        const char *max_clients_key;
        unsigned limit_value;
        bool refuse_late;
        bool (*exempt)(uid_t uid);
        unsigned n_refused;         /* clients taken to be refused */
        const ClientServerHooks *hooks[CLIENT_SERVER_HOOKS_MAX];
        void *hooks_userdata[CLIENT_SERVER_HOOKS_MAX];
};

/*
 * client_server_add_hooks - tell @hooks (with @userdata) as clients come,
 * change their stream and go, after the observers added before. Returns
 * 0, or -ENOSPC beyond CLIENT_SERVER_HOOKS_MAX.
 */
int client_server_add_hooks(ClientServer *s, const ClientServerHooks *hooks, void *userdata);

/*
 * client_server_new - serve varlink on the listening socket @listen_fd
 * (taken over; -1: none until client_server_set_listener()): accept
 * clients under the limits of @config, reading their peers' cgroup
 * namespaces, and hand each call to @dispatch. Returns 0 or a negative
 * errno (logged).
 */
int client_server_new(struct event_base *base, const Config *config, int listen_fd, ClientDispatchFn dispatch,
                      void *userdata, ClientServer **ret);

/* client_server_free - close every client and the socket; NULL-safe, returns NULL. */
ClientServer *client_server_free(ClientServer *s);

/*
 * client_server_set_listener - accept on the listening socket @fd (taken
 * over) instead of the one before, which is closed; connected clients stay.
 * Returns 0, or -ENOMEM (then @fd is closed and the old socket kept).
 */
int client_server_set_listener(ClientServer *s, int fd);

/*
 * client_new - a client for the accepted connection @fd, with the peer
 * credentials @cred, counted for MaxClientsPerUser= and watched for input.
 * @fd is taken over, and closed on failure. Returns 0 or -ENOMEM.
 */
int client_new(ClientServer *s, int fd, const struct ucred *cred, Client **ret);

/* client_free - close @c now and free it with its stream; NULL-safe, returns NULL. */
Client *client_free(Client *c);

/* client_server_reap - free the clients client_kill() closed, now. */
void client_server_reap(ClientServer *s);

/* client_kill - close @c later, from the loop; safe during fan-out. */
void client_kill(Client *c);

/* client_send_owned - queue the message @msg (@size bytes with its NUL; taken over) for @c. */
int client_send_owned(Client *c, char *msg, size_t size);

/*
 * client_send_event - queue one event for @c: @prefix (@n bytes) then the
 * shared @body, straight to the socket when nothing waits before it.
 * @limit: the most @c may have queued
 *
 * Returns 0, -ENOBUFS if it did not fit (the event is dropped), or another
 * negative errno after which @c is being closed.
 */
int client_send_event(Client *c, const char *prefix, size_t n, Body *body, uint64_t seq, size_t limit);

/* client_live - @c's slot in the live page, or NULL. */
LiveSlot *client_live(Client *c);

/*
 * client_adopt - a client for the connection @fd (taken over, closed on
 * failure) that a previous process described in @snap: its identity, its
 * peer's view, what it had sent and not yet been answered, and what was
 * left to write to it. Its stream is restored separately. Returns 0 or a
 * negative errno.
 */
int client_adopt(ClientServer *s, int fd, const SnapshotClient *snap, Client **ret);

/*
 * client_export - @c as a snapshot: identity and view, and with @complete
 * its unhandled input and unwritten output (at most @budget bytes of whole
 * events; the number left out in @ret_dropped). Returns 0 or -ENOMEM.
 */
int client_export(const Client *c, bool complete, size_t budget, SnapshotClient *ret, uint64_t *ret_dropped);

/*
 * client_hold_output / client_release_output - queue what @c is sent
 * without writing it, and write it again: a stream that just began is told
 * so only once the state a successor would take over knows of it.
 */
void client_hold_output(Client *c);
void client_release_output(Client *c);

/* client_resume - handle what an adopted client had sent, and write what it was owed. */
void client_resume(Client *c);

/* client_stream_start - @stream is @c's active stream; later calls wait until it ends. */
void client_stream_start(Client *c, void *stream, ClientStreamFreeFn stream_free);

/*
 * client_stream_ended - @c's stream is over (the stream freed itself): the
 * calls that waited behind it are answered from the loop, once the caller
 * returned.
 */
void client_stream_ended(Client *c);

/*
 * client_stream_end - the last message of @c's stream (the stream freed
 * itself already): @msg (@size bytes, taken over; NULL when it could not
 * be made, and then @c is closed), then client_stream_ended().
 */
void client_stream_end(Client *c, char *msg, size_t size);
