/* SPDX-License-Identifier: MIT */
/*
 * The few sd-event functions a pressure_monitor attaches with, found in
 * the program at run time. A program that hands libpressure an sd_event
 * has libsystemd loaded already; libpressure itself does not link it, so
 * programs on other loops do not pull it in.
 */
#pragma once

#include <stdint.h>

struct sd_event;
struct sd_event_source;

/* sd_event_io_handler_t */
typedef int (*SdEventIoHandler)(struct sd_event_source *s, int fd, uint32_t revents, void *userdata);

typedef struct SdEventApi {
        int (*event_default)(struct sd_event **ret);
        struct sd_event *(*event_ref)(struct sd_event *e);
        struct sd_event *(*event_unref)(struct sd_event *e);
        int (*add_io)(struct sd_event *e, struct sd_event_source **ret, int fd, uint32_t events,
                      SdEventIoHandler callback, void *userdata);
        int (*source_set_priority)(struct sd_event_source *s, int64_t priority);
        int (*source_set_description)(struct sd_event_source *s, const char *description);
        struct sd_event_source *(*source_unref)(struct sd_event_source *s);
} SdEventApi;

/*
 * sd_event_api_resolve - the sd-event functions of the program, into
 * *@ret: 0, or -EOPNOTSUPP when the program has no libsystemd loaded.
 * Each caller keeps its own copy: the library has no global state.
 */
int sd_event_api_resolve(SdEventApi *ret);
