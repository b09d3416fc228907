/* SPDX-License-Identifier: MIT */
/*
 * pressure.h on its own, compiled as strict C99 and (test-header.cc) as
 * C++ with every warning an error: the installed header must not depend
 * on GNU C or on anything of the tree. Running it checks that the symbols
 * it names link.
 */
#include <errno.h>
#include <pressure.h>
#include <stdio.h>

static int on_event(pressure_subscription *sub, const pressure_event *event, void *userdata) {
        (void) sub;
        (void) userdata;
        return pressure_event_get_kind(event) == PRESSURE_EVENT_ERROR ? -1 : 0;
}

static int on_level(pressure_monitor *monitor, const pressure_event *event, void *userdata) {
        (void) monitor;
        (void) userdata;
        return pressure_event_get_level(event) == PRESSURE_LEVEL_NORMAL ? 0 : 1;
}

/*
 * A monitor in a program without libsystemd (this one links libpressure
 * only): attaching to sd-event says so, and nothing else depends on it.
 */
static int check_monitor(void) {
        pressure_monitor *monitor = NULL;
        pressure_level level = PRESSURE_LEVEL_CRITICAL;
        struct sd_event *event = NULL;
        int r = 0;

        if (pressure_monitor_new(&monitor, "/", on_level, NULL) < 0)
                return 1;
        if (pressure_monitor_attach_event(monitor, event, 0) != -EOPNOTSUPP ||
            pressure_monitor_get_level(monitor, &level) != -ENODATA || level != PRESSURE_LEVEL_CRITICAL ||
            pressure_monitor_get_fd(monitor) < 0)
                r = 1;
        pressure_monitor_unref(monitor);
        return r;
}

int main(void) {
        pressure_event_handler handler = on_event;
        pressure_client *client = NULL;
        pressure_error *error = NULL;
        uint64_t usec = PRESSURE_TIMEOUT_INFINITE;

        if (pressure_client_new(&client) < 0)
                return 1;
        if (pressure_client_set_socket(client, "/nonexistent/io.pressured") < 0)
                return 1;
        if (pressure_client_reload(client, &error) >= 0 || !pressure_error_get_message(error))
                return 1;
        if (pressure_client_get_timeout(client, &usec) < 0 || usec != PRESSURE_TIMEOUT_INFINITE)
                return 1;
        if (check_monitor() != 0)
                return 1;
        printf("libpressure %s: %s\n", pressure_version(), pressure_error_get_message(error));
        (void) handler;
        pressure_error_free(error);
        pressure_client_free(client);
        return 0;
}
