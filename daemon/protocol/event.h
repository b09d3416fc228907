/* SPDX-License-Identifier: MIT */
/*
 * The JSON shapes of the events of a subscription stream (subscribed,
 * pressure, memory_events, protection, killed, removed) and of the pieces they
 * carry (trigger, PSI averages, memory.events counters), plus turning an
 * event into the shared Body that fan-out writes to every subscriber.
 * Pure: no I/O, no event loop. Every builder returns NULL when out of
 * memory.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "episode.h"
#include "protection-tree.h"
#include "event-data.h"
#include "kernfile.h"
#include "outqueue.h"
#include "source-type.h"
#include "trigger.h"
#include "util.h"

/* event_trigger_new - {"psi": {...}} or {"vmpressure": {...}}, plus "level" if set. */
json_t *event_trigger_new(const EventTrigger *t) _warn_unused_result_;

/* psi_stats_to_json - the PsiStats object of the interface (averages as percentages). */
json_t *psi_stats_to_json(const PsiStats *s) _warn_unused_result_;

/* memory_events_to_json - the counters present in @e. */
json_t *memory_events_to_json(const MemoryEvents *e) _warn_unused_result_;

/*
 * event_subscribed_new - the first event of a stream.
 * @cgroup: the subscribed cgroup
 * @source: the source chosen
 * @resource: the resource watched ("memory" for every source but psi)
 * @trigger: steals; the registration used
 * @adjusted: whether the daemon changed the trigger
 * @adjusted_reason: why, or NULL to leave "adjusted_reason" out
 * @state: steals; the current picture, NULL for {}
 */
json_t *event_subscribed_new(const char *cgroup, SourceType source, Resource resource, json_t *trigger,
                             bool adjusted, const char *adjusted_reason, json_t *state) _warn_unused_result_;

/*
 * event_pressure_new - a "pressure" event without "seq", "count",
 * "missed" (each subscriber's prefix adds those) and without "level"
 * unless the caller adds it.
 * @source: "psi", "vmpressure" or "inject"
 * @resource: the resource under pressure
 * @psi: steals; the PSI averages of a "psi" event, or NULL
 */
json_t *event_pressure_new(const char *cgroup, const char *source, Resource resource, json_t *psi,
                           uint64_t realtime_us, uint64_t monotonic_us) _warn_unused_result_;

/* event_memory_events_new - a "memory_events" event with the counters and their change. */
json_t *event_memory_events_new(const char *cgroup, const MemoryEvents *counters, const MemoryEvents *delta,
                                uint64_t realtime_us, uint64_t monotonic_us) _warn_unused_result_;

/*
 * event_protection_new - a "protection" event.
 * @state, @previous: "min", "low" or "none"
 * @node: steals; the protection node, or NULL
 */
json_t *event_protection_new(const char *cgroup, const char *state, const char *previous, json_t *node,
                             uint64_t realtime_us, uint64_t monotonic_us) _warn_unused_result_;

/*
 * event_killed_new - a "killed" event (without "seq", "count", "missed",
 * which each subscriber's prefix adds).
 * @cgroup: the cgroup that was killed (systemd-oomd) or whose oom_kill rose (kernel)
 * @by: "kernel" or "systemd-oomd"
 * @reason: "oom_kill" for the kernel, systemd-oomd's word for it
 */
json_t *event_killed_new(const char *cgroup, const char *by, const char *reason, uint64_t realtime_us,
                         uint64_t monotonic_us) _warn_unused_result_;

/*
 * event_episode_json - an episode's figures: "events", "peak" (PSI: the
 * largest stall over a window in percent) or "peak_level" (other sources),
 * "duration_us" up to @now_us (or its end), and, with @history, the
 * start and end as CLOCK_MONOTONIC and CLOCK_REALTIME; without it
 * "active_since_us" (CLOCK_MONOTONIC).
 * @rec: the record
 * @psi: whether the peak is a PSI stall ratio (else a level + 1)
 * @now_us: CLOCK_MONOTONIC now; @realtime_us: CLOCK_REALTIME at the same moment
 */
json_t *event_episode_json(const EpisodeRecord *rec, bool psi, bool history, uint64_t now_us, uint64_t realtime_us) _warn_unused_result_;

/*
 * event_cleared_new - a "cleared" event for the episode @rec that just
 * ended (without "seq" and "missed", which each subscriber's prefix adds).
 */
json_t *event_cleared_new(const char *cgroup, SourceType source, Resource resource, const EpisodeRecord *rec,
                          uint64_t realtime_us, uint64_t monotonic_us) _warn_unused_result_;

/*
 * event_trigger_changed_new - a "trigger_changed" event: a reload moved a
 * "level" subscription to another registration (without "seq", "missed"
 * and "level", which each subscriber's prefix adds).
 * @trigger: steals; the registration now used
 * @adjusted_reason: why the daemon changed the trigger, or NULL
 */
json_t *event_trigger_changed_new(const char *cgroup, SourceType source, Resource resource, json_t *trigger,
                                  bool adjusted, const char *adjusted_reason, uint64_t realtime_us,
                                  uint64_t monotonic_us) _warn_unused_result_;

/*
 * event_removed_message - the complete last message of a stream,
 * {"parameters": {"event": {"kind": "removed", ...}}} with its NUL.
 * @seq: the number of this event in the stream
 * @ret_size: the size including the NUL
 */
char *event_removed_message(const char *cgroup, uint64_t seq, size_t *ret_size) _warn_unused_result_;

/*
 * protection_node_to_json - the contract's PROTECTION_NODE: cgroup, usage,
 * min, low, emin, elow, min_usage, low_usage, children_min_usage,
 * children_low_usage (bytes; null for an unlimited value), state.
 * Returns 0, -EILSEQ for a cgroup whose name is not UTF-8 (JSON cannot
 * carry it), or -ENOMEM.
 */
int protection_node_to_json(const ProtectionNode *node, json_t **ret);

/* protection_node_append_json - a ProtectionNodeFn: append @node's PROTECTION_NODE to the array @userdata; a
 * cgroup whose name is not UTF-8 is left out. */
int protection_node_append_json(const ProtectionNode *node, void *userdata);

/*
 * subscribed_state_json - the "state" object of a "subscribed" event: "psi",
 * "counters", "node" or "kill_sources" and "unavailable_kill_sources" as
 * the source has them, then "episode"; {} for none. NULL when out of memory,
 * never a picture with a part missing.
 */
json_t *subscribed_state_json(const SubscribedState *st) _warn_unused_result_;

/* event_data_json - the JSON object of the typed event @e (the fields of its
 * kind, in the interface's order); NULL when out of memory. */
json_t *event_data_json(const EventData *e) _warn_unused_result_;

/*
 * event_data_body - @e serialized once into the Body every subscriber
 * shares, its flags taken from the struct; NULL when out of memory.
 * @read_us: when the notification was read (CLOCK_MONOTONIC), for the
 *           latency figures; 0 for an event no notification caused
 */
Body *event_data_body(const EventData *e, uint64_t read_us) _warn_unused_result_;

/*
 * event_prefix - the start of one subscriber's message for @body: the
 * envelope ({"continues":true,"parameters":{"event":{), "seq", "missed",
 * "count" unless the body says it merges none, and the subscriber's
 * @level unless the body carries its own or it is _LEVEL_INVALID. The body
 * closes what the prefix opens. Returns its length (under OUT_PREFIX_MAX).
 */
size_t event_prefix(char buf[static OUT_PREFIX_MAX], const Body *body, uint64_t seq, uint64_t missed, uint64_t count,
                    Level level);

/*
 * How a peer in a cgroup namespace sees the cgroups events name: its root
 * (the real path of its "/"), and the root as it appears inside a
 * serialized JSON string, to find it in shared bodies.
 */
typedef struct EventView {
        char *root;                 /* NULL: the daemon's own view, nothing to change */
        char *json;                 /* @root JSON-escaped, without quotes */
        size_t json_len;
} EventView;

/*
 * event_view_init - the view of a peer whose namespace root is @root
 * (NULL or "/": none). Returns 0 or -ENOMEM.
 */
int event_view_init(EventView *v, const char *root);
void event_view_done(EventView *v);

/*
 * event_body_view - @body as the peer with view @v sees it: a body in
 * which every "cgroup" value at or beneath @v's root loses that prefix
 * (the root itself becomes "/"); other bytes, the flags and the time are
 * kept. It is made once per distinct root and kept with @body, so every
 * peer with that root shares it: a reference to it is returned. With no
 * root in @v, another reference to @body. NULL when out of memory.
 */
Body *event_body_view(Body *body, const EventView *v) _warn_unused_result_;

/*
 * event_message_view - the whole message @msg (*@size bytes with its NUL;
 * taken over) as the peer with view @v sees it, like event_body_view();
 * *@size is updated. @msg itself without a root in @v; NULL when out of
 * memory or for NULL @msg.
 */
char *event_message_view(char *msg, size_t *size, const EventView *v) _warn_unused_result_;

/* event_peak_percent - a PSI peak in ppm as the percentage the interface reports. */
double event_peak_percent(uint32_t ppm);
