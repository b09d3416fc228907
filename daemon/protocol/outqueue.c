/* SPDX-License-Identifier: MIT */
/* Per-client writev output queues. */
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "outqueue.h"
#include "util.h"

void outqueue_init(OutQueue *q) {
        *q = (OutQueue) {};
}

static void entry_clear(OutEntry *e) {
        body_unref(e->body);
        free(e->own);
        e->body = NULL;
        e->own = NULL;
}

void outqueue_done(OutQueue *q) {
        for (size_t i = 0; i < q->n; i++)
                entry_clear(&q->entries[(q->head + i) % q->n_alloc]);
        free(q->entries);
        *q = (OutQueue) {};
}

static size_t entry_size(const OutEntry *e) {
        return e->prefix_size + (e->body ? e->body->size : e->own_size);
}

static OutEntry *outqueue_append(OutQueue *q) {
        if (q->n == q->n_alloc) {
                size_t na = q->n_alloc ? q->n_alloc * 2 : 4;
                OutEntry *ne = calloc(na, sizeof(OutEntry));

                if (!ne)
                        return NULL;
                /* Unroll the ring into the new array. */
                for (size_t i = 0; i < q->n; i++)
                        ne[i] = q->entries[(q->head + i) % q->n_alloc];
                free(q->entries);
                q->entries = ne;
                q->n_alloc = na;
                q->head = 0;
        }
        return &q->entries[(q->head + q->n) % q->n_alloc];
}

int outqueue_push_event(OutQueue *q, const char *prefix, size_t prefix_size, Body *body, uint64_t seq,
                        size_t limit) {
        OutEntry *e;
        size_t size = prefix_size + body->size;

        if (prefix_size > OUT_PREFIX_MAX)
                return -EINVAL;
        if (limit > 0) {
                /* Charge what the queue really costs: the bytes still to be
                 * written plus the ring of entries holding them. */
                size_t slots = q->n < q->n_alloc ? q->n_alloc : (q->n_alloc ? q->n_alloc * 2 : 4);

                if (q->bytes + size + slots * sizeof(OutEntry) > limit)
                        return -ENOBUFS;
        }
        e = outqueue_append(q);
        if (!e)
                return -ENOMEM;
        e->body = body_ref(body);
        e->own = NULL;
        e->own_size = 0;
        e->offset = 0;
        e->seq = seq;
        e->prefix_size = (uint16_t) prefix_size;
        memcpy(e->prefix, prefix, prefix_size);
        q->n++;
        q->bytes += size;
        return 0;
}

ssize_t outqueue_write_direct(int fd, const char *prefix, size_t prefix_size, const Body *body) {
        struct iovec iov[2] = {
                { (void *) prefix, prefix_size },
                { (void *) body->data, body->size },
        };
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
        ssize_t n;

        do
                n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        return n;
}

int outqueue_push_event_partial(OutQueue *q, const char *prefix, size_t prefix_size, Body *body, uint64_t seq,
                                size_t written) {
        int k = outqueue_push_event(q, prefix, prefix_size, body, seq, 0);

        if (k < 0)
                return k;
        /* The entry just appended is the only one. */
        q->entries[q->head].offset = written;
        q->bytes -= written;
        return 0;
}

int outqueue_push_owned(OutQueue *q, char *data, size_t size) {
        return outqueue_push_restored(q, data, size, 0);
}

int outqueue_push_restored(OutQueue *q, char *data, size_t size, uint64_t seq) {
        OutEntry *e;

        if (!data)
                return -ENOMEM; /* the caller's allocation failed */
        e = outqueue_append(q);
        if (!e) {
                free(data);
                return -ENOMEM;
        }
        e->body = NULL;
        e->own = data;
        e->own_size = size;
        e->offset = 0;
        e->seq = seq;
        e->prefix_size = 0;
        if (seq == 0)
                q->n_replies++;
        q->n++;
        q->bytes += size;
        return 0;
}

#define FLUSH_IOV 64

int outqueue_flush(OutQueue *q, int fd) {
        while (q->n > 0) {
                struct iovec iov[FLUSH_IOV];
                struct msghdr mh = { .msg_iov = iov };
                size_t niov = 0;
                ssize_t n;

                for (size_t i = 0; i < q->n && niov + 2 <= FLUSH_IOV; i++) {
                        OutEntry *e = &q->entries[(q->head + i) % q->n_alloc];
                        size_t off = e->offset;

                        if (off < e->prefix_size) {
                                iov[niov++] = (struct iovec) { e->prefix + off, e->prefix_size - off };
                                off = 0;
                        } else
                                off -= e->prefix_size;
                        if (e->body)
                                iov[niov++] = (struct iovec) { e->body->data + off, e->body->size - off };
                        else
                                iov[niov++] = (struct iovec) { e->own + off, e->own_size - off };
                }
                mh.msg_iovlen = niov;

                n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        return -errno;
                }

                q->bytes -= (size_t) n;
                while (n > 0) {
                        OutEntry *e = &q->entries[q->head];
                        size_t left = entry_size(e) - e->offset;

                        if ((size_t) n < left) {
                                e->offset += (size_t) n;
                                break;
                        }
                        n -= (ssize_t) left;
                        if (e->seq > q->done_seq)
                                q->done_seq = e->seq;
                        if (e->seq == 0 && !e->body)
                                q->n_replies--;
                        entry_clear(e);
                        q->head = (q->head + 1) % q->n_alloc;
                        q->n--;
                }
        }
        /* Give back what a burst made the ring grow to. */
        if (q->n_alloc > 8) {
                free(q->entries);
                q->entries = NULL;
                q->n_alloc = 0;
                q->head = 0;
        }
        return 1;
}

/* The unwritten rest of @e into @ret. */
static int entry_export(const OutEntry *e, SnapshotOutput *ret) {
        size_t size = entry_size(e) - e->offset, off = e->offset, n = 0;
        char *buf = malloc(size);

        if (!buf)
                return -ENOMEM;
        if (off < e->prefix_size) {
                n = e->prefix_size - off;
                memcpy(buf, e->prefix + off, n);
                off = 0;
        } else
                off -= e->prefix_size;
        memcpy(buf + n, (e->body ? e->body->data : e->own) + off, size - n);
        *ret = (SnapshotOutput) { .seq = e->seq, .bytes = { buf, size } };
        return 0;
}

int outqueue_export(const OutQueue *q, size_t budget, SnapshotOutput **ret, size_t *ret_n, uint64_t *ret_dropped) {
        SnapshotOutput *out = NULL;
        size_t n = 0, used = 0;
        uint64_t dropped = 0;

        if (q->n > 0 && !(out = calloc(q->n, sizeof(*out))))
                return -ENOMEM;
        for (size_t i = 0; i < q->n; i++) {
                const OutEntry *e = &q->entries[(q->head + i) % q->n_alloc];
                size_t size = entry_size(e) - e->offset;

                if (e->seq > 0 && e->offset == 0 && used + size > budget) {
                        dropped++;
                        continue;
                }
                if (entry_export(e, &out[n]) < 0) {
                        while (n > 0)
                                free(out[--n].bytes.data);
                        free(out);
                        return -ENOMEM;
                }
                used += size;
                n++;
        }
        *ret = out;
        *ret_n = n;
        *ret_dropped = dropped;
        return 0;
}
