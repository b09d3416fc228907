/* SPDX-License-Identifier: MIT */
/*
 * An unmodified sd-event pressure client of systemd 261 and later, for the
 * tests of sid's systemd (tests/sid, the sid guest of tests/vm): linked
 * statically with sid's libsystemd.a, so it runs on Debian 12 and in the
 * guest alike.
 *
 *     sd-event-client memory|cpu|io
 *
 * sd_event_add_memory_pressure(), sd_event_add_cpu_pressure() or
 * sd_event_add_io_pressure() as a service calls it, with what
 * $MEMORY_PRESSURE_WATCH/_WRITE, $CPU_PRESSURE_WATCH/_WRITE or
 * $IO_PRESSURE_WATCH/_WRITE say. Prints "ready" once set up and
 * "event MONOTONIC_US" for every callback, flushed; exits on SIGTERM or
 * SIGINT.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <time.h>

static int on_pressure(sd_event_source *s, void *userdata) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("event %llu\n", (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000);
        fflush(stdout);
        return 0;
}

int main(int argc, char *argv[]) {
        sd_event *e = NULL;
        sigset_t mask;
        int k;

        if (argc != 2) {
                fprintf(stderr, "usage: %s memory|cpu|io\n", argv[0]);
                return 2;
        }
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        k = sd_event_default(&e);
        if (k < 0) {
                fprintf(stderr, "sd_event_default: %s\n", strerror(-k));
                return 1;
        }
        if (strcmp(argv[1], "memory") == 0)
                k = sd_event_add_memory_pressure(e, NULL, on_pressure, NULL);
        else if (strcmp(argv[1], "cpu") == 0)
                k = sd_event_add_cpu_pressure(e, NULL, on_pressure, NULL);
        else if (strcmp(argv[1], "io") == 0)
                k = sd_event_add_io_pressure(e, NULL, on_pressure, NULL);
        else {
                fprintf(stderr, "%s: unknown resource '%s'\n", argv[0], argv[1]);
                return 2;
        }
        if (k < 0) {
                fprintf(stderr, "sd_event_add_%s_pressure: %s\n", argv[1], strerror(-k));
                return 1;
        }
        if (sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL) < 0 ||
            sd_event_add_signal(e, NULL, SIGINT, NULL, NULL) < 0)
                return 1;
        printf("ready\n");
        fflush(stdout);
        k = sd_event_loop(e);
        sd_event_unref(e);
        return k < 0 ? 1 : 0;
}
