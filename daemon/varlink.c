/* SPDX-License-Identifier: MIT */
/* Varlink message framing, call envelope parsing and reply serialization. */
#include <sys/socket.h>

#include "util.h"
#include "varlink.h"

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

int varlink_call_parse(const char *msg, size_t size, VarlinkCall *ret) {
        json_t *root, *method, *params, *v;
        json_error_t err;
        const char *key;
        bool more = false, oneway = false;

        root = json_loadb(msg, size, JSON_REJECT_DUPLICATES, &err);
        if (!root)
                return -EBADMSG;
        if (!json_is_object(root))
                goto bad;
        method = json_object_get(root, "method");
        if (!json_is_string(method) || json_string_length(method) == 0)
                goto bad;

        json_object_foreach(root, key, v) {
                if (streq(key, "more")) {
                        if (!json_is_boolean(v))
                                goto bad;
                        more = json_is_true(v);
                } else if (streq(key, "oneway")) {
                        if (!json_is_boolean(v))
                                goto bad;
                        oneway = json_is_true(v);
                } else if (streq(key, "upgrade")) {
                        if (!json_is_boolean(v))
                                goto bad;
                }
                /* "method", "parameters" checked separately; other keys are ignored
                 * for forward compatibility, as the varlink spec allows. */
        }

        params = json_object_get(root, "parameters");
        if (params && json_is_null(params))
                params = NULL;
        if (params && !json_is_object(params)) {
                *ret = (VarlinkCall) { .root = root, .method = json_string_value(method),
                                       .more = more, .oneway = oneway };
                return -EINVAL;
        }
        if (!params) {
                params = json_object();
                if (!params || json_object_set_new(root, "parameters", params) < 0)
                        goto bad;
        }

        *ret = (VarlinkCall) {
                .root = root,
                .method = json_string_value(method),
                .parameters = params,
                .more = more,
                .oneway = oneway,
        };
        return 0;
bad:
        json_decref(root);
        return -EBADMSG;
}

void varlink_call_done(VarlinkCall *c) {
        json_decref(c->root);
        *c = (VarlinkCall) {};
}

static char *dump_with_nul(json_t *msg, size_t *ret_size) {
        size_t n;
        char *s;

        if (!msg)
                return NULL;
        n = json_dumpb(msg, NULL, 0, VARLINK_JSON_FLAGS);
        if (n == 0) {
                json_decref(msg);
                return NULL;
        }
        s = malloc(n + 1);
        if (s) {
                json_dumpb(msg, s, n, VARLINK_JSON_FLAGS);
                s[n] = 0;
                *ret_size = n + 1;
        }
        json_decref(msg);
        return s;
}

char *varlink_reply_new(json_t *params, bool continues, size_t *ret_size) {
        json_t *msg;

        if (!params)
                params = json_object();
        msg = json_object();
        if (!msg || !params || json_object_set_new(msg, "parameters", params) < 0) {
                json_decref(msg);
                return NULL;
        }
        if (continues && json_object_set_new(msg, "continues", json_true()) < 0) {
                json_decref(msg);
                return NULL;
        }
        return dump_with_nul(msg, ret_size);
}

char *varlink_error_new(const char *error, json_t *params, size_t *ret_size) {
        json_t *msg;

        if (!params)
                params = json_object();
        msg = json_pack("{s:s, s:o}", "error", error, "parameters", params);
        return dump_with_nul(msg, ret_size);
}
