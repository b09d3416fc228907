/* SPDX-License-Identifier: MIT */
/*
 * Per-client output queues. An event is serialized once into a refcounted
 * Body that every subscriber's queue points at; each queue entry adds only
 * a small per-subscriber prefix (seq, missed, ...). Writes use writev over
 * as many entries as are queued. A queue never holds more than its byte
 * limit of events; replies to calls are bounded separately by the caller
 * (it stops reading a client whose queue is over the limit).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "body.h"
#include "snapshot.h"
#include "util.h"

#define OUT_PREFIX_MAX 160

typedef struct OutEntry {
        Body *body;          /* shared part, or NULL */
        char *own;           /* privately owned bytes (replies), or NULL */
        size_t own_size;
        size_t offset;       /* bytes of (prefix + body/own) already written */
        uint64_t seq;        /* the event's seq in its stream; 0 for a reply */
        uint16_t prefix_size;
        char prefix[OUT_PREFIX_MAX];
} OutEntry;

typedef struct OutQueue {
        OutEntry *entries;   /* ring buffer */
        size_t n_alloc;
        size_t head;
        size_t n;
        size_t bytes;        /* bytes still to be written */
        uint64_t done_seq;   /* the largest seq of an event wholly written */
        size_t n_replies;    /* owned entries with no seq (replies) not wholly written */
} OutQueue;

void outqueue_init(OutQueue *q);
void outqueue_done(OutQueue *q);

static inline bool outqueue_is_empty(const OutQueue *q) {
        return q->n == 0;
}

/*
 * outqueue_push_event - queue @prefix followed by @body (referenced), the
 * event numbered @seq in its stream (0 for none).
 * @limit: if the queue's memory (bytes to write plus its entries) would
 * exceed this, nothing is queued and -ENOBUFS is returned; 0 means no limit
 * (used for final messages).
 */
int outqueue_push_event(OutQueue *q, const char *prefix, size_t prefix_size, Body *body, uint64_t seq,
                        size_t limit) _warn_unused_result_;

/*
 * outqueue_write_direct - write @prefix and @body to @fd at once, for an
 * empty queue. Returns the number of bytes written, -EAGAIN, or another
 * negative errno (the peer is gone).
 */
ssize_t outqueue_write_direct(int fd, const char *prefix, size_t prefix_size, const Body *body) _warn_unused_result_;

/*
 * outqueue_push_event_partial - queue the rest of an event of which
 * @written bytes were already written by outqueue_write_direct(). Not
 * subject to the limit: the queue was empty.
 */
int outqueue_push_event_partial(OutQueue *q, const char *prefix, size_t prefix_size, Body *body, uint64_t seq,
                                size_t written) _warn_unused_result_;

/*
 * outqueue_push_owned - queue @data, taking ownership of the malloc'ed
 * buffer (freed if it cannot be queued). NULL @data, a failed allocation
 * of the caller's, is -ENOMEM too. Returns 0 or -ENOMEM.
 */
int outqueue_push_owned(OutQueue *q, char *data, size_t size) _warn_unused_result_;

/*
 * outqueue_push_restored - queue what was left of a message @seq (0 for a
 * reply) in a previous process's queue: @data (@size bytes, taken over;
 * freed on failure). Returns 0 or -ENOMEM.
 */
int outqueue_push_restored(OutQueue *q, char *data, size_t size, uint64_t seq) _warn_unused_result_;

/* outqueue_owes_reply - whether a message with no seq (a reply) is queued, not wholly written. */
static inline bool outqueue_owes_reply(const OutQueue *q) {
        return q->n_replies > 0;
}

/* outqueue_partial - whether the oldest message is partly written (the socket holds its start). */
static inline bool outqueue_partial(const OutQueue *q) {
        return q->n > 0 && q->entries[q->head].offset > 0;
}

/*
 * outqueue_export - what is left to write, for a snapshot: one
 * SnapshotOutput per message, oldest first. Whole events beyond @budget
 * bytes are left out (a partly written message and replies never are) and
 * counted in @ret_dropped. Returns 0 or -ENOMEM (nothing allocated).
 */
int outqueue_export(const OutQueue *q, size_t budget, SnapshotOutput **ret, size_t *ret_n,
                    uint64_t *ret_dropped);

/*
 * outqueue_flush - write as much as the socket takes.
 * Returns 1 if the queue is now empty, 0 if the socket is full (EAGAIN),
 * or a negative errno on a write error (the peer is gone).
 */
int outqueue_flush(OutQueue *q, int fd) _warn_unused_result_;
