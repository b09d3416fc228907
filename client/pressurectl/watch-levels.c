/* SPDX-License-Identifier: MIT */
/* pressurectl watch --levels: a level stream on the daemon's socket; see watch-levels.h. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "error-text.h"
#include "prekill.h"
#include "watch-levels.h"
#include "util.h"
#include "vocabulary.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* The longest message read: a level event is a few hundred bytes. */
#define LEVEL_MESSAGE_MAX (64 * 1024)
/* The first and the longest pause before connecting again to a daemon that went away, as for the
 * library's subscriptions (pressurectl(1)). */
#define RETRY_FIRST_USEC (100 * USEC_PER_MSEC)
#define RETRY_MAX_USEC USEC_PER_SEC

typedef struct LevelStream {
        const LevelWatchOptions *o;
        pressure_client *client;
        const char *socket;
        int fd;              /* the stream's connection; -1 while there is none */
        char buf[LEVEL_MESSAGE_MAX];
        size_t len;
        bool lost;           /* the daemon went away after the stream was set up */
        uint64_t retry_usec; /* the pause before the next connect */
        uint64_t retry_at;   /* CLOCK_MONOTONIC of that connect; 0: connected */
        uint64_t received;   /* level events */
        int exit_code;       /* >= 0: stop with this code */
} LevelStream;

/* Connect and send the Subscribe call; 0 or a negative errno. */
static int stream_connect(LevelStream *s) {
        _cleanup_json_ json_t *call = NULL, *params = json_pack("{s:b}", "levels", 1);
        _cleanup_free_ char *text = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t n;
        int fd;

        if (!params || (s->o->cgroup && json_object_set_new(params, "cgroup", json_string(s->o->cgroup)) < 0))
                return -ENOMEM;
        call = json_pack("{s:s, s:O, s:b}", "method", "io.pressured.Subscribe", "parameters", params, "more", 1);
        text = call ? json_dumps(call, JSON_DUMP_FLAGS) : NULL;
        if (!text)
                return -ENOMEM;
        if (strlen(s->socket) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, s->socket);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        n = strlen(text) + 1; /* with the NUL that ends a varlink message */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || send(fd, text, n, MSG_NOSIGNAL) != (ssize_t) n) {
                int r = -errno;

                close(fd);
                return r;
        }
        s->fd = fd;
        s->len = 0;
        return 0;
}

static void stream_close(LevelStream *s) {
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
}

/* A size member of a level event for people; "unknown" where it is null. */
static const char *level_size(char buf[static FORMAT_SIZE_MAX], json_t *ev, const char *key) {
        json_t *v = json_object_get(ev, key);

        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return "unknown";
        return format_size(buf, (uint64_t) json_integer_value(v));
}

/*
 * "TIME  CGROUP  LEVEL     headroom SIZE  reclaim SIZE", the level padded
 * to the longest name so that the figures line up; "  missed=N" after.
 */
static void print_level_human(json_t *ev) {
        char tb[64], b[2][FORMAT_SIZE_MAX];
        uint64_t missed = jget_u64(ev, "missed");

        if (streq_ptr(jget_str(ev, "kind"), IDL_EVENT_KIND_NAME(REMOVED))) {
                printf("%s  %s  removed\n", format_time(tb, jget_u64(ev, "time_us")), strna(jget_str(ev, "cgroup")));
                return;
        }
        printf("%s  %s  %-8s  headroom %-7s  reclaim %s", format_time(tb, jget_u64(ev, "time_us")),
               strna(jget_str(ev, "cgroup")), strna(jget_str(ev, "level")), level_size(b[0], ev, "headroom_bytes"),
               level_size(b[1], ev, "reclaim_target_bytes"));
        if (missed > 0)
                printf("  missed=%" PRIu64, missed);
        printf("\n");
}

/* The daemon's error @msg ends the watch; says so as the other commands do. */
static void stream_error(LevelStream *s, json_t *msg) {
        const char *name = jget_str(msg, "error");
        _cleanup_free_ char *params = NULL;
        json_t *p = json_object_get(msg, "parameters");
        bool denied = streq(name, IDL_ERROR_NAME(PERMISSION_DENIED)) ||
                      streq(name, IDL_ERROR_NAME(VARLINK_PERMISSION_DENIED));

        params = p ? json_dumps(p, JSON_DUMP_FLAGS) : NULL;
        s->exit_code = error_report(stderr, arg_json, "watch", s->socket, denied ? -EACCES : -EIO, name, params);
}

/* A warning before a kill: printed, then the hook runs for it, or it is acknowledged now. */
static void stream_prekill(LevelStream *s, json_t *ev, const char *line) {
        HookPrekill p = { .cgroup = strna(jget_str(ev, "cgroup")), .json = line,
                          .id = jget_u64(ev, "id"), .deadline_us = jget_u64(ev, "deadline_us"),
                          .seq = jget_u64(ev, "seq"), .missed = jget_u64(ev, "missed") };

        if (arg_json)
                printf("%s\n", line);
        else
                prekill_print(stdout, jget_u64(ev, "time_us"), p.cgroup, jget_str(ev, "by"), p.deadline_us, p.missed);
        fflush(stdout);
        if (s->o->hook)
                (void) hook_submit_prekill(s->o->hook, &p);
        else
                (void) prekill_send_ack(s->client, p.id, p.deadline_us);
}

/* One message of the stream: a level event, a warning, "removed", or the daemon's error. */
static int stream_message(LevelStream *s, const char *text) {
        _cleanup_json_ json_t *msg = json_loads(text, 0, NULL);
        json_t *ev = json_object_get(json_object_get(msg, "parameters"), "event");
        const char *kind = jget_str(ev, "kind");
        _cleanup_free_ char *line = NULL;

        if (jget_str(msg, "error")) {
                stream_error(s, msg);
                return 0;
        }
        if (!kind)
                return -EBADMSG;
        /* A kind of a later daemon is not this version's to show: the stream goes on without it. */
        if (!streq(kind, IDL_EVENT_KIND_NAME(LEVEL)) && !streq(kind, IDL_EVENT_KIND_NAME(REMOVED)) &&
            !streq(kind, IDL_EVENT_KIND_NAME(PREKILL)))
                return 0;
        s->retry_usec = RETRY_FIRST_USEC; /* the daemon serves again */
        line = json_dumps(ev, JSON_DUMP_FLAGS); /* for --json and the hook's $PRESSURE_EVENT */
        if (!line)
                return -ENOMEM;
        if (streq(kind, IDL_EVENT_KIND_NAME(PREKILL))) {
                stream_prekill(s, ev, line);
                if (++s->received == s->o->count)
                        s->exit_code = 0;
                return 0;
        }
        if (arg_json)
                printf("%s\n", line);
        else
                print_level_human(ev);
        fflush(stdout);
        if (s->o->hook && streq(kind, IDL_EVENT_KIND_NAME(LEVEL)))
                (void) hook_submit_level(s->o->hook, strna(jget_str(ev, "cgroup")), strna(jget_str(ev, "level")),
                                         jget_u64(ev, "seq"), jget_u64(ev, "missed"), line);
        if (streq(kind, IDL_EVENT_KIND_NAME(REMOVED)))
                s->exit_code = 0;
        else if (++s->received == s->o->count)
                s->exit_code = 0;
        return 0;
}

/* Read what is there and handle each whole message; -ECONNRESET when the daemon hung up. */
static int stream_read(LevelStream *s) {
        size_t start = 0;
        ssize_t n;
        char *end;

        n = recv(s->fd, s->buf + s->len, sizeof(s->buf) - s->len, MSG_DONTWAIT);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        if (n == 0)
                return -ECONNRESET;
        s->len += (size_t) n;
        /* Every whole message first, then what is left of the next one to the front, once: moved over
         * itself only when it is longer than what was consumed. */
        while (s->exit_code < 0 && (end = memchr(s->buf + start, 0, s->len - start))) {
                int r = stream_message(s, s->buf + start);

                if (r < 0)
                        return r;
                start = (size_t) (end - s->buf) + 1;
        }
        if (start > 0) {
                memmove(s->buf, s->buf + start, s->len - start);
                s->len -= start;
        }
        return s->len == sizeof(s->buf) ? -EMSGSIZE : 0;
}

/* Connect again after a pause that grows up to RETRY_MAX_USEC. */
static void stream_retry(LevelStream *s) {
        stream_close(s);
        s->retry_at = now_usec(CLOCK_MONOTONIC) + s->retry_usec;
        s->retry_usec = MIN(s->retry_usec * 2, RETRY_MAX_USEC);
}

/* A connect that is due; returns 0, or the exit status when the watch cannot go on. */
static int stream_reconnect(LevelStream *s) {
        int r;

        if (s->fd >= 0 || now_usec(CLOCK_MONOTONIC) < s->retry_at)
                return 0;
        r = stream_connect(s);
        if (r >= 0) {
                s->retry_at = 0;
                if (s->lost && arg_json)
                        printf("{\"kind\":\"reconnected\"}\n");
                else if (s->lost)
                        fprintf(stderr, "pressurectl: reconnected to the daemon; events may have been missed\n");
                fflush(stdout);
                s->lost = false;
                return 0;
        }
        /* At the start the daemon must be there, unless --wait and it is only not running yet. */
        if (!s->lost && (!s->o->wait_for_daemon || (r != -ENOENT && r != -ECONNREFUSED)))
                return report_error(s->client, r, "watch", NULL);
        stream_retry(s);
        return 0;
}

/* Wait for the stream, the hook or the next connect, at most @left microseconds, and handle what came. */
static int stream_poll(LevelStream *s, uint64_t left) {
        struct pollfd p[2] = {
                { .fd = s->fd, .events = POLLIN },
                { .fd = s->o->hook ? hook_get_fd(s->o->hook) : -1, .events = POLLIN },
        };
        int ms, r;

        if (s->fd < 0)
                left = MIN(left, s->retry_at > now_usec(CLOCK_MONOTONIC) ? s->retry_at - now_usec(CLOCK_MONOTONIC) : 0);
        if (s->o->hook)
                left = MIN(left, hook_get_timeout(s->o->hook));
        ms = left == PRESSURE_TIMEOUT_INFINITE ? -1 : (int) MIN((left + USEC_PER_MSEC - 1) / USEC_PER_MSEC, (uint64_t) INT_MAX);
        if (poll(p, ELEMENTSOF(p), ms) < 0 && errno != EINTR)
                return -errno;
        if (s->o->hook)
                hook_process(s->o->hook);
        if (s->fd < 0 || !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                return 0;
        r = stream_read(s);
        if (r == -ECONNRESET || r == -EPIPE) {
                /* The daemon went away after the stream was set up: said once it serves again. */
                s->lost = true;
                stream_retry(s);
        }
        else if (r < 0)
                return r;
        return 0;
}

int watch_levels_run(pressure_client *c, const LevelWatchOptions *o) {
        LevelStream *s = calloc(1, sizeof(LevelStream));
        int r = 0;

        if (!s)
                return cli_fail("watch", -ENOMEM, "%s", strerror(ENOMEM));
        *s = (LevelStream) { .o = o, .client = c, .socket = pressure_client_get_socket(c), .fd = -1,
                             .retry_usec = RETRY_FIRST_USEC, .exit_code = -1 };
        while (s->exit_code < 0) {
                uint64_t now = now_usec(CLOCK_MONOTONIC), left = PRESSURE_TIMEOUT_INFINITE;

                if (o->deadline != PRESSURE_TIMEOUT_INFINITE) {
                        if (now >= o->deadline) {
                                s->exit_code = error_report_timeout(stderr, arg_json, "watch", s->received);
                                break;
                        }
                        left = o->deadline - now;
                }
                r = stream_reconnect(s);
                if (r != 0) {
                        s->exit_code = r;
                        break;
                }
                r = stream_poll(s, left);
                if (r < 0)
                        s->exit_code = error_report(stderr, arg_json, "watch", s->socket, r, NULL, NULL);
        }
        r = s->exit_code;
        stream_close(s);
        free(s);
        return r;
}
