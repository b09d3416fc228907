/* SPDX-License-Identifier: MIT */
/* Splitting a varlink byte stream into NUL-terminated messages. */
#include <sys/socket.h>

#include "util.h"
#include "varlink-framer.h"

#define READ_CHUNK 16384

void varlink_reader_init(VarlinkReader *r, size_t max_message) {
        *r = (VarlinkReader) { .max_message = max_message };
}

void varlink_reader_done(VarlinkReader *r) {
        free(r->buf);
        *r = (VarlinkReader) {};
}

void varlink_reader_trim(VarlinkReader *r) {
        /* Most clients make a call or two and then only listen: do not keep a
         * read buffer per idle subscriber. */
        if (r->buf && r->start == r->size) {
                free(r->buf);
                r->buf = NULL;
                r->alloc = r->size = r->start = r->scanned = 0;
        }
}

/* Make room for @want more bytes, dropping consumed data first. */
static int reader_reserve(VarlinkReader *r, size_t want) {
        if (r->start > 0) {
                memmove(r->buf, r->buf + r->start, r->size - r->start);
                r->size -= r->start;
                r->start = 0;
        }
        if (r->alloc - r->size < want) {
                size_t na = r->size + want;
                char *nb;

                if (na < 2 * r->alloc)
                        na = 2 * r->alloc;
                nb = realloc(r->buf, na + 1);
                if (!nb)
                        return -ENOMEM;
                r->buf = nb;
                r->alloc = na;
        }
        return 0;
}

int varlink_reader_feed(VarlinkReader *r, const void *data, size_t size) {
        int k = reader_reserve(r, size);

        if (k < 0)
                return k;
        memcpy(r->buf + r->size, data, size);
        r->size += size;
        return 0;
}

ssize_t varlink_reader_fill(VarlinkReader *r, int fd) {
        ssize_t n;
        int k;

        k = reader_reserve(r, READ_CHUNK);
        if (k < 0)
                return k;
        do
                n = recv(fd, r->buf + r->size, READ_CHUNK, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        r->size += (size_t) n;
        return n;
}

int varlink_reader_next(VarlinkReader *r, const char **ret, size_t *ret_size) {
        size_t avail = r->size - r->start;
        char *nul;

        if (r->scanned < avail) {
                nul = memchr(r->buf + r->start + r->scanned, 0, avail - r->scanned);
                if (nul) {
                        size_t len = (size_t) (nul - (r->buf + r->start));

                        if (len > r->max_message)
                                return -EMSGSIZE;
                        *ret = r->buf + r->start;
                        *ret_size = len;
                        r->start += len + 1;
                        r->scanned = 0;
                        if (r->start == r->size)
                                r->start = r->size = 0;
                        return 1;
                }
                r->scanned = avail;
        }
        if (avail > r->max_message)
                return -EMSGSIZE;
        return 0;
}

bool varlink_reader_has_message(VarlinkReader *r) {
        size_t avail = r->size - r->start;

        if (r->scanned < avail) {
                if (memchr(r->buf + r->start + r->scanned, 0, avail - r->scanned))
                        return true;
                r->scanned = avail;
        }
        return false;
}
