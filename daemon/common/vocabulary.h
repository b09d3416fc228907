/* SPDX-License-Identifier: MIT */
/*
 * The protocol's words, in one place for the daemon, libpressure and
 * pressurectl. What the varlink interface declares (its enums and errors)
 * is generated from io.pressured.varlink into vocabulary-idl.h; this
 * module adds the names the interface carries as plain strings (the
 * reclaim states, whose "-" a varlink enum cannot hold), the event kinds
 * libpressure makes itself, and lookups through tables of references for
 * enums whose values are not in the order of the names (libpressure's
 * public enums, which keep their values for the ABI). Pure: no I/O.
 */
#pragma once

#include <stddef.h>

#include "vocabulary-idl.h"

/* GetStatus reclaim[].state: a string in the interface. */
typedef enum VocReclaimState {
        VOC_RECLAIM_STATE_PROBING,
        VOC_RECLAIM_STATE_BACKING_OFF,
        VOC_RECLAIM_STATE_AT_FLOOR,
        VOC_RECLAIM_STATE_UNSUPPORTED,
        _VOC_RECLAIM_STATE_MAX,
        _VOC_RECLAIM_STATE_INVALID = -1,
} VocReclaimState;
extern const char *const voc_reclaim_state_table[_VOC_RECLAIM_STATE_MAX];

/* Event kinds that never cross the wire: libpressure makes them for its caller. */
typedef enum VocLocalEventKind {
        VOC_LOCAL_EVENT_KIND_RECONNECTED,
        VOC_LOCAL_EVENT_KIND_ERROR,
        _VOC_LOCAL_EVENT_KIND_MAX,
} VocLocalEventKind;
extern const char *const voc_local_event_kind_table[_VOC_LOCAL_EVENT_KIND_MAX];

/*
 * A name by reference: NAME_REF(idl_level_table, IDL_LEVEL_LOW). A table of
 * them, indexed by the values of another enum, maps that enum onto the
 * names without spelling one; an entry left out is a value with no name.
 */
typedef const char *const *NameRef;
#define NAME_REF(table, i) (&(table)[i])

/* name_ref_to_string - the name @refs[@i] refers to; NULL if @i is out of range or has none. */
const char *name_ref_to_string(const NameRef *refs, size_t n, int i);

/* name_ref_from_string - the index in @refs of the entry naming @s, or -EINVAL. */
int name_ref_from_string(const NameRef *refs, size_t n, const char *s);
