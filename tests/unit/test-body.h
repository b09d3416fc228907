/* SPDX-License-Identifier: MIT */
/*
 * A shared Body made from a JSON object a test wrote by hand, laid out as
 * event_data_body() lays out a typed event: the object without its opening
 * brace, closed by "}}". For tests of what consumes bodies; what the daemon
 * serializes is tested through event_data_body() itself (test-event.c).
 */
#pragma once

#include <jansson.h>

#include "body.h"
#include "tests.h"
#include "varlink.h"

/* The body of @event (stolen), with @flags; NULL for a NULL @event or when out of memory. */
static inline Body *test_body_new(json_t *event, uint64_t monotonic_us, unsigned flags) {
        char *text = event ? json_dumps(event, VARLINK_JSON_FLAGS) : NULL;
        size_t n = text ? strlen(text) : 0;
        Body *b = NULL;

        json_decref(event);
        if (n >= 2) {
                text[n - 1] = 0;
                b = malloc(sizeof(Body) + n + 2);
        }
        if (b) {
                *b = (Body) { .n_ref = 1, .size = n + 2, .monotonic_us = monotonic_us, .flags = flags };
                /* "{...}" without the brace: n - 2 bytes of fields, then "}}" and the NUL. */
                memcpy(b->data, text + 1, n - 2);
                memcpy(b->data + n - 2, "}}}", 3);
                b->data[n + 1] = 0;
        }
        free(text);
        return b;
}
