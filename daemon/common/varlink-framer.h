/* SPDX-License-Identifier: MIT */
/*
 * Varlink framing: a varlink connection carries JSON messages each ended
 * by a NUL byte. The reader buffers what arrives from a socket and hands
 * out complete messages, enforcing a maximum message size. Shared by the
 * daemon and libpressure through the pressure-common library: no event
 * loop, no JSON, no logging.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct VarlinkReader {
        char *buf;
        size_t start;      /* first unconsumed byte */
        size_t size;       /* bytes in buf */
        size_t scanned;    /* bytes after start known to hold no NUL */
        size_t alloc;
        size_t max_message;
} VarlinkReader;

/* varlink_reader_init - an empty reader refusing messages over @max_message bytes. */
void varlink_reader_init(VarlinkReader *r, size_t max_message);

/* varlink_reader_done - free the buffer and reset @r to empty. */
void varlink_reader_done(VarlinkReader *r);

/* varlink_reader_trim - free the buffer if nothing unconsumed is in it. */
void varlink_reader_trim(VarlinkReader *r);

/* Bytes received but not yet consumed as messages. */
static inline size_t varlink_reader_pending(const VarlinkReader *r) {
        return r->size - r->start;
}

/* varlink_reader_has_message - whether a complete message is buffered. */
bool varlink_reader_has_message(VarlinkReader *r);

/*
 * varlink_reader_feed - append bytes that come from elsewhere than a read of
 * the connection: the unread input a takeover carries over (the daemon's
 * reads go through varlink_reader_fill()); the tests and fuzzers use it too.
 */
int varlink_reader_feed(VarlinkReader *r, const void *data, size_t size);

/*
 * varlink_reader_fill - read once from @fd. Returns the number of bytes
 * read (> 0), 0 on EOF, -EAGAIN if nothing is available, or a negative
 * errno.
 */
ssize_t varlink_reader_fill(VarlinkReader *r, int fd);

/*
 * varlink_reader_next - take the next complete message. Returns 1 and sets
 * *ret (NUL-terminated, valid until the next fill or feed) and *ret_size
 * (without the NUL); 0 if no complete message is buffered; -EMSGSIZE if the
 * buffered partial message already exceeds the maximum size.
 */
int varlink_reader_next(VarlinkReader *r, const char **ret, size_t *ret_size);
