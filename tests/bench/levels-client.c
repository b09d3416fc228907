/* SPDX-License-Identifier: MIT */
/*
 * The C client of tests/bench/bench-levels.py: a pressure_monitor (libpressure
 * 1.4) on an sd-event loop, as a service written against the library follows
 * the memory level.
 *
 *     levels-client [--socket PATH] [CGROUP]
 *
 * Prints, flushed: "ready LEVEL" for the first level event (the level now), then
 * "LEVEL MONOTONIC_US EVENT_US" for every later one, LEVEL one of normal, low,
 * medium, critical, MONOTONIC_US CLOCK_MONOTONIC in microseconds taken first
 * thing in the handler, and EVENT_US the event's monotonic_us (when the daemon
 * made it). Exits 0 when stdin ends or on SIGTERM or SIGINT, 1 when the stream
 * ends (the cgroup went away, the daemon refused it) or on an error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "pressure.h"

static uint64_t now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static const char *level_name(pressure_level level) {
        /* pressure_level_to_string() leaves NORMAL unnamed. */
        return level == PRESSURE_LEVEL_NORMAL ? "normal" : pressure_level_to_string(level);
}

typedef struct Client {
        sd_event *loop;
        unsigned seen;
} Client;

static int on_level(pressure_monitor *monitor, const pressure_event *event, void *userdata) {
        uint64_t t = now_us();
        Client *c = userdata;
        const pressure_error *error;

        (void) monitor;
        switch (pressure_event_get_kind(event)) {
        case PRESSURE_EVENT_LEVEL:
                if (c->seen++ == 0)
                        printf("ready %s\n", level_name(pressure_event_get_level(event)));
                else
                        printf("%s %llu %llu\n", level_name(pressure_event_get_level(event)), (unsigned long long) t,
                               (unsigned long long) pressure_event_get_monotonic_us(event));
                fflush(stdout);
                return 0;
        case PRESSURE_EVENT_ERROR:
                error = pressure_event_get_error(event);
                fprintf(stderr, "levels-client: the stream ended: %s: %s\n", pressure_error_get_name(error),
                        pressure_error_get_message(error));
                return sd_event_exit(c->loop, 1);
        case PRESSURE_EVENT_REMOVED:
                fprintf(stderr, "levels-client: the cgroup is gone\n");
                return sd_event_exit(c->loop, 1);
        default:
                return 0; /* RECONNECTED: a LEVEL event follows */
        }
}

static int on_stdin(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        char buf[256];
        ssize_t n;

        (void) revents;
        (void) userdata;
        n = read(fd, buf, sizeof(buf));
        if (n > 0)
                return 0;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int main(int argc, char *argv[]) {
        Client c = { NULL, 0 };
        pressure_monitor *monitor = NULL;
        const char *socket = NULL, *cgroup = "/";
        sigset_t mask;
        int r, i;

        for (i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
                        socket = argv[++i];
                else if (argv[i][0] != '-')
                        cgroup = argv[i];
                else {
                        fprintf(stderr, "Usage: %s [--socket PATH] [CGROUP]\n", argv[0]);
                        return 2;
                }
        }

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_default(&c.loop);
        if (r >= 0)
                r = sd_event_add_signal(c.loop, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(c.loop, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_io(c.loop, NULL, STDIN_FILENO, EPOLLIN, on_stdin, NULL);
        if (r >= 0)
                r = pressure_monitor_new(&monitor, cgroup, on_level, &c);
        if (r >= 0 && socket)
                r = pressure_client_set_socket(pressure_monitor_get_client(monitor), socket);
        if (r >= 0)
                r = pressure_monitor_attach_event(monitor, c.loop, 0);
        if (r >= 0)
                r = sd_event_loop(c.loop);
        if (r < 0)
                fprintf(stderr, "levels-client: %s\n", strerror(-r));

        pressure_monitor_unref(monitor);
        sd_event_unref(c.loop);
        return r == 0 ? 0 : 1;
}
