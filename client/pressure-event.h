/* SPDX-License-Identifier: MIT */
/*
 * Translation of the daemon's JSON events into struct pressure_event, and
 * of the public enums to and from their protocol names. Pure: no I/O.
 */
#pragma once

#include <jansson.h>

#include "pressure.h"

/* Marks a function exported from libpressure.so (the rest is hidden). */
#define _public_ __attribute__((visibility("default")))

/*
 * event_parse - fill @ret from the event object @v.
 * Strings in @ret point into @v, which must outlive @ret; ret->json is left
 * for the caller. Unknown kinds and malformed fields make -EBADMSG; unknown
 * extra fields are ignored.
 */
int event_parse(json_t *v, pressure_event *ret);

/* node_parse - fill @ret from a ProtectionNode object; -EBADMSG if it is not one. */
int node_parse(json_t *v, pressure_protection_node *ret);

/* The protocol name of an enum value, or NULL. */
const char *stall_to_string(pressure_stall stall);
const char *vmpressure_mode_to_string(pressure_vmpressure_mode mode);
