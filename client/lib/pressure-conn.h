/* SPDX-License-Identifier: MIT */
/*
 * Varlink connections of the client library: connecting to the daemon's
 * Unix socket, sending a message, collecting NUL-terminated JSON messages
 * from a byte stream, and translating varlink error names to errno values.
 * No state beyond the buffer handed in; no logging.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "varlink-framer.h"

/* Largest message accepted from the daemon. */
#define CONN_MESSAGE_MAX (16U * 1024U * 1024U)

/* Bytes received from the daemon, framed by the shared varlink framer. A zeroed one is empty. */
typedef struct ConnBuffer {
        VarlinkReader reader;
} ConnBuffer;

/* conn_buffer_done - free the buffer's memory and reset it to empty. */
void conn_buffer_done(ConnBuffer *b);

/*
 * conn_connect - open a non-blocking, close-on-exec stream socket to @path.
 * Returns 0 and the fd in *ret_fd, or -ENAMETOOLONG, -ECONNREFUSED (no
 * socket, or nobody listening), -EPERM (no access to the socket), -EAGAIN
 * (backlog full), ... as connect() failed.
 */
int conn_connect(const char *path, int *ret_fd);

/*
 * conn_send - write the message @msg (without its NUL, which is appended)
 * to @fd, waiting for the socket to drain until @deadline (CLOCK_MONOTONIC
 * microseconds; 0 = do not wait). Never raises SIGPIPE.
 * Returns 0, -ETIMEDOUT, -EAGAIN (deadline 0 and the socket is full), or
 * the negative errno of send().
 */
int conn_send(int fd, const char *msg, uint64_t deadline);

/*
 * conn_fill - read everything the socket has now into @b.
 * Returns 1 if bytes were read, 0 if none were ready, -ECONNRESET on end of
 * file, -EMSGSIZE when a message grows past CONN_MESSAGE_MAX, or another
 * negative errno.
 */
int conn_fill(int fd, ConnBuffer *b);

/*
 * conn_next - take the first complete message out of @b.
 * Returns 1 and the parsed object in *ret, 0 if no complete message is
 * buffered, -EBADMSG if it is not a JSON object, or -EMSGSIZE if it is
 * larger than CONN_MESSAGE_MAX.
 */
int conn_next(ConnBuffer *b, json_t **ret);

/* conn_has_message - whether @b holds a complete message. */
bool conn_has_message(ConnBuffer *b);

/*
 * conn_receive - wait until @deadline (CLOCK_MONOTONIC microseconds) for
 * the next message on @fd, buffering extra bytes in @b.
 * Returns 0 and the message in *ret, -ETIMEDOUT, -ECONNRESET, ...
 */
int conn_receive(int fd, ConnBuffer *b, uint64_t deadline, json_t **ret);

/*
 * conn_send_receive - conn_send() @msg, then conn_receive() the answer.
 * A daemon that refuses a client answers and closes without reading its
 * request; when the send fails because the peer is gone, the answer it
 * left is returned all the same. Otherwise as conn_send(), conn_receive().
 */
int conn_send_receive(int fd, const char *msg, uint64_t deadline, ConnBuffer *b, json_t **ret);

/* conn_peer_closed - whether a send() error means the peer closed its end. */
bool conn_peer_closed(int error);

/* conn_is_disconnect - whether @error means "the daemon is not there (now)". */
bool conn_is_disconnect(int error);
