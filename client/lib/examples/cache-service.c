/* SPDX-License-Identifier: MIT */
/*
 * cache-service: a service that drops its cache when memory pressure
 * reaches "medium", lets it grow again when that episode is over, and
 * saves its state when pressure turns "critical".
 * Build: cc cache-service.c $(pkg-config --cflags --libs libpressure)
 */
#include <pressure.h>
#include <stdio.h>

static int on_event(pressure_subscription *sub, const pressure_event *ev, void *userdata) {
        pressure_level level = *(pressure_level *) userdata;
        pressure_event_kind kind = pressure_event_get_kind(ev);

        if (kind == PRESSURE_EVENT_PRESSURE && level == PRESSURE_LEVEL_MEDIUM)
                printf("memory pressure: dropping the cache\n");
        else if (kind == PRESSURE_EVENT_PRESSURE && level == PRESSURE_LEVEL_CRITICAL)
                printf("critical memory pressure: saving state\n");
        else if (kind == PRESSURE_EVENT_CLEARED && level == PRESSURE_LEVEL_MEDIUM)
                printf("pressure over after %.1f s: the cache may grow again\n",
                       pressure_episode_get_duration_us(pressure_event_get_episode(ev)) / 1e6);
        else if (kind == PRESSURE_EVENT_ERROR)
                fprintf(stderr, "subscription ended: %s\n", pressure_error_get_message(pressure_event_get_error(ev)));
        return 0;
}

int main(void) {
        static pressure_level levels[] = { PRESSURE_LEVEL_MEDIUM, PRESSURE_LEVEL_CRITICAL };
        pressure_client *client;
        pressure_selector *sel;
        pressure_error *error;

        if (pressure_client_new(&client) < 0)
                return 1;
        for (int i = 0; i < 2; i++) {
                if (pressure_selector_new(&sel) < 0)
                        return 1;
                pressure_selector_set_level(sel, levels[i]);
                int r = pressure_client_subscribe(client, sel, on_event, &levels[i], NULL, &error);
                pressure_selector_free(sel);
                if (r < 0) {
                        fprintf(stderr, "subscribe: %s\n", pressure_error_get_message(error));
                        return 1;
                }
        }

        while (pressure_client_get_n_active(client) > 0)
                if (pressure_client_wait(client, PRESSURE_TIMEOUT_INFINITE) < 0)
                        break;
        pressure_client_free(client);
        return 0;
}
