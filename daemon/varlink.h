/* SPDX-License-Identifier: MIT */
/*
 * Varlink wire format: NUL-terminated JSON messages. The reader buffers
 * input and splits it into messages, enforcing the maximum message size;
 * call parsing checks the envelope; reply builders produce complete
 * NUL-terminated messages. No sockets or event loop here beyond read(2).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct VarlinkReader {
        char *buf;
        size_t start;      /* first unconsumed byte */
        size_t size;       /* bytes in buf */
        size_t scanned;    /* bytes after start known to hold no NUL */
        size_t alloc;
        size_t max_message;
} VarlinkReader;

void varlink_reader_init(VarlinkReader *r, size_t max_message);
void varlink_reader_done(VarlinkReader *r);

/* varlink_reader_trim - free the buffer if nothing unconsumed is in it. */
void varlink_reader_trim(VarlinkReader *r);

/* Bytes received but not yet consumed as messages. */
static inline size_t varlink_reader_pending(const VarlinkReader *r) {
        return r->size - r->start;
}

/*
 * varlink_reader_feed - append bytes (used by tests and fuzzers; the
 * daemon uses varlink_reader_fill()).
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

typedef struct VarlinkCall {
        json_t *root;            /* owns everything below */
        const char *method;      /* full name: interface.Method */
        json_t *parameters;      /* an object (empty if absent) */
        bool more;
        bool oneway;
} VarlinkCall;

/*
 * varlink_call_parse - parse and check a call envelope.
 * Returns 0 on success; -EBADMSG if the message is not a valid call
 * (not JSON, not an object, no string "method", bad "more"/"oneway"
 * types, duplicate keys) -- the connection must be closed; -EINVAL if
 * "parameters" is not an object (answer InvalidParameter "parameters").
 */
int varlink_call_parse(const char *msg, size_t size, VarlinkCall *ret);
void varlink_call_done(VarlinkCall *c);

/*
 * varlink_reply_new - serialize {"parameters": @params, "continues": ...}
 * plus the NUL. Steals @params (NULL means {}). Returns a malloc'ed buffer
 * and its size including the NUL, or NULL on allocation failure.
 */
char *varlink_reply_new(json_t *params, bool continues, size_t *ret_size);

/*
 * varlink_error_new - serialize {"error": @error, "parameters": @params}
 * plus the NUL. Steals @params (NULL means {}).
 */
char *varlink_error_new(const char *error, json_t *params, size_t *ret_size);

/* Dump flags used for everything the daemon sends. */
#define VARLINK_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(6) | JSON_ENSURE_ASCII)
