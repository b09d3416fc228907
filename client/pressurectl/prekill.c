/* SPDX-License-Identifier: MIT */
/* Warnings before a kill in pressurectl's commands; see prekill.h. */
#include <errno.h>
#include <inttypes.h>
#include <time.h>

#include "cli.h"
#include "prekill.h"
#include "util.h"

void prekill_print(FILE *f, uint64_t time_us, const char *cgroup, const char *by, uint64_t deadline_us,
                   uint64_t missed) {
        time_t sec = (time_t) ((time_us ?: now_usec(CLOCK_REALTIME)) / USEC_PER_SEC);
        uint64_t now = now_usec(CLOCK_MONOTONIC);
        char tb[64] = "-", d[64];
        struct tm tm;

        if (localtime_r(&sec, &tm))
                strftime(tb, sizeof(tb), "%Y-%m-%d %H:%M:%S", &tm);
        fprintf(f, "%s  prekill  %s  by %s (", tb, strna(cgroup), strna(by));
        if (deadline_us > now)
                fprintf(f, "deadline in %s)", format_duration(d, deadline_us - now));
        else
                fprintf(f, "deadline passed)");
        if (missed > 0)
                fprintf(f, "  missed=%" PRIu64, missed);
        fprintf(f, "\n");
}

int prekill_send_ack(pressure_client *c, uint64_t id, uint64_t deadline_us) {
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        int r;

        r = pressure_client_acknowledge_prekill(c, id, &error);
        if (r >= 0)
                return 0;
        if (r == -ESRCH && now_usec(CLOCK_MONOTONIC) >= deadline_us)
                return r;
        cli_notice("cannot acknowledge warning %" PRIu64 ": %s", id, pressure_error_get_message(error));
        return r;
}

void prekill_hook_done(uint64_t id, uint64_t deadline_us, void *userdata) {
        (void) prekill_send_ack(userdata, id, deadline_us);
}
