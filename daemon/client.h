/* SPDX-License-Identifier: MIT */
/*
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

#include "list.h"
#include "outqueue.h"
#include "varlink.h"

typedef struct Manager Manager;
typedef struct Subscription Subscription;
typedef struct Client Client;

struct Client {
        Manager *manager;
        uint64_t id;
        int fd;
        struct event *ev_read;
        struct event *ev_write;
        struct event *ev_timer;
        uid_t uid;
        gid_t gid;
        pid_t pid;
        VarlinkReader in;
        OutQueue out;
        Subscription *sub;          /* active stream, or NULL */
        uint64_t partial_since;     /* monotonic time the unfinished message began, 0 none */
        uint64_t last_activity;
        bool dead;
        bool read_paused;
        bool write_armed;
        LIST_FIELDS(Client, clients);
        LIST_FIELDS(Client, dead);
};

/* Connections per uid, for MaxClientsPerUser=. */
typedef struct UserCount {
        uid_t uid;
        unsigned n;
} UserCount;

/* client_accept_start - watch the manager's listening socket and accept clients. */
int client_accept_start(Manager *m);

/*
 * client_new - a client for the accepted connection @fd, with the peer
 * credentials @cred, counted for MaxClientsPerUser= and watched for input.
 * @fd is taken over, and closed on failure. Returns 0 or -ENOMEM.
 */
int client_new(Manager *m, int fd, const struct ucred *cred, Client **ret);

/* client_free - close @c now and free it with its subscription; NULL-safe, returns NULL. */
Client *client_free(Client *c);

/* client_kill - close @c later, from the loop; safe during fan-out. */
void client_kill(Client *c);

/* client_reap - free every client killed since the last call. */
void client_reap(Manager *m);

/* client_kick - write what @c has queued, or wait for the socket to take it. */
void client_kick(Client *c);

/* client_send_owned - queue the message @msg (@size bytes with its NUL; taken over) for @c. */
int client_send_owned(Client *c, char *msg, size_t size);

/* client_stream_ended - @c's stream is over: answer the calls that waited behind it. */
void client_stream_ended(Client *c);
