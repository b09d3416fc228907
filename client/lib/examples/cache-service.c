/* SPDX-License-Identifier: MIT */
/*
 * cache-service: a service that follows the memory level with a
 * pressure_monitor on its sd-event loop: it drops its cache when the level
 * reaches "medium", lets it grow again back at "normal", and saves its
 * state at "critical".
 * Build: cc cache-service.c $(pkg-config --cflags --libs libpressure libsystemd)
 */
#include <inttypes.h>
#include <pressure.h>
#include <stdio.h>
#include <systemd/sd-event.h>

static int on_level(pressure_monitor *m, const pressure_event *ev, void *loop) {
        static pressure_level last = PRESSURE_LEVEL_NORMAL;
        pressure_level level = pressure_event_get_level(ev);
        uint64_t headroom;

        switch (pressure_event_get_kind(ev)) {
        case PRESSURE_EVENT_LEVEL:
                if (pressure_event_get_headroom_bytes(ev, &headroom) >= 0)
                        printf("%" PRIu64 " MiB to the limit\n", headroom >> 20);
                if (level > last && level == PRESSURE_LEVEL_CRITICAL)
                        printf("critical memory pressure: saving state\n");
                else if (level > last && level == PRESSURE_LEVEL_MEDIUM)
                        printf("memory pressure: dropping the cache\n");
                else if (level == PRESSURE_LEVEL_NORMAL && last >= PRESSURE_LEVEL_MEDIUM)
                        printf("pressure over: the cache may grow again\n");
                last = level;
                return 0;
        case PRESSURE_EVENT_RECONNECTED: /* the daemon restarted; the level follows */
                return 0;
        default: /* the cgroup is gone, or an error */
                if (pressure_event_get_error(ev))
                        fprintf(stderr, "%s\n", pressure_error_get_message(pressure_event_get_error(ev)));
                return sd_event_exit(loop, 1);
        }
}

int main(void) {
        sd_event *loop = NULL;
        pressure_monitor *m = NULL;
        int r = sd_event_default(&loop);

        /* NULL: the whole system; a service would name its own cgroup. */
        if (r >= 0)
                r = pressure_monitor_new(&m, NULL, on_level, loop);
        if (r >= 0)
                r = pressure_monitor_attach_event(m, loop, SD_EVENT_PRIORITY_NORMAL);
        if (r >= 0)
                r = sd_event_loop(loop);
        pressure_monitor_unref(m);
        sd_event_unref(loop);
        return r == 0 ? 0 : 1;
}
