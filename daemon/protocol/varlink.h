/* SPDX-License-Identifier: MIT */
/*
 * The protocol layer (daemon/README.md): the wire format. varlink.h
 * (messages), varlink-error.h (the declared errors), event.h (the event
 * shapes and the shared Body), outqueue.h (per-client output queues),
 * subscribe.h (Subscribe's parameters), metrics-text.h (Prometheus text),
 * and io.pressured.varlink, the interface compiled into the daemon.
 *
 * Varlink messages of the daemon: call parsing checks the envelope; reply
 * builders produce complete NUL-terminated messages. The framing itself
 * (splitting the byte stream at NULs) is varlink-framer.h.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util.h"
#include "varlink-framer.h"

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
int varlink_call_parse(const char *msg, size_t size, VarlinkCall *ret) _warn_unused_result_;
void varlink_call_done(VarlinkCall *c);

/*
 * varlink_reply_new - serialize {"parameters": @params, "continues": ...}
 * plus the NUL. Steals @params (NULL means {}) on every path, also when it
 * fails. Returns a malloc'ed buffer and its size including the NUL, or
 * NULL on allocation failure (@ret_size is then not written).
 */
char *varlink_reply_new(json_t *params, bool continues, size_t *ret_size) _warn_unused_result_;

/*
 * varlink_reply_new_decimal - varlink_reply_new() writing every real number
 * with 15 significant digits, for values read from the kernel as decimals
 * of at most 15 digits (a PSI total in seconds, an average in percent):
 * each is written as the kernel's file says it ("0.888554", not the 17
 * digits of its double, which a parser that sums digits, such as
 * systemd's, reads back one unit in the last place off).
 */
char *varlink_reply_new_decimal(json_t *params, bool continues, size_t *ret_size) _warn_unused_result_;

/*
 * varlink_error_new - serialize {"error": @error, "parameters": @params}
 * plus the NUL. Steals @params (NULL means {}) on every path, like
 * varlink_reply_new(), and fails (NULL) the same way, also when @error is
 * not valid UTF-8.
 */
char *varlink_error_new(const char *error, json_t *params, size_t *ret_size) _warn_unused_result_;

/* json_string_writable - whether @s can be a JSON string: a cgroup's name may be any bytes but "/", and JSON is UTF-8. */
bool json_string_writable(const char *s);

/* The description of org.varlink.service, which every socket of the daemon serves. */
extern const char varlink_service_description[];

/* Dump flags used for everything the daemon sends, but for varlink_reply_new_decimal()'s. */
#define VARLINK_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(6) | JSON_ENSURE_ASCII)
#define VARLINK_JSON_FLAGS_DECIMAL (JSON_COMPACT | JSON_REAL_PRECISION(15) | JSON_ENSURE_ASCII)
