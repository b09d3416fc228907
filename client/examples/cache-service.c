/* SPDX-License-Identifier: MIT */
/*
 * cache-service: a service that drops its cache when memory pressure
 * reaches "medium", lets it grow again when that episode is over, and
 * saves its state when pressure turns "critical", driven from its own
 * poll() loop. Build: cc cache-service.c $(pkg-config --cflags --libs libpressure)
 */
#include <poll.h>
#include <pressure.h>
#include <stdio.h>
#include <string.h>

static int on_event(pressure_subscription *sub, const pressure_event *ev, void *userdata) {
        pressure_level level = *(pressure_level *) userdata;

        if (ev->kind == PRESSURE_EVENT_PRESSURE && level == PRESSURE_LEVEL_MEDIUM)
                printf("memory pressure: dropping the cache\n");
        else if (ev->kind == PRESSURE_EVENT_PRESSURE && level == PRESSURE_LEVEL_CRITICAL)
                printf("critical memory pressure: saving state\n");
        else if (ev->kind == PRESSURE_EVENT_CLEARED && level == PRESSURE_LEVEL_MEDIUM)
                printf("pressure over after %.1f s: the cache may grow again\n",
                       pressure_event_get_episode(ev)->duration_us / 1e6);
        else if (ev->kind == PRESSURE_EVENT_ERROR)
                fprintf(stderr, "subscription ended: %s\n", strerror(-ev->error));
        return 0;
}

int main(void) {
        static pressure_level levels[] = { PRESSURE_LEVEL_MEDIUM, PRESSURE_LEVEL_CRITICAL };
        pressure_client *client;
        int r;

        if (pressure_client_new(&client) < 0)
                return 1;
        for (int i = 0; i < 2; i++) {
                pressure_selector *sel;

                if (pressure_selector_new(&sel) < 0)
                        return 1;
                pressure_selector_set_level(sel, levels[i]);
                r = pressure_client_subscribe(client, sel, on_event, &levels[i], NULL);
                pressure_selector_free(sel);
                if (r < 0) {
                        fprintf(stderr, "subscribe: %s\n", strerror(-r));
                        return 1;
                }
        }

        while (pressure_client_get_n_active(client) > 0) {
                struct pollfd p = { .fd = pressure_client_get_fd(client),
                                    .events = (short) pressure_client_get_events(client) };
                uint64_t usec;

                /* ... the service's own fds would be polled here too ... */
                pressure_client_get_timeout(client, &usec);
                poll(&p, 1, usec == PRESSURE_TIMEOUT_INFINITE ? -1 : (int) ((usec + 999) / 1000));
                if (pressure_client_process(client) < 0)
                        break;
        }
        pressure_client_free(client);
        return 0;
}
