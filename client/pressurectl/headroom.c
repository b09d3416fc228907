/* SPDX-License-Identifier: MIT */
/*
 * pressurectl headroom: how far a cgroup can still grow before its nearest
 * memory limit, from GetHeadroom(). libpressure has no getters for it yet,
 * so the reply is read as JSON from pressure_client_call().
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "commands.h"
#include "error-text.h"
#include "pressure.h"
#include "util.h"

/*
 * Member @key of @reply as a size for people into @buf; @none when it is
 * null or absent. Returns NULL for anything else (not a size: a reply
 * pressurectl cannot read).
 */
static const char *size_member(char buf[static FORMAT_SIZE_MAX], json_t *reply, const char *key, const char *none) {
        json_t *v = json_object_get(reply, key);

        if (!v || json_is_null(v))
                return none;
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return NULL;
        return format_size(buf, (uint64_t) json_integer_value(v));
}

/* The four lines of the human output; -EBADMSG if a member is not what the interface says. */
static int print_headroom(json_t *reply, const char *cgroup) {
        char b[4][FORMAT_SIZE_MAX];
        const char *usage = size_member(b[0], reply, "usage_bytes", NULL),
                   *limit = size_member(b[1], reply, "limit_bytes", "no limit"),
                   *headroom = size_member(b[2], reply, "headroom_bytes", "unknown"),
                   *reclaim = size_member(b[3], reply, "reclaim_target_bytes", "unknown");
        json_t *at = json_object_get(reply, "limiting_cgroup");

        if (!usage || !limit || !headroom || !reclaim || (at && !json_is_null(at) && !json_is_string(at)))
                return -EBADMSG;
        printf("Cgroup:   %s\n", cgroup ?: "/");
        printf("Usage:    %s\n", usage);
        if (json_is_string(at))
                printf("Limit:    %s, set on %s\n", limit, json_string_value(at));
        else
                printf("Limit:    %s\n", limit);
        printf("Headroom: %s\n", headroom);
        printf("Reclaim:  %s\n", reclaim);
        return 0;
}

int cmd_headroom(int argc, char **argv) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_error_freep) pressure_error *error = NULL;
        _cleanup_free_ char *cgroup = NULL, *params = NULL, *text = NULL, *line = NULL;
        _cleanup_json_ json_t *reply = NULL;
        int r;

        r = command_begin(argc, argv, "headroom ",
                          "pressurectl [OPTIONS] headroom [CGROUP]\n\n"
                          "Show how far CGROUP (default: the whole system) can still grow: its memory\n"
                          "usage, the nearest limit (memory.max or memory.high of it or an ancestor,\n"
                          "the v1 limit_in_bytes) and the cgroup that sets it, the headroom (that\n"
                          "room, at most the machine's available memory), and the reclaim target\n"
                          "(what to free to get back to the margin of the cgroup's level; known only\n"
                          "while a level stream follows the cgroup). \"no limit\" and \"unknown\" where\n"
                          "the daemon answered null.\n\n"
                          "  --json   print the daemon's reply as one JSON object\n",
                          &cgroup, &c);
        if (r >= 0)
                return r;
        if (cgroup) {
                _cleanup_json_ json_t *p = json_pack("{s:s}", "cgroup", cgroup);

                params = p ? json_dumps(p, JSON_COMPACT) : NULL;
                if (!params)
                        return cli_fail("headroom", -ENOMEM, "%s", strerror(ENOMEM));
        }
        r = pressure_client_call(c, "io.pressured.GetHeadroom", params, &text, &error);
        if (r < 0)
                return report_error(c, r, "headroom", error);
        if (reply_parse(c, "headroom", text, NULL, &reply, NULL) < 0)
                return EXIT_DAEMON_ERROR;
        if (arg_json) {
                line = json_dumps(reply, JSON_DUMP_FLAGS);
                if (!line)
                        return cli_fail("headroom", -ENOMEM, "%s", strerror(ENOMEM));
                printf("%s\n", line);
                return 0;
        }
        if (print_headroom(reply, cgroup) < 0)
                return error_report(stderr, arg_json, "headroom", pressure_client_get_socket(c), -EBADMSG, NULL,
                                    NULL);
        return 0;
}
