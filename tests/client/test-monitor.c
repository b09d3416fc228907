/* SPDX-License-Identifier: MIT */
/*
 * libpressure's level streams, pressure_monitor on an sd-event loop, and
 * GetHeadroom(), against a scripted varlink server in a child process (one
 * grandchild per connection, so that a held stream blocks nothing). The
 * server's answer to Subscribe {"levels": true} is chosen by the cgroup:
 *
 *   /steps         normal, low, medium (missed 2), critical (headroom and
 *                  reclaim target null), then "removed"
 *   /hold          low, kept open until the server goes
 *   /old           InvalidParameter "levels", as a daemon before 0.4 answers
 *   /bad-level     a level this version does not know
 *   /bad-kind      a "subscribed" event where a level event belongs
 *   /bad-json      bytes that are no JSON
 *   /bad-headroom  a headroom that is no integer
 *   /bad-after     normal, then a level event without a level
 *   /prekill       normal, an event of a kind this version does not know,
 *                  warnings before a kill 21, 22 (deadline in a minute) and
 *                  23 (deadline passed), then kept open
 *   /prekill-many  normal, then 65 warnings 100 to 164, kept open
 *
 * to GetHeadroom: /full (every figure), /unlimited (the nulls),
 * /missing (NoSuchCgroup), /bad (no usage_bytes), /old (MethodNotFound);
 * and to AcknowledgePrekill with {}, writing the id as a line to the file
 * acks_path.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <systemd/sd-event.h>

#include "pressure.h"
#include "tests.h"
#include "util.h"

#define DEADLINE_USEC (20 * 1000000ULL)

static char socket_path[108], acks_path[108];

/* ---- The fake server ------------------------------------------------------------ */

static void send_json(int fd, json_t *msg) {
        char *text = json_dumps(msg, JSON_COMPACT);

        if (text) {
                (void) !send(fd, text, strlen(text) + 1, MSG_NOSIGNAL);
                free(text);
        }
        json_decref(msg);
}

static void send_level(int fd, const char *cgroup, json_t *fields, bool continues) {
        json_t *event = json_pack("{s:s, s:s, s:I, s:I}", "kind", "level", "cgroup", cgroup,
                                  "time_us", (json_int_t) 1700000000000000, "monotonic_us", (json_int_t) 5000000);

        json_object_update(event, fields);
        json_decref(fields);
        send_json(fd, json_pack("{s:{s:o}, s:b}", "parameters", "event", event, "continues", continues));
}

static void send_error(int fd, const char *name, json_t *params) {
        send_json(fd, json_pack("{s:s, s:o}", "error", name, "parameters", params));
}

static json_t *read_request(int fd) {
        char buf[4096];
        size_t n = 0;

        while (n < sizeof(buf)) {
                ssize_t k = recv(fd, buf + n, 1, 0);
                if (k <= 0)
                        return NULL;
                if (buf[n] == 0)
                        return json_loads(buf, 0, NULL);
                n++;
        }
        return NULL;
}

static void serve_steps(int fd) {
        send_level(fd, "/steps", json_pack("{s:s, s:I, s:i, s:i, s:i}", "level", "normal",
                   "headroom_bytes", (json_int_t) 1 << 30, "reclaim_target_bytes", 0, "seq", 1, "missed", 0), true);
        send_level(fd, "/steps", json_pack("{s:s, s:I, s:I, s:i, s:i}", "level", "low",
                   "headroom_bytes", (json_int_t) 1 << 20, "reclaim_target_bytes", (json_int_t) 1 << 22,
                   "seq", 2, "missed", 0), true);
        send_level(fd, "/steps", json_pack("{s:s, s:i, s:I, s:i, s:i}", "level", "medium",
                   "headroom_bytes", 4096, "reclaim_target_bytes", (json_int_t) 1 << 24, "seq", 3, "missed", 2),
                   true);
        send_level(fd, "/steps", json_pack("{s:s, s:n, s:n, s:i, s:i}", "level", "critical",
                   "headroom_bytes", "reclaim_target_bytes", "seq", 4, "missed", 0), true);
        send_json(fd, json_pack("{s:{s:{s:s, s:s}}}", "parameters", "event", "kind", "removed", "cgroup", "/steps"));
}

static void send_prekill(int fd, uint64_t id, uint64_t deadline_us, uint64_t seq) {
        json_t *event = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:i, s:I, s:I}", "kind", "prekill",
                                  "cgroup", "/prekill/worker.service", "by", "systemd-oomd", "id", (json_int_t) id,
                                  "deadline_us", (json_int_t) deadline_us, "seq", (json_int_t) seq, "missed", 0,
                                  "time_us", (json_int_t) 1700000000000000, "monotonic_us", (json_int_t) 5000000);

        send_json(fd, json_pack("{s:{s:o}, s:b}", "parameters", "event", event, "continues", 1));
}

static void serve_prekill(int fd) {
        uint64_t later = now_usec(CLOCK_MONOTONIC) + 60 * 1000000ULL;

        send_level(fd, "/prekill", json_pack("{s:s, s:i, s:i, s:i, s:i}", "level", "normal",
                   "headroom_bytes", 4096, "reclaim_target_bytes", 0, "seq", 1, "missed", 0), true);
        send_json(fd, json_pack("{s:{s:{s:s, s:s, s:i}}, s:b}", "parameters", "event", "kind", "no-such-kind",
                                "cgroup", "/prekill", "seq", 2, "continues", 1));
        send_prekill(fd, 21, later, 3);
        send_prekill(fd, 22, later, 4);
        send_prekill(fd, 23, 1, 5);
        (void) read_request(fd); /* until the client or the server goes */
}

/* AcknowledgePrekill: the id goes to acks_path, one line each. */
static void serve_acknowledge(int fd, json_t *params) {
        FILE *f = fopen(acks_path, "ae");

        if (!f)
                _exit(1);
        fprintf(f, "%" JSON_INTEGER_FORMAT "\n", json_integer_value(json_object_get(params, "id")));
        fclose(f);
        send_json(fd, json_pack("{s:{}}", "parameters"));
}

/* One warning more than a monitor keeps for later. */
static void serve_prekill_many(int fd) {
        uint64_t later = now_usec(CLOCK_MONOTONIC) + 60 * 1000000ULL;

        send_level(fd, "/prekill-many", json_pack("{s:s, s:i, s:i}", "level", "normal", "seq", 1, "missed", 0), true);
        for (uint64_t id = 100; id <= 164; id++)
                send_prekill(fd, id, later, id - 98);
        (void) read_request(fd);
}

static void serve_subscribe(int fd, const char *cgroup) {
        if (streq(cgroup, "/prekill"))
                serve_prekill(fd);
        else if (streq(cgroup, "/prekill-many"))
                serve_prekill_many(fd);
        else if (streq(cgroup, "/steps"))
                serve_steps(fd);
        else if (streq(cgroup, "/hold")) {
                send_level(fd, cgroup, json_pack("{s:s, s:i, s:i, s:i, s:i}", "level", "low",
                           "headroom_bytes", 4096, "reclaim_target_bytes", 8192, "seq", 1, "missed", 0), true);
                (void) read_request(fd); /* until the client or the server goes */
        } else if (streq(cgroup, "/old"))
                send_error(fd, "org.varlink.service.InvalidParameter", json_pack("{s:s}", "parameter", "levels"));
        else if (streq(cgroup, "/bad-level"))
                send_level(fd, cgroup, json_pack("{s:s, s:i, s:i}", "level", "extreme", "seq", 1, "missed", 0), true);
        else if (streq(cgroup, "/bad-kind"))
                send_json(fd, json_pack("{s:{s:{s:s, s:s}}, s:b}", "parameters", "event", "kind", "subscribed",
                                        "cgroup", cgroup, "continues", 1));
        else if (streq(cgroup, "/bad-json"))
                (void) !send(fd, "{\"parameters\": {\"event\": [1,", 29, MSG_NOSIGNAL);
        else if (streq(cgroup, "/bad-headroom"))
                send_level(fd, cgroup, json_pack("{s:s, s:s, s:i, s:i}", "level", "low",
                           "headroom_bytes", "lots", "seq", 1, "missed", 0), true);
        else if (streq(cgroup, "/bad-after")) {
                send_level(fd, cgroup, json_pack("{s:s, s:i, s:i}", "level", "normal", "seq", 1, "missed", 0), true);
                send_level(fd, cgroup, json_pack("{s:i, s:i}", "seq", 2, "missed", 0), true);
        }
}

static void serve_headroom(int fd, const char *cgroup) {
        if (streq(cgroup, "/full"))
                send_json(fd, json_pack("{s:{s:i, s:i, s:s, s:i, s:i}}", "parameters", "usage_bytes", 100,
                                        "limit_bytes", 1000, "limiting_cgroup", "/a", "headroom_bytes", 900,
                                        "reclaim_target_bytes", 50));
        else if (streq(cgroup, "/unlimited"))
                send_json(fd, json_pack("{s:{s:i, s:n, s:n, s:n, s:n}}", "parameters", "usage_bytes", 100,
                                        "limit_bytes", "limiting_cgroup", "headroom_bytes", "reclaim_target_bytes"));
        else if (streq(cgroup, "/missing"))
                send_error(fd, "io.pressured.NoSuchCgroup", json_pack("{s:s}", "cgroup", cgroup));
        else if (streq(cgroup, "/bad"))
                send_json(fd, json_pack("{s:{s:i}}", "parameters", "limit_bytes", 5));
        else
                send_error(fd, "org.varlink.service.MethodNotFound",
                           json_pack("{s:s}", "method", "io.pressured.GetHeadroom"));
}

static void serve_connection(int fd) {
        json_t *req = read_request(fd);
        const char *method = json_string_value(json_object_get(req, "method"));
        json_t *params = json_object_get(req, "parameters");
        const char *cgroup = json_string_value(json_object_get(params, "cgroup"));

        if (streq_ptr(method, "io.pressured.AcknowledgePrekill")) {
                serve_acknowledge(fd, params);
                _exit(0);
        }
        if (!method || !cgroup)
                _exit(1);
        if (streq(method, "io.pressured.Subscribe")) {
                /* A level stream asks for exactly that, and for more. */
                if (!json_is_true(json_object_get(params, "levels")) || !json_is_true(json_object_get(req, "more")) ||
                    json_object_size(params) != 2)
                        _exit(1);
                serve_subscribe(fd, cgroup);
        } else if (streq(method, "io.pressured.GetHeadroom"))
                serve_headroom(fd, cgroup);
        json_decref(req);
        _exit(0);
}

static pid_t server_start(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;
        pid_t pid;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(fd >= 0);
        memcpy(sa.sun_path, socket_path, strlen(socket_path));
        ASSERT_OK(bind(fd, (struct sockaddr *) &sa, sizeof(sa)));
        ASSERT_OK(listen(fd, 64));
        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                (void) setpgid(0, 0);
                (void) signal(SIGCHLD, SIG_IGN);
                for (;;) {
                        int c = accept(fd, NULL, NULL);
                        if (c < 0)
                                continue;
                        if (fork() == 0) {
                                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                                serve_connection(c);
                        }
                        close(c);
                }
        }
        (void) setpgid(pid, pid);
        close(fd);
        return pid;
}

/* The server and its connections go, and with them the socket: as a daemon that stops. */
static void server_stop(pid_t pid) {
        ASSERT_OK(kill(-pid, SIGKILL));
        ASSERT_EQ(waitpid(pid, NULL, 0), pid);
        ASSERT_OK(unlink(socket_path));
}

/* ---- Recording handler ------------------------------------------------------------ */

typedef struct Seen {
        pressure_event_kind kind;
        pressure_level level;
        int64_t headroom, reclaim_target; /* -1 for none */
        uint64_t seq, missed;
        int error;
} Seen;

typedef struct Recorder {
        Seen seen[16];
        unsigned n;
        bool unref_at_end; /* drop the program's monitor from its handler when the stream ends */
        pressure_monitor **monitor;
} Recorder;

static int on_level(pressure_monitor *m, const pressure_event *e, void *userdata) {
        Recorder *r = userdata;
        const pressure_error *error = pressure_event_get_error(e);
        uint64_t h, t;
        Seen *x;

        ASSERT_TRUE(r->n < ELEMENTSOF(r->seen));
        x = &r->seen[r->n++];
        *x = (Seen) { .kind = pressure_event_get_kind(e), .level = pressure_event_get_level(e),
                      .headroom = pressure_event_get_headroom_bytes(e, &h) < 0 ? -1 : (int64_t) h,
                      .reclaim_target = pressure_event_get_reclaim_target_bytes(e, &t) < 0 ? -1 : (int64_t) t,
                      .seq = pressure_event_get_seq(e), .missed = pressure_event_get_missed(e),
                      .error = error ? pressure_error_get_errno(error) : 0 };
        if (x->kind == PRESSURE_EVENT_LEVEL) {
                /* The monitor's getters say what the handler was told. */
                pressure_level level;

                ASSERT_OK(pressure_monitor_get_level(m, &level));
                ASSERT_EQ(level, x->level);
                ASSERT_EQ(pressure_monitor_get_headroom_bytes(m, &h) < 0 ? -1 : (int64_t) h, x->headroom);
                ASSERT_EQ(pressure_monitor_get_reclaim_target_bytes(m, &t) < 0 ? -1 : (int64_t) t, x->reclaim_target);
        }
        ASSERT_EQ(pressure_monitor_is_active(m),
                  x->kind != PRESSURE_EVENT_REMOVED && x->kind != PRESSURE_EVENT_ERROR);
        if (!pressure_monitor_is_active(m) && r->unref_at_end)
                *r->monitor = pressure_monitor_unref(*r->monitor);
        return 0;
}

/* Run @e until @r has @n events; fail at the deadline. */
static void run_until_n(sd_event *e, Recorder *r, unsigned n) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + DEADLINE_USEC;

        while (r->n < n) {
                ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) < deadline);
                ASSERT_OK(sd_event_run(e, 100000));
        }
        ASSERT_EQ(r->n, n);
}

static pressure_monitor *monitor_new(const char *cgroup, Recorder *r) {
        pressure_monitor *m;

        ASSERT_OK(pressure_monitor_new(&m, cgroup, on_level, r));
        ASSERT_OK(pressure_client_set_socket(pressure_monitor_get_client(m), socket_path));
        return m;
}

static void assert_level(const Seen *x, pressure_level level, int64_t headroom, int64_t reclaim_target, uint64_t seq,
                         uint64_t missed) {
        ASSERT_EQ(x->kind, PRESSURE_EVENT_LEVEL);
        ASSERT_EQ(x->level, level);
        ASSERT_EQ(x->headroom, headroom);
        ASSERT_EQ(x->reclaim_target, reclaim_target);
        ASSERT_U64_EQ(x->seq, seq);
        ASSERT_U64_EQ(x->missed, missed);
}

/* ---- Tests ------------------------------------------------------------------------- */

/* First the level now, then each change with what was folded, then the end; freed from its handler. */
static void test_steps(sd_event *e) {
        Recorder r = {};
        pressure_monitor *m = monitor_new("/steps", &r);
        pressure_level level;
        uint64_t x;

        r.unref_at_end = true;
        r.monitor = &m;
        ASSERT_ERR(pressure_monitor_get_level(m, &level), ENODATA);
        ASSERT_ERR(pressure_monitor_get_headroom_bytes(m, &x), ENODATA);
        ASSERT_ERR(pressure_monitor_get_reclaim_target_bytes(m, &x), ENODATA);
        ASSERT_ERR(pressure_monitor_detach_event(m), ENXIO);
        ASSERT_OK(pressure_monitor_attach_event(m, e, 0));
        ASSERT_ERR(pressure_monitor_attach_event(m, e, 0), EBUSY);
        ASSERT_ERR(pressure_monitor_start(m), EALREADY);
        run_until_n(e, &r, 5);
        assert_level(&r.seen[0], PRESSURE_LEVEL_NORMAL, 1LL << 30, 0, 1, 0);
        assert_level(&r.seen[1], PRESSURE_LEVEL_LOW, 1LL << 20, 1LL << 22, 2, 0);
        assert_level(&r.seen[2], PRESSURE_LEVEL_MEDIUM, 4096, 1LL << 24, 3, 2);
        assert_level(&r.seen[3], PRESSURE_LEVEL_CRITICAL, -1, -1, 4, 0);
        ASSERT_EQ(r.seen[4].kind, PRESSURE_EVENT_REMOVED);
        ASSERT_TRUE(m == NULL);
}

/* Without sd-event: poll() the fd and process, as a GLib or libevent program does. */
static void test_poll(void) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        Recorder r = {};
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + DEADLINE_USEC;

        m = monitor_new("/steps", &r);
        ASSERT_OK(pressure_monitor_start(m));
        while (r.n < 5) {
                struct pollfd p = { .fd = pressure_monitor_get_fd(m), .events = POLLIN };

                ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) < deadline);
                ASSERT_OK(poll(&p, 1, 100));
                ASSERT_OK(pressure_monitor_process(m));
        }
        assert_level(&r.seen[2], PRESSURE_LEVEL_MEDIUM, 4096, 1LL << 24, 3, 2);
        ASSERT_EQ(r.seen[4].kind, PRESSURE_EVENT_REMOVED);
        ASSERT_EQ(pressure_monitor_is_active(m), 0);
}

/* A stream that ends with an error: one ERROR event with @error, nothing before it. */
static void check_error(sd_event *e, const char *cgroup, unsigned n_before, int error) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        Recorder r = {};

        m = monitor_new(cgroup, &r);
        ASSERT_OK(pressure_monitor_attach_event(m, e, 0));
        run_until_n(e, &r, n_before + 1);
        ASSERT_EQ(r.seen[n_before].kind, PRESSURE_EVENT_ERROR);
        ASSERT_EQ(r.seen[n_before].error, error);
        ASSERT_EQ(pressure_monitor_is_active(m), 0);
        ASSERT_EQ(pressure_monitor_get_reconnects(m), 0);
}

static void test_errors(sd_event *e) {
        check_error(e, "/old", 0, -EOPNOTSUPP);
        check_error(e, "/bad-level", 0, -EBADMSG);
        check_error(e, "/bad-kind", 0, -EBADMSG);
        check_error(e, "/bad-json", 0, -EBADMSG);
        check_error(e, "/bad-headroom", 0, -EBADMSG);
        check_error(e, "/bad-after", 1, -EBADMSG);
}

/* The pre-0.4 error keeps the daemon's name and parameters under -EOPNOTSUPP. */
static int on_old(pressure_monitor *m, const pressure_event *e, void *userdata) {
        const pressure_error *error = pressure_event_get_error(e);

        (void) m;
        ASSERT_EQ(pressure_event_get_kind(e), PRESSURE_EVENT_ERROR);
        ASSERT_STREQ(pressure_error_get_name(error), "org.varlink.service.InvalidParameter");
        ASSERT_STREQ(pressure_error_get_parameter_string(error, "parameter"), "levels");
        ASSERT_EQ(pressure_error_get_errno(error), -EOPNOTSUPP);
        ASSERT_STREQ(pressure_error_get_message(error), "pressured is older than 0.4: it has no level streams");
        (*(unsigned *) userdata)++;
        return -EL2HLT; /* a handler's failure is pressure_monitor_process()'s */
}

static void test_old_daemon_error(void) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        unsigned n = 0;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + DEADLINE_USEC;

        ASSERT_OK(pressure_monitor_new(&m, "/old", on_old, &n));
        ASSERT_OK(pressure_client_set_socket(pressure_monitor_get_client(m), socket_path));
        ASSERT_OK(pressure_monitor_start(m));
        while (n == 0) {
                struct pollfd p = { .fd = pressure_monitor_get_fd(m), .events = POLLIN };
                int r;

                ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) < deadline);
                ASSERT_OK(poll(&p, 1, 100));
                r = pressure_monitor_process(m);
                ASSERT_TRUE(r >= 0 || r == -EL2HLT);
        }
        ASSERT_EQ(n, 1);
}

/* Run @e for @usec and count the iterations that dispatched something. */
static unsigned count_wakeups(sd_event *e, Recorder *r, uint64_t usec) {
        uint64_t end = now_usec(CLOCK_MONOTONIC) + usec;
        unsigned n = 0, events = r->n;

        for (uint64_t now = now_usec(CLOCK_MONOTONIC); now < end; now = now_usec(CLOCK_MONOTONIC)) {
                int k = sd_event_run(e, end - now);

                ASSERT_OK(k);
                n += k > 0;
        }
        ASSERT_EQ(r->n, events); /* nothing to tell while the daemon is away */
        return n;
}

/*
 * Started before the daemon, the monitor waits for it; when the daemon goes
 * it retries with the backoff, the loop sleeping in between (a handful of
 * wakeups in 3 s, not a spin); when it is back, RECONNECTED and the level.
 */
static void test_reconnect(sd_event *e, pid_t *server) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        Recorder r = {};
        unsigned n;

        server_stop(*server);
        m = monitor_new("/hold", &r);
        ASSERT_OK(pressure_monitor_attach_event(m, e, 0));
        n = count_wakeups(e, &r, 3000000);
        ASSERT_TRUE(n >= 2 && n <= 12);
        *server = server_start();
        run_until_n(e, &r, 1);
        assert_level(&r.seen[0], PRESSURE_LEVEL_LOW, 4096, 8192, 1, 0);
        ASSERT_EQ(pressure_monitor_get_reconnects(m), 0);

        server_stop(*server);
        n = count_wakeups(e, &r, 3000000);
        ASSERT_TRUE(n >= 2 && n <= 12);
        ASSERT_EQ(pressure_monitor_is_active(m), 1);
        *server = server_start();
        run_until_n(e, &r, 3);
        ASSERT_EQ(r.seen[1].kind, PRESSURE_EVENT_RECONNECTED);
        assert_level(&r.seen[2], PRESSURE_LEVEL_LOW, 4096, 8192, 1, 0);
        ASSERT_EQ(pressure_monitor_get_reconnects(m), 1);
        ASSERT_OK(pressure_monitor_detach_event(m));
        ASSERT_ERR(pressure_monitor_detach_event(m), ENXIO);
}

static void test_headroom(void) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_(pressure_headroom_unrefp) pressure_headroom *h = NULL, *u = NULL;
        pressure_error *error = NULL;
        uint64_t x;

        ASSERT_OK(pressure_client_new(&c));
        ASSERT_OK(pressure_client_set_socket(c, socket_path));
        ASSERT_OK(pressure_client_get_headroom(c, "/full", &h, NULL));
        ASSERT_U64_EQ(pressure_headroom_get_usage_bytes(h), 100);
        ASSERT_OK(pressure_headroom_get_limit_bytes(h, &x));
        ASSERT_U64_EQ(x, 1000);
        ASSERT_STREQ(pressure_headroom_get_limiting_cgroup(h), "/a");
        ASSERT_OK(pressure_headroom_get_headroom_bytes(h, &x));
        ASSERT_U64_EQ(x, 900);
        ASSERT_OK(pressure_headroom_get_reclaim_target_bytes(h, &x));
        ASSERT_U64_EQ(x, 50);
        ASSERT_TRUE(strstr(pressure_headroom_get_json(h), "\"limiting_cgroup\":\"/a\""));

        ASSERT_OK(pressure_client_get_headroom(c, "/unlimited", &u, NULL));
        ASSERT_U64_EQ(pressure_headroom_get_usage_bytes(u), 100);
        ASSERT_ERR(pressure_headroom_get_limit_bytes(u, &x), ENODATA);
        ASSERT_TRUE(pressure_headroom_get_limiting_cgroup(u) == NULL);
        ASSERT_ERR(pressure_headroom_get_headroom_bytes(u, &x), ENODATA);
        ASSERT_ERR(pressure_headroom_get_reclaim_target_bytes(u, &x), ENODATA);
        ASSERT_TRUE(pressure_headroom_ref(u) == u);
        pressure_headroom_unref(u);

        ASSERT_ERR(pressure_client_get_headroom(c, "/missing", &u, &error), ENOENT);
        ASSERT_STREQ(pressure_error_get_parameter_string(error, "cgroup"), "/missing");
        error = pressure_error_free(error);
        ASSERT_ERR(pressure_client_get_headroom(c, "/bad", &u, NULL), EBADMSG);
        ASSERT_ERR(pressure_client_get_headroom(c, "/old", &u, &error), ENXIO);
        ASSERT_STREQ(pressure_error_get_name(error), "org.varlink.service.MethodNotFound");
        error = pressure_error_free(error);
        ASSERT_ERR(pressure_client_get_headroom(c, "/full", NULL, NULL), EINVAL);
        ASSERT_ERR(pressure_headroom_get_limit_bytes(NULL, &x), EINVAL);
}

typedef struct HeadroomSeen {
        unsigned n;
        int error;
        uint64_t usage;
} HeadroomSeen;

static int on_headroom(pressure_call *call, pressure_headroom *h, const pressure_error *error, void *userdata) {
        HeadroomSeen *s = userdata;

        (void) call;
        ASSERT_EQ(h == NULL, error != NULL);
        s->n++;
        s->error = error ? pressure_error_get_errno(error) : 0;
        s->usage = pressure_headroom_get_usage_bytes(h);
        return 0;
}

static void test_headroom_async(void) {
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        HeadroomSeen full = {}, missing = {}, bad = {};

        ASSERT_OK(pressure_client_new(&c));
        ASSERT_OK(pressure_client_set_socket(c, socket_path));
        ASSERT_OK(pressure_client_get_headroom_async(c, "/full", on_headroom, &full, NULL));
        ASSERT_OK(pressure_client_get_headroom_async(c, "/missing", on_headroom, &missing, NULL));
        ASSERT_OK(pressure_client_get_headroom_async(c, "/bad", on_headroom, &bad, NULL));
        ASSERT_ERR(pressure_client_get_headroom_async(c, "/full", NULL, NULL, NULL), EINVAL);
        for (unsigned i = 0; i < 200 && full.n + missing.n + bad.n < 3; i++)
                ASSERT_OK(pressure_client_wait(c, 100000));
        ASSERT_EQ(full.n, 1);
        ASSERT_U64_EQ(full.usage, 100);
        ASSERT_EQ(full.error, 0);
        ASSERT_EQ(missing.n, 1);
        ASSERT_EQ(missing.error, -ENOENT);
        ASSERT_EQ(bad.n, 1);
        ASSERT_EQ(bad.error, -EBADMSG);
}

static int compare_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* The ids acknowledged so far, in ascending order whatever the order of their calls: "21 22 ". */
static void read_acks(char buf[static 256]) {
        FILE *f = fopen(acks_path, "re");
        uint64_t ids[128];
        size_t n = 0, len = 0;

        buf[0] = 0;
        if (!f)
                return;
        while (n < ELEMENTSOF(ids) && fscanf(f, "%" SCNu64, &ids[n]) == 1)
                n++;
        fclose(f);
        qsort(ids, n, sizeof(ids[0]), compare_u64);
        for (size_t i = 0; i < n && len < 200; i++)
                len += (size_t) snprintf(buf + len, 256 - len, "%" PRIu64 " ", ids[i]);
}

/* Run @e until the server has been acknowledged @want ("21 22 "); fail at the deadline. */
static void run_until_acks(sd_event *e, const char *want) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + DEADLINE_USEC;
        char buf[256];

        for (read_acks(buf); !streq(buf, want); read_acks(buf)) {
                ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) < deadline);
                ASSERT_OK(sd_event_run(e, 20000));
        }
}

/* Acknowledge 21 at once (return 0), the others later. */
static int on_prekill(pressure_monitor *m, const pressure_event *e, void *userdata) {
        uint64_t id = 0;

        on_level(m, e, userdata);
        if (pressure_event_get_kind(e) != PRESSURE_EVENT_PREKILL)
                return 0;
        ASSERT_OK(pressure_event_get_prekill_id(e, &id));
        ASSERT_STREQ(pressure_event_get_cgroup(e), "/prekill/worker.service");
        ASSERT_STREQ(pressure_event_get_killed_by(e), "systemd-oomd");
        /* Nothing acknowledged yet: the handler's return value says when. */
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(m, id), ESRCH);
        return id == 21 ? 0 : PRESSURE_MONITOR_ACKNOWLEDGE_LATER;
}

/*
 * The warnings reach the handler (the unknown kind does not, and ends
 * nothing); returning 0 acknowledges at once, PRESSURE_MONITOR_ACKNOWLEDGE_LATER
 * when pressure_monitor_acknowledge_prekill() says so, once; a warning past
 * its deadline is not acknowledged any more.
 */
static void test_prekill(sd_event *e) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        Recorder r = {};
        char buf[256];

        ASSERT_OK(pressure_monitor_new(&m, "/prekill", on_prekill, &r));
        ASSERT_OK(pressure_client_set_socket(pressure_monitor_get_client(m), socket_path));
        ASSERT_OK(pressure_monitor_set_prekill(m, 1));
        ASSERT_OK(pressure_monitor_attach_event(m, e, 0));
        run_until_n(e, &r, 4);
        assert_level(&r.seen[0], PRESSURE_LEVEL_NORMAL, 4096, 0, 1, 0);
        for (unsigned i = 1; i < 4; i++) {
                ASSERT_EQ(r.seen[i].kind, PRESSURE_EVENT_PREKILL);
                ASSERT_U64_EQ(r.seen[i].seq, i + 2);
        }
        run_until_acks(e, "21 ");

        ASSERT_OK(pressure_monitor_acknowledge_prekill(m, 22));
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(m, 22), ESRCH);
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(m, 23), ESRCH);
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(m, 99), ESRCH);
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(NULL, 22), EINVAL);
        run_until_acks(e, "21 22 ");
        /* The stream goes on. */
        ASSERT_EQ(pressure_monitor_is_active(m), 1);
        read_acks(buf);
        ASSERT_STREQ(buf, "21 22 ");
}

/*
 * A handler of a program that did not ask for warnings (one written before
 * libpressure 1.5, which ends at a kind it does not know) never sees one:
 * the monitor acknowledges each at once.
 */
static void test_prekill_not_asked(sd_event *e) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        Recorder r = {};

        (void) unlink(acks_path);
        m = monitor_new("/prekill", &r);
        ASSERT_OK(pressure_monitor_attach_event(m, e, 0));
        run_until_acks(e, "21 22 23 ");
        ASSERT_EQ(r.n, 1);
        ASSERT_EQ(r.seen[0].kind, PRESSURE_EVENT_LEVEL);
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(m, 22), ESRCH);
        ASSERT_ERR(pressure_monitor_set_prekill(NULL, 1), EINVAL);
}

static int on_prekill_later(pressure_monitor *m, const pressure_event *e, void *userdata) {
        (void) m;
        (*(unsigned *) userdata)++;
        return pressure_event_get_kind(e) == PRESSURE_EVENT_PREKILL ? PRESSURE_MONITOR_ACKNOWLEDGE_LATER : 0;
}

/* A monitor keeps 64 warnings for later: the 65th makes it forget the oldest. */
static void test_prekill_many(sd_event *e) {
        _cleanup_(pressure_monitor_unrefp) pressure_monitor *m = NULL;
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + DEADLINE_USEC;
        unsigned n = 0;

        (void) unlink(acks_path);
        ASSERT_OK(pressure_monitor_new(&m, "/prekill-many", on_prekill_later, &n));
        ASSERT_OK(pressure_client_set_socket(pressure_monitor_get_client(m), socket_path));
        ASSERT_OK(pressure_monitor_set_prekill(m, 1));
        ASSERT_OK(pressure_monitor_attach_event(m, e, 0));
        while (n < 66) {
                ASSERT_TRUE(now_usec(CLOCK_MONOTONIC) < deadline);
                ASSERT_OK(sd_event_run(e, 100000));
        }
        ASSERT_ERR(pressure_monitor_acknowledge_prekill(m, 100), ESRCH);
        ASSERT_OK(pressure_monitor_acknowledge_prekill(m, 101));
        ASSERT_OK(pressure_monitor_acknowledge_prekill(m, 164));
        run_until_acks(e, "101 164 ");
}

static void test_arguments(void) {
        pressure_monitor *m;
        pressure_level level;

        ASSERT_ERR(pressure_monitor_new(&m, "/steps", NULL, NULL), EINVAL);
        ASSERT_ERR(pressure_monitor_new(NULL, "/steps", on_level, NULL), EINVAL);
        ASSERT_ERR(pressure_monitor_start(NULL), EINVAL);
        ASSERT_ERR(pressure_monitor_attach_event(NULL, NULL, 0), EINVAL);
        ASSERT_ERR(pressure_monitor_process(NULL), EINVAL);
        ASSERT_ERR(pressure_monitor_get_fd(NULL), EINVAL);
        ASSERT_ERR(pressure_monitor_get_level(NULL, &level), EINVAL);
        ASSERT_TRUE(pressure_monitor_get_client(NULL) == NULL);
        ASSERT_TRUE(pressure_monitor_unref(NULL) == NULL);
        ASSERT_EQ(pressure_monitor_is_active(NULL), 0);
        ASSERT_ERR(pressure_selector_set_levels(NULL), EINVAL);
}

int main(void) {
        char dir[] = "/tmp/test-monitor-XXXXXX";
        sd_event *e = NULL;
        pid_t server;

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(socket_path, sizeof(socket_path), "%s/io.pressured", dir);
        snprintf(acks_path, sizeof(acks_path), "%s/acks", dir);
        server = server_start();
        ASSERT_OK(sd_event_new(&e));

        test_arguments();
        test_steps(e);
        test_poll();
        test_errors(e);
        test_old_daemon_error();
        test_headroom();
        test_headroom_async();
        test_prekill(e);
        test_prekill_not_asked(e);
        test_prekill_many(e);
        test_reconnect(e, &server);

        sd_event_unref(e);
        server_stop(server);
        (void) unlink(acks_path);
        (void) rmdir(dir);
        printf("all monitor tests passed\n");
        return 0;
}
