/* SPDX-License-Identifier: MIT */
/* The table of counters exported by GetStatus and /metrics. */
#include "counters.h"
#include "util.h"

static const CounterInfo counter_table[_COUNTER_MAX] = {
        [COUNTER_EVENTS_READ]           = { "events_read", "Kernel notifications read." },
        [COUNTER_EVENTS_DELIVERED]      = { "events_delivered", "Events queued to subscribers." },
        [COUNTER_EVENTS_DROPPED]        = { "events_dropped", "Events dropped for subscribers that did not read." },
        [COUNTER_EVENTS_INJECTED]       = { "events_injected", "Synthetic events injected." },
        [COUNTER_PROPAGATIONS_APPLIED]  = { "propagations_applied", "Protected-usage changes propagated to a parent." },
        [COUNTER_PROPAGATIONS_SKIPPED]  = { "propagations_skipped", "Protected-usage updates skipped because nothing changed." },
        [COUNTER_REGISTRATIONS_CREATED] = { "registrations_created", "Kernel registrations created." },
        [COUNTER_REGISTRATIONS_REMOVED] = { "registrations_removed", "Kernel registrations removed." },
        [COUNTER_PROTECTION_REFRESHES]  = { "protection_refreshes", "Protection tree refreshes." },
        [COUNTER_PROXY_CONNECTIONS]     = { "proxy_connections", "Connections accepted on the memory, cpu and io pressure sockets." },
        [COUNTER_PROXY_EVENTS_SENT]     = { "proxy_events_sent", "Event bytes written to pressure proxy clients." },
        [COUNTER_PROXY_EVENTS_DROPPED]  = { "proxy_events_dropped", "Event bytes dropped for pressure proxy clients with a full socket." },
        [COUNTER_PROXY_INVALID_REQUESTS] = { "proxy_invalid_requests", "Pressure proxy clients that wrote something other than a trigger." },
        [COUNTER_KILLS_KERNEL]          = { "kills_kernel", "Kills heard, by who killed: the kernel (memory.events oom_kill) or systemd-oomd.", "kills", "kernel" },
        [COUNTER_KILLS_SYSTEMD_OOMD]    = { "kills_systemd_oomd", "Kills heard, by who killed: the kernel (memory.events oom_kill) or systemd-oomd.", "kills", "systemd-oomd" },
};

const CounterInfo *counter_info(Counter c) {
        return c >= 0 && c < _COUNTER_MAX ? &counter_table[c] : NULL;
}
