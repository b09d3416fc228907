/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for systemd-oomd on a test's private system bus
 * ($DBUS_SYSTEM_BUS_ADDRESS): it does what the test writes on stdin, one
 * command a line, and answers each with "ok" (or "error ...") on stdout.
 *
 *   own                     request org.freedesktop.oom1
 *   release                 release it
 *   kill CGROUP REASON      emit org.freedesktop.oom1.Manager.Killed(CGROUP, REASON)
 *                           from /org/freedesktop/oom1 (REASON may hold spaces)
 *   quit                    exit
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

static int run(sd_bus *bus, char *line) {
        char *arg = strchr(line, ' ');

        if (arg)
                *arg++ = 0;
        if (strcmp(line, "own") == 0)
                return sd_bus_request_name(bus, "org.freedesktop.oom1", 0);
        if (strcmp(line, "release") == 0)
                return sd_bus_release_name(bus, "org.freedesktop.oom1");
        if (strcmp(line, "kill") == 0 && arg) {
                char *reason = strchr(arg, ' ');

                if (!reason)
                        return -EINVAL;
                *reason++ = 0;
                return sd_bus_emit_signal(bus, "/org/freedesktop/oom1", "org.freedesktop.oom1.Manager", "Killed",
                                          "ss", arg, reason);
        }
        return -EINVAL;
}

int main(void) {
        sd_bus *bus = NULL;
        char line[8192];
        int k;

        k = sd_bus_open_system(&bus);
        if (k < 0) {
                fprintf(stderr, "oom1-standin: cannot connect to the system bus: %s\n", strerror(-k));
                return 1;
        }
        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = 0;
                if (strcmp(line, "quit") == 0)
                        break;
                k = run(bus, line);
                if (k >= 0)
                        k = sd_bus_flush(bus);
                /* Whatever the bus sent us meanwhile (NameAcquired, ...) is of no interest. */
                while (k >= 0 && sd_bus_process(bus, NULL) > 0)
                        ;
                if (k < 0)
                        printf("error %s\n", strerror(-k));
                else
                        printf("ok\n");
                fflush(stdout);
        }
        sd_bus_flush_close_unref(bus);
        return 0;
}
