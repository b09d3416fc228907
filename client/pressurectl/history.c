/* SPDX-License-Identifier: MIT */
/* pressurectl history: the recent pressure episodes of each registration, from GetStatus(). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "commands.h"
#include "error-text.h"
#include "pressure.h"
#include "util.h"

/* An episode of `history --json`: @episode with its registration's cgroup, source and trigger, into @out. */
static int add_episode_json(json_t *out, json_t *reg, json_t *episode, bool active) {
        json_t *o = json_deep_copy(episode);

        if (!o)
                return -ENOMEM;
        json_object_set(o, "cgroup", json_object_get(reg, "cgroup"));
        json_object_set(o, "source", json_object_get(reg, "source"));
        if (json_object_get(reg, "resource"))
                json_object_set(o, "resource", json_object_get(reg, "resource"));
        json_object_set(o, "trigger", json_object_get(reg, "trigger"));
        json_object_set_new(o, "active", json_boolean(active));
        return json_array_append_new(out, o) < 0 ? -ENOMEM : 0;
}

/* The episodes of registration @v into @out: ended ones, then the active one. */
static int add_registration_json(json_t *out, json_t *v) {
        json_t *ep = json_object_get(v, "episode"), *h;
        size_t k;

        json_array_foreach(json_object_get(v, "history"), k, h)
                if (add_episode_json(out, v, h, false) < 0)
                        return -ENOMEM;
        return json_is_object(ep) ? add_episode_json(out, v, ep, true) : 0;
}

/* `history --json`: one object, {"history": [...]}, an empty list when there is nothing. */
static int print_history_json(json_t *out) {
        _cleanup_json_ json_t *o = json_pack("{s:O}", "history", out);
        _cleanup_free_ char *line = o ? json_dumps(o, JSON_DUMP_FLAGS) : NULL;

        if (!line)
                return cli_fail("history", -ENOMEM, "%s", strerror(ENOMEM));
        printf("%s\n", line);
        return 0;
}

/* The text of registration @v: its ended episodes, then the active one. */
static void print_registration(json_t *v, bool first) {
        json_t *hist = json_object_get(v, "history"), *ep = json_object_get(v, "episode"), *h;
        char trig[128], a[64], b[64], fig[128];
        size_t k;

        format_reg_trigger(trig, sizeof(trig), v);
        printf("%s%s %s (%s):\n", first ? "" : "\n", strna(jget_str(v, "cgroup")), strna(jget_str(v, "source")), trig);
        if (json_array_size(hist) == 0 && !json_is_object(ep))
                printf("  no episodes\n");
        json_array_foreach(hist, k, h) {
                format_episode(fig, sizeof(fig), h);
                printf("  %s .. %s  %s\n", format_time(a, jget_u64(h, "start_time_us")),
                       format_time(b, jget_u64(h, "end_time_us")), fig);
        }
        if (json_is_object(ep)) {
                uint64_t now_mono = now_usec(CLOCK_MONOTONIC), since = jget_u64(ep, "active_since_us");

                format_episode(fig, sizeof(fig), ep);
                printf("  %s .. now (active)  %s\n",
                       format_time(a, now_usec(CLOCK_REALTIME) - (now_mono > since ? now_mono - since : 0)), fig);
        }
}

int cmd_history(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_status_unrefp) pressure_status *status = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        _cleanup_json_ json_t *st = NULL, *out = NULL;
        const char *text;
        _cleanup_free_ char *cgroup = NULL;
        json_t *regs, *v;
        unsigned shown = 0;
        bool named = false;
        size_t i;
        int r;

        r = command_begin(argc, argv, "history ",
                          "pressurectl [OPTIONS] history [CGROUP]\n\n"
                          "Show the recent pressure episodes of every registration (of CGROUP only,\n"
                          "if given): the active one and the last ones that ended. The daemon keeps\n"
                          "them only while somebody subscribes to the registration.\n\n"
                          "  --json   one object, {\"history\": [...]}, with the episodes, each with\n"
                          "           cgroup, source, resource, trigger and active\n",
                          &cgroup, &c);
        if (r >= 0)
                return r;
        r = pressure_client_get_status(c, &status, &error);
        if (r < 0)
                return report_error(c, r, "history", error);
        text = pressure_status_get_json(status);
        if (reply_parse(c, "history", text, "registrations", &st, &regs) < 0)
                return EXIT_DAEMON_ERROR;
        out = json_array();
        if (!out)
                return cli_fail("history", -ENOMEM, "%s", strerror(ENOMEM));

        json_array_foreach(regs, i, v) {
                if (cgroup && !streq_ptr(jget_str(v, "cgroup"), cgroup))
                        continue;
                named = true;
                if (!json_is_array(json_object_get(v, "history")))
                        continue; /* no episodes for this source */
                if (arg_json && add_registration_json(out, v) < 0)
                        return cli_fail("history", -ENOMEM, "%s", strerror(ENOMEM));
                if (!arg_json)
                        print_registration(v, shown == 0);
                shown++;
        }
        /* A cgroup no registration names may not exist at all: that is the daemon's error to tell. */
        if (cgroup && !named) {
                r = cgroup_check_exists(c, "history", cgroup);
                if (r >= 0)
                        return r;
        }
        if (arg_json)
                return print_history_json(out);
        if (shown == 0)
                printf(cgroup ? "No registration with episodes on %s.\n" : "No registration with episodes.\n",
                       cgroup);
        return 0;
}
