/* SPDX-License-Identifier: MIT */
/*
 * prekill-probe MODE CGROUP: a program that hears warnings before a kill
 * through libpressure, saves its state and acknowledges, for
 * test-prekill-clients and test-prekill-daemon. MODE:
 *
 *   sync     a kills subscription; each warning acknowledged with
 *            pressure_client_acknowledge_prekill()
 *   async    the same with pressure_client_acknowledge_prekill_async()
 *   monitor  a pressure_monitor on sd-event with warnings turned on: the
 *            handler returns PRESSURE_MONITOR_ACKNOWLEDGE_LATER and the
 *            state is saved 100 ms later by a timer of the loop, which
 *            then calls pressure_monitor_acknowledge_prekill()
 *
 * "Saving" appends "saved ID" to the file $PREKILL_SAVE (if set) and
 * syncs it. One line per happening on stdout:
 *
 *   subscribed | level NAME
 *   prekill CGROUP id=N deadline=N by=NAME
 *   saved N
 *   acknowledged N | ack-failed N ERRNO NAME
 *   killed CGROUP by=NAME reason=REASON
 *   removed                          (then exit 0)
 *   error ERRNO MESSAGE              (then exit 1)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "pressure.h"

static int exit_code = -1;
/* Asynchronous acknowledgements sent and not answered yet. */
static unsigned acks_pending;

static void save(uint64_t id) {
        const char *path = getenv("PREKILL_SAVE");
        FILE *f;

        if (!path)
                return;
        f = fopen(path, "ae");
        if (!f) {
                printf("save-failed %" PRIu64 " %d\n", id, errno);
                return;
        }
        fprintf(f, "saved %" PRIu64 "\n", id);
        fflush(f);
        (void) fsync(fileno(f));
        fclose(f);
        printf("saved %" PRIu64 "\n", id);
}

static void print_ack(uint64_t id, const pressure_error *error) {
        if (error)
                printf("ack-failed %" PRIu64 " %d %s\n", id, pressure_error_get_errno(error),
                       pressure_error_get_name(error) ?: "-");
        else
                printf("acknowledged %" PRIu64 "\n", id);
        fflush(stdout);
}

static int on_acknowledged(pressure_call *call, const char *json, const pressure_error *error, void *userdata) {
        (void) call;
        (void) json;
        print_ack((uint64_t) (uintptr_t) userdata, error);
        acks_pending--;
        return 0;
}

static void print_prekill(const pressure_event *e, uint64_t id) {
        printf("prekill %s id=%" PRIu64 " deadline=%" PRIu64 " by=%s\n", pressure_event_get_cgroup(e), id,
               pressure_event_get_deadline_us(e), pressure_event_get_killed_by(e));
}

/* The end of a stream, or a kill: says so; returns true if the program is to end. */
static bool print_other(const pressure_event *e) {
        const pressure_error *error = pressure_event_get_error(e);

        switch (pressure_event_get_kind(e)) {
        case PRESSURE_EVENT_KILLED:
                printf("killed %s by=%s reason=%s\n", pressure_event_get_cgroup(e), pressure_event_get_killed_by(e),
                       pressure_event_get_reason(e));
                return false;
        case PRESSURE_EVENT_REMOVED:
                printf("removed\n");
                exit_code = 0;
                return true;
        case PRESSURE_EVENT_ERROR:
                printf("error %d %s\n", pressure_error_get_errno(error), pressure_error_get_message(error));
                exit_code = 1;
                return true;
        default:
                return false;
        }
}

static int on_event(pressure_subscription *sub, const pressure_event *e, void *userdata) {
        pressure_client *c = pressure_subscription_get_client(sub);
        pressure_error *error = NULL;
        bool async = userdata != NULL;
        uint64_t id;

        if (pressure_event_get_kind(e) == PRESSURE_EVENT_SUBSCRIBED)
                printf("subscribed\n");
        else if (pressure_event_get_prekill_id(e, &id) >= 0) {
                print_prekill(e, id);
                save(id);
                if (async) {
                        int r = pressure_client_acknowledge_prekill_async(c, id, on_acknowledged,
                                                                          (void *) (uintptr_t) id, NULL);
                        if (r < 0)
                                printf("ack-failed %" PRIu64 " %d -\n", id, r);
                        else
                                acks_pending++;
                } else {
                        (void) pressure_client_acknowledge_prekill(c, id, &error);
                        print_ack(id, error);
                        pressure_error_free(error);
                }
        } else
                (void) print_other(e);
        fflush(stdout);
        return 0;
}

static int run_kills(const char *cgroup, bool async) {
        pressure_client *c = NULL;
        pressure_selector *s = NULL;
        pressure_error *error = NULL;
        int r;

        r = pressure_client_new(&c);
        if (r >= 0)
                r = pressure_selector_new(&s);
        if (r >= 0)
                r = pressure_selector_set_cgroup(s, cgroup);
        if (r >= 0)
                r = pressure_selector_set_kills(s);
        if (r >= 0)
                r = pressure_client_subscribe(c, s, on_event, async ? (void *) 1 : NULL, NULL, &error);
        if (r < 0)
                printf("error %d %s\n", r, pressure_error_get_message(error));
        fflush(stdout);
        while (r >= 0 && exit_code < 0)
                r = pressure_client_wait(c, PRESSURE_TIMEOUT_INFINITE);
        /* What the asynchronous acknowledgements answered, before the client goes (each call times out). */
        while (r >= 0 && acks_pending > 0)
                r = pressure_client_wait(c, PRESSURE_TIMEOUT_INFINITE);
        pressure_error_free(error);
        pressure_selector_free(s);
        pressure_client_free(c);
        return exit_code >= 0 ? exit_code : 2;
}

/* ---- monitor ---------------------------------------------------------------------- */

typedef struct Later {
        pressure_monitor *monitor;
        uint64_t id;
} Later;

static int on_later(sd_event_source *s, uint64_t usec, void *userdata) {
        Later *l = userdata;
        int r;

        (void) usec;
        save(l->id);
        r = pressure_monitor_acknowledge_prekill(l->monitor, l->id);
        if (r < 0)
                printf("ack-failed %" PRIu64 " %d -\n", l->id, r);
        else
                printf("acknowledged %" PRIu64 "\n", l->id);
        fflush(stdout);
        free(l);
        (void) s; /* a floating one-shot source: the loop keeps it */
        return 0;
}

static int on_monitor(pressure_monitor *m, const pressure_event *e, void *loop) {
        Later *l;
        uint64_t id;

        if (pressure_event_get_kind(e) == PRESSURE_EVENT_LEVEL) {
                printf("level %s\n", pressure_level_to_string(pressure_event_get_level(e)) ?: "normal");
                fflush(stdout);
                return 0;
        }
        if (pressure_event_get_prekill_id(e, &id) < 0) {
                bool end = print_other(e);

                fflush(stdout);
                return end ? sd_event_exit(loop, exit_code) : 0;
        }
        print_prekill(e, id);
        fflush(stdout);
        /* Saving goes on in the loop: the acknowledgement comes when it is done. */
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        *l = (Later) { m, id };
        if (sd_event_add_time_relative(loop, NULL, CLOCK_MONOTONIC, 100000, 0, on_later, l) < 0) {
                free(l);
                return 0; /* acknowledged now, then */
        }
        return PRESSURE_MONITOR_ACKNOWLEDGE_LATER;
}

static int run_monitor(const char *cgroup) {
        sd_event *loop = NULL;
        pressure_monitor *m = NULL;
        int r;

        r = sd_event_new(&loop);
        if (r >= 0)
                r = pressure_monitor_new(&m, cgroup, on_monitor, loop);
        if (r >= 0)
                r = pressure_monitor_set_prekill(m, 1);
        if (r >= 0)
                r = pressure_monitor_attach_event(m, loop, 0);
        if (r >= 0)
                r = sd_event_loop(loop);
        fflush(stdout);
        pressure_monitor_unref(m);
        sd_event_unref(loop);
        return r < 0 ? 2 : r;
}

int main(int argc, char **argv) {
        if (argc != 3)
                return 2;
        if (strcmp(argv[1], "monitor") == 0)
                return run_monitor(argv[2]);
        if (strcmp(argv[1], "sync") == 0 || strcmp(argv[1], "async") == 0)
                return run_kills(argv[2], strcmp(argv[1], "async") == 0);
        return 2;
}
