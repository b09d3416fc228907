/* SPDX-License-Identifier: MIT */
/*
 * libevent helpers for every layer that runs on the loop, from sources/ up:
 * freeing the events an object holds, and scope-based cleanup of one not
 * yet handed to its owner.
 */
#pragma once

#include <event2/event.h>
#include <stddef.h>

/*
 * event_free_and_null - free the event *@e, if there is one, and clear it:
 * for a timer or a watch that comes and goes, and in destructors.
 */
static inline void event_free_and_null(struct event **e) {
        if (*e) {
                event_free(*e);
                *e = NULL;
        }
}

/* For _cleanup_(event_freep): an event freed when its variable goes out of scope, unless taken (TAKE_PTR). */
static inline void event_freep(struct event **e) {
        event_free_and_null(e);
}
