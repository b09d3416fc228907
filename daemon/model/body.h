/* SPDX-License-Identifier: MIT */
/*
 * A serialized event, shared: the bytes protocol/event.c wrote once for an
 * event, referenced by every subscriber's output queue (protocol/outqueue.h)
 * and passed by the registry to its listeners without looking inside.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util.h"

typedef struct Body Body;
struct Body {
        unsigned n_ref;
        size_t size;
        uint64_t monotonic_us;   /* when the notification was read, for latency stats */
        unsigned flags;
        int level;               /* with BODY_HAS_LEVEL: the Level the event carries; else -1 */
        /* The copies made of this body for peers in cgroup namespaces (event_body_view()), one
         * per namespace root, each referenced by this body until it is freed. */
        Body *views;
        Body *next_view;         /* a view: the next one in its body's list */
        char *view_root;         /* a view: the namespace root it was made for */
        char data[];
};

/* Body flags describing what the shared part already contains. */
#define BODY_HAS_LEVEL (1u << 0)
/* The event has no "count" ("cleared", "trigger_changed"): the prefix leaves it out. */
#define BODY_NO_COUNT  (1u << 1)

/*
 * body_new - allocate a body holding @size bytes copied from @data.
 * Returns NULL when out of memory.
 */
Body *body_new(const char *data, size_t size) _warn_unused_result_;
Body *body_ref(Body *b);
Body *body_unref(Body *b);
