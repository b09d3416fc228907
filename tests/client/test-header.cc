/* SPDX-License-Identifier: MIT */
/*
 * pressure.h on its own, compiled as C++ (and, test-header.c, as C99)
 * with every warning an error: the installed header must not depend
 * on GNU C or on anything of the tree. Running it checks that the symbols
 * it names link.
 */
#include <pressure.h>
#include <stdio.h>

static int on_event(pressure_subscription *sub, const pressure_event *event, void *userdata) {
        (void) sub;
        (void) userdata;
        return pressure_event_get_kind(event) == PRESSURE_EVENT_ERROR ? -1 : 0;
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
        printf("libpressure %s: %s\n", pressure_version(), pressure_error_get_message(error));
        (void) handler;
        pressure_error_free(error);
        pressure_client_free(client);
        return 0;
}
