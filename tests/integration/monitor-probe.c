/* SPDX-License-Identifier: MIT */
/*
 * monitor-probe CGROUP: a pressure_monitor on an sd-event loop that prints
 * one line per call of its handler, for test-monitor-daemon:
 *
 *   level NAME seq=N missed=N headroom=N|null reclaim=N|null
 *   reconnected N
 *   removed
 *   error ERRNO MESSAGE
 *
 * and exits with 0 after "removed", 1 after "error".
 */
#include <inttypes.h>
#include <stdio.h>

#include <systemd/sd-event.h>

#include "pressure.h"

static void print_figure(const char *key, int r, uint64_t v) {
        if (r < 0)
                printf(" %s=null", key);
        else
                printf(" %s=%" PRIu64, key, v);
}

static int on_level(pressure_monitor *m, const pressure_event *e, void *loop) {
        const pressure_error *error = pressure_event_get_error(e);
        uint64_t v = 0;
        int r;

        switch (pressure_event_get_kind(e)) {
        case PRESSURE_EVENT_LEVEL:
                printf("level %s seq=%" PRIu64 " missed=%" PRIu64,
                       pressure_level_to_string(pressure_event_get_level(e)) ?: "normal",
                       pressure_event_get_seq(e), pressure_event_get_missed(e));
                r = pressure_event_get_headroom_bytes(e, &v);
                print_figure("headroom", r, v);
                r = pressure_event_get_reclaim_target_bytes(e, &v);
                print_figure("reclaim", r, v);
                printf("\n");
                break;
        case PRESSURE_EVENT_RECONNECTED:
                printf("reconnected %" PRIu64 "\n", pressure_monitor_get_reconnects(m));
                break;
        case PRESSURE_EVENT_REMOVED:
                printf("removed\n");
                return sd_event_exit(loop, 0);
        default:
                printf("error %d %s\n", pressure_error_get_errno(error), pressure_error_get_message(error));
                return sd_event_exit(loop, 1);
        }
        fflush(stdout);
        return 0;
}

int main(int argc, char **argv) {
        sd_event *loop = NULL;
        pressure_monitor *m = NULL;
        int r;

        if (argc != 2)
                return 2;
        r = sd_event_new(&loop);
        if (r >= 0)
                r = pressure_monitor_new(&m, argv[1], on_level, loop);
        if (r >= 0)
                r = pressure_monitor_attach_event(m, loop, 0);
        if (r >= 0)
                r = sd_event_loop(loop);
        fflush(stdout);
        pressure_monitor_unref(m);
        sd_event_unref(loop);
        return r < 0 ? 2 : r;
}
