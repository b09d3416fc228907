/* SPDX-License-Identifier: MIT */
/*
 * An unmodified sd-event memory-pressure client, for the proxy tests and
 * benchmark: sd_event_add_memory_pressure() with what MEMORY_PRESSURE_WATCH
 * and MEMORY_PRESSURE_WRITE say. Prints "ready" once set up and
 * "event MONOTONIC_US" for every callback; exits on SIGTERM or SIGINT.
 * Needs libsystemd >= 254.
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

int main(void) {
        sd_event *e = NULL;
        sigset_t mask;
        int k;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        k = sd_event_default(&e);
        if (k < 0) {
                fprintf(stderr, "sd_event_default: %s\n", strerror(-k));
                return 1;
        }
        k = sd_event_add_memory_pressure(e, NULL, on_pressure, NULL);
        if (k < 0) {
                fprintf(stderr, "sd_event_add_memory_pressure: %s\n", strerror(-k));
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
