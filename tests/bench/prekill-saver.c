/* SPDX-License-Identifier: MIT */
/*
 * The program in the victim of bench-prekill-oomd.py: a pressure_monitor
 * (libpressure 1.5) on its own service's cgroup that hears systemd-oomd's
 * warning before the kill, as a service written against the library does,
 * on a plain poll() loop.
 *
 *     prekill-saver [--never] CGROUP STATE
 *
 * Prints, flushed, "ready" once the level stream has its first level. On
 * each warning ("prekill"): without --never, writes the event's JSON to
 * STATE.new, fsync()s it, renames it to STATE, fsync()s the directory and
 * returns 0 from its handler, so that the monitor acknowledges right after;
 * with --never, it puts the acknowledgement off and never gives it (the
 * daemon answers systemd-oomd at its deadline). Then prints one line
 *
 *     prekill ID EVENT_US DEADLINE_US HEARD_US WRITTEN_US
 *
 * ID the warning's number, EVENT_US the event's monotonic_us (when the
 * daemon read oomd's call), DEADLINE_US its deadline_us, HEARD_US
 * CLOCK_MONOTONIC taken first thing in the handler, WRITTEN_US when the
 * state was on disk, just before the handler returns (0 with --never); all
 * microseconds. Runs until it is killed; exits 1 when the stream ends or on
 * an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pressure.h"

typedef struct Saver {
        bool never;
        bool ready;
        const char *state;
} Saver;

static uint64_t now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

static int fsync_path(const char *path, int flags) {
        int fd = open(path, flags | O_CLOEXEC), r;

        if (fd < 0)
                return -errno;
        r = fsync(fd) < 0 ? -errno : 0;
        close(fd);
        return r;
}

/* @text to @path, durably: a new file, synced, renamed over the old one, the directory synced. */
static int save_state(const char *path, const char *text) {
        char tmp[4096], dir[4096];
        size_t len = strlen(text);
        int fd, r = 0;

        if ((size_t) snprintf(tmp, sizeof(tmp), "%s.new", path) >= sizeof(tmp))
                return -ENAMETOOLONG;
        snprintf(dir, sizeof(dir), "%s", path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, text, len) != (ssize_t) len || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
                r = errno ? -errno : -EIO;
        close(fd);
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r == 0)
                r = fsync_path(dirname(dir), O_RDONLY | O_DIRECTORY);
        return r;
}

static int on_prekill(Saver *s, const pressure_event *event) {
        uint64_t heard = now_us(), written = 0, id = 0;
        int r;

        (void) pressure_event_get_prekill_id(event, &id);
        if (!s->never) {
                r = save_state(s->state, pressure_event_get_json(event));
                if (r < 0) {
                        fprintf(stderr, "prekill-saver: saving %s failed: %s\n", s->state, strerror(-r));
                        return r;
                }
                written = now_us();
        }
        printf("prekill %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", id,
               pressure_event_get_monotonic_us(event), pressure_event_get_deadline_us(event), heard, written);
        fflush(stdout);
        return s->never ? PRESSURE_MONITOR_ACKNOWLEDGE_LATER : 0;
}

static int on_event(pressure_monitor *monitor, const pressure_event *event, void *userdata) {
        Saver *s = userdata;
        const pressure_error *error;

        (void) monitor;
        switch (pressure_event_get_kind(event)) {
        case PRESSURE_EVENT_PREKILL:
                return on_prekill(s, event);
        case PRESSURE_EVENT_LEVEL:
                if (!s->ready) {
                        s->ready = true;
                        printf("ready\n");
                        fflush(stdout);
                }
                return 0;
        case PRESSURE_EVENT_ERROR:
                error = pressure_event_get_error(event);
                fprintf(stderr, "prekill-saver: the stream ended: %s: %s\n", pressure_error_get_name(error),
                        pressure_error_get_message(error));
                return -EPIPE;
        case PRESSURE_EVENT_REMOVED:
                fprintf(stderr, "prekill-saver: the cgroup is gone\n");
                return -ENOENT;
        default:
                return 0; /* RECONNECTED: a LEVEL event follows */
        }
}

int main(int argc, char *argv[]) {
        Saver s = {};
        pressure_monitor *monitor = NULL;
        int r, i = 1;

        if (argc > 1 && strcmp(argv[1], "--never") == 0) {
                s.never = true;
                i++;
        }
        if (argc - i != 2 || argv[i][0] != '/') {
                fprintf(stderr, "Usage: %s [--never] CGROUP STATE\n", argv[0]);
                return 2;
        }
        s.state = argv[i + 1];

        r = pressure_monitor_new(&monitor, argv[i], on_event, &s);
        if (r >= 0)
                r = pressure_monitor_set_prekill(monitor, 1);
        if (r >= 0)
                r = pressure_monitor_start(monitor);
        while (r >= 0 && pressure_monitor_is_active(monitor)) {
                struct pollfd p = { .fd = pressure_monitor_get_fd(monitor), .events = POLLIN };

                /* A second at most: while the daemon is away the client retries on its own clock. */
                if (poll(&p, 1, 1000) < 0 && errno != EINTR)
                        r = -errno;
                else
                        r = pressure_monitor_process(monitor);
        }
        if (r < 0)
                fprintf(stderr, "prekill-saver: %s\n", strerror(-r));
        pressure_monitor_unref(monitor);
        return r < 0 ? 1 : 0;
}
