/* SPDX-License-Identifier: MIT */
/*
 * Tests for the Prometheus module: the exposition writers byte for byte,
 * and the HTTP endpoint served on loopback by an in-process event loop and
 * fetched with plain sockets (status codes, content type, caps, a stalled
 * client not blocking others).
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "log.h"
#include "metrics.h"
#include "test-capture.h"
#include "tests.h"

static void test_parse_listen(void) {
        static const char *const bad[] = {
                "", "127.0.0.1", ":80", "127.0.0.1:", "127.0.0.1:65536", "localhost:80",
                "[::1]80", "::1:80", "[::1]:", "127.0.0.1:+8", "127.0.0.1:8x", "[127.0.0.1]:80",
                "1.2.3:80", "[::1:80",
        };
        struct sockaddr_storage ss = {};
        socklen_t len = 0;

        ASSERT_OK(metrics_parse_listen("127.0.0.1:9100", &ss, &len));
        ASSERT_EQ(ss.ss_family, AF_INET);
        ASSERT_EQ(len, sizeof(struct sockaddr_in));
        ASSERT_EQ(ntohs(((struct sockaddr_in *) &ss)->sin_port), 9100);
        ASSERT_EQ(ntohl(((struct sockaddr_in *) &ss)->sin_addr.s_addr), INADDR_LOOPBACK);

        ASSERT_OK(metrics_parse_listen("[::1]:0", &ss, &len));
        ASSERT_EQ(ss.ss_family, AF_INET6);
        ASSERT_EQ(len, sizeof(struct sockaddr_in6));
        ASSERT_EQ(ntohs(((struct sockaddr_in6 *) &ss)->sin6_port), 0);
        ASSERT_TRUE(IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *) &ss)->sin6_addr));

        ASSERT_OK(metrics_parse_listen("0.0.0.0:65535", &ss, &len));
        ASSERT_EQ(ntohs(((struct sockaddr_in *) &ss)->sin_port), 65535);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ss.ss_family = AF_UNIX;
                len = 7;
                if (metrics_parse_listen(bad[i], &ss, &len) != -EINVAL)
                        TEST_FAIL("'%s' was accepted", bad[i]);
                /* Out-parameters untouched on failure. */
                ASSERT_EQ(ss.ss_family, AF_UNIX);
                ASSERT_EQ(len, 7);
        }
        ASSERT_ERR(metrics_parse_listen(NULL, &ss, &len), EINVAL);
}

static void test_header_and_samples(void) {
        struct evbuffer *b = evbuffer_new();
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *s3 = NULL;

        ASSERT_TRUE(b);

        metrics_write_header(b, "pressured_x_total", "counter", "Back\\slash,\nnewline and \"quotes\".");
        s1 = take_string(b);
        ASSERT_STREQ(s1, "# HELP pressured_x_total Back\\\\slash,\\nnewline and \"quotes\".\n"
                         "# TYPE pressured_x_total counter\n");

        metrics_write_sample(b, "m", (MetricsLabel[]) { { "a", "x\"y" }, { "b", "back\\slash\nnl" } }, 2, 1.5);
        metrics_write_sample(b, "m", NULL, 0, 0.1);
        metrics_write_sample(b, "m", (MetricsLabel[]) { { "e", "" } }, 1, INFINITY);
        metrics_write_sample(b, "m", NULL, 0, -INFINITY);
        metrics_write_sample(b, "m", NULL, 0, NAN);
        metrics_write_sample(b, "m", NULL, 0, 1e300);
        metrics_write_sample(b, "m", NULL, 0, 1.0 / 3.0);
        s2 = take_string(b);
        ASSERT_STREQ(s2, "m{a=\"x\\\"y\",b=\"back\\\\slash\\nnl\"} 1.5\n"
                         "m 0.1\n"
                         "m{e=\"\"} +Inf\n"
                         "m -Inf\n"
                         "m NaN\n"
                         "m 1e+300\n"
                         "m 0.33333333333333331\n");

        metrics_write_sample_u64(b, "big", (MetricsLabel[]) { { "k", "v" } }, 1, UINT64_MAX);
        metrics_write_sample_u64(b, "zero", NULL, 0, 0);
        s3 = take_string(b);
        ASSERT_STREQ(s3, "big{k=\"v\"} 18446744073709551615\nzero 0\n");

        evbuffer_free(b);
}

static void test_histogram(void) {
        static const uint64_t observations[] = { 0, 5, 10, 11, 1000, 25000, 25001, 1000000 };
        struct evbuffer *b = evbuffer_new();
        MetricsHistogram h = {};
        _cleanup_free_ char *s = NULL, *e = NULL;

        ASSERT_TRUE(b);

        /* Empty histogram: all zero, +Inf still present. */
        metrics_histogram_write(b, "lat_seconds", "Latency.", &h);
        e = take_string(b);
        ASSERT_TRUE(strstr(e, "lat_seconds_bucket{le=\"+Inf\"} 0\n"));
        ASSERT_TRUE(strstr(e, "lat_seconds_sum 0\n"));
        ASSERT_TRUE(strstr(e, "lat_seconds_count 0\n"));

        for (size_t i = 0; i < ELEMENTSOF(observations); i++)
                metrics_histogram_observe(&h, observations[i]);
        ASSERT_U64_EQ(h.count, ELEMENTSOF(observations));
        ASSERT_U64_EQ(h.sum_usec, 1051027);

        metrics_histogram_write(b, "lat_seconds", "Latency.", &h);
        s = take_string(b);
        ASSERT_STREQ(s,
                     "# HELP lat_seconds Latency.\n"
                     "# TYPE lat_seconds histogram\n"
                     "lat_seconds_bucket{le=\"0.00001\"} 3\n"
                     "lat_seconds_bucket{le=\"0.000025\"} 4\n"
                     "lat_seconds_bucket{le=\"0.00005\"} 4\n"
                     "lat_seconds_bucket{le=\"0.0001\"} 4\n"
                     "lat_seconds_bucket{le=\"0.00025\"} 4\n"
                     "lat_seconds_bucket{le=\"0.0005\"} 4\n"
                     "lat_seconds_bucket{le=\"0.001\"} 5\n"
                     "lat_seconds_bucket{le=\"0.0025\"} 5\n"
                     "lat_seconds_bucket{le=\"0.005\"} 5\n"
                     "lat_seconds_bucket{le=\"0.01\"} 5\n"
                     "lat_seconds_bucket{le=\"0.025\"} 6\n"
                     "lat_seconds_bucket{le=\"+Inf\"} 8\n"
                     "lat_seconds_sum 1.051027\n"
                     "lat_seconds_count 8\n");

        evbuffer_free(b);
}

static uint64_t sample_value(const char *text, const char *name) {
        _cleanup_free_ char *needle = NULL;
        const char *p;
        uint64_t v = 0;

        ASSERT_TRUE(asprintf(&needle, "\n%s ", name) > 0);
        p = strstr(text, needle);
        if (!p)
                TEST_FAIL("no sample %s in:\n%s", name, text);
        ASSERT_EQ(sscanf(p + strlen(needle), "%" SCNu64, &v), 1);
        return v;
}

static void test_process(void) {
        struct evbuffer *b = evbuffer_new();
        _cleanup_free_ char *s = NULL;
        _cleanup_close_ int extra = -1;
        uint64_t fds, fds2;

        ASSERT_TRUE(b);
        metrics_write_process(b);
        s = take_string(b);
        ASSERT_TRUE(strstr(s, "# TYPE pressured_resident_memory_bytes gauge\n"));
        ASSERT_TRUE(strstr(s, "# TYPE pressured_open_fds gauge\n"));
        ASSERT_TRUE(sample_value(s, "pressured_resident_memory_bytes") > 4096);
        fds = sample_value(s, "pressured_open_fds");
        ASSERT_TRUE(fds >= 3);

        /* One more open fd shows up as exactly one more. */
        extra = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(extra >= 0);
        free(s);
        metrics_write_process(b);
        s = take_string(b);
        fds2 = sample_value(s, "pressured_open_fds");
        ASSERT_U64_EQ(fds2, fds + 1);

        evbuffer_free(b);
}

static unsigned scrapes;

static void collect(struct evbuffer *out, struct evbuffer *cgroups, void *userdata) {
        scrapes++;
        metrics_write_header(out, "test_up", "gauge", "Test gauge.");
        metrics_write_sample_u64(out, "test_up", (MetricsLabel[]) { { "who", userdata } }, 1, 1);
}

static int connect_port(uint16_t port) {
        struct sockaddr_in sa = {
                .sin_family = AF_INET,
                .sin_port = htons(port),
                .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
        };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ASSERT_TRUE(fd >= 0);
        /* Completes in the kernel's backlog without the server's accept(). */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                TEST_FAIL("connect to port %u: %s", port, strerror(errno));
        return fd;
}

static void send_all(int fd, const char *data, size_t len) {
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

                if (n < 0)
                        TEST_FAIL("send: %s", strerror(errno));
                data += n;
                len -= (size_t) n;
        }
}

/*
 * Read the response on @fd until the server closes it, turning the event
 * loop in between. Gives up after a generous number of turns, so a hang
 * shows as a failure rather than a stuck test.
 */
static char *read_response(struct event_base *base, int fd) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0;

        buf = calloc(1, 1);
        ASSERT_TRUE(buf);
        for (unsigned turn = 0; turn < 5000; turn++) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char chunk[4096];
                ssize_t n;

                ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
                if (poll(&p, 1, 2) <= 0)
                        continue;
                n = recv(fd, chunk, sizeof(chunk), 0);
                if (n < 0 && errno == ECONNRESET)
                        return TAKE_PTR(buf);
                ASSERT_TRUE(n >= 0);
                if (n == 0)
                        return TAKE_PTR(buf);
                buf = realloc(buf, size + (size_t) n + 1);
                ASSERT_TRUE(buf);
                memcpy(buf + size, chunk, (size_t) n);
                size += (size_t) n;
                buf[size] = 0;
        }
        TEST_FAIL("no complete response, got so far: %s", buf);
}

/* A TCP port of @family's loopback that nobody listens on right now; 0 if there is none. */
static uint16_t free_port(int family) {
        struct sockaddr_in6 sa6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        struct sockaddr_in sa4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        struct sockaddr_storage ss = {};
        socklen_t len = sizeof(ss);
        _cleanup_close_ int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || bind(fd, family == AF_INET6 ? (struct sockaddr *) &sa6 : (struct sockaddr *) &sa4,
                           family == AF_INET6 ? sizeof(sa6) : sizeof(sa4)) < 0 ||
            getsockname(fd, (struct sockaddr *) &ss, &len) < 0)
                return 0;
        return ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *) &ss)->sin6_port
                                        : ((struct sockaddr_in *) &ss)->sin_port);
}

static char *fetch(struct event_base *base, uint16_t port, const char *request) {
        _cleanup_close_ int fd = connect_port(port);

        send_all(fd, request, strlen(request));
        return read_response(base, fd);
}

static int status_of(const char *response) {
        int code = -1;

        if (sscanf(response, "HTTP/1.%*d %d", &code) != 1)
                TEST_FAIL("not an HTTP response: '%s'", response);
        return code;
}

static void test_server(void) {
        struct event_base *base = event_base_new();
        MetricsServer *s = NULL, *s2 = (MetricsServer *) 0x1;
        _cleanup_free_ char *ok = NULL, *missing = NULL, *post = NULL, *big = NULL, *after = NULL,
                            *stalled_ok = NULL, *addr = NULL, *huge = NULL, *trace = NULL;
        _cleanup_close_ int stalled = -1;
        const char *body;
        uint16_t port = 0;
        unsigned before;
        size_t n;

        ASSERT_TRUE(base);
        port = free_port(AF_INET);
        ASSERT_TRUE(port > 0);
        ASSERT_TRUE(asprintf(&addr, "127.0.0.1:%u", (unsigned) port) > 0);
        ASSERT_OK(metrics_server_new(base, addr, NULL, collect, (void *) "unit", &s));
        ASSERT_TRUE(s);

        /* 200 with the exposition content type and the collected body. */
        ok = fetch(base, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(ok), 200);
        ASSERT_TRUE(strstr(ok, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
        body = strstr(ok, "\r\n\r\n");
        ASSERT_TRUE(body);
        ASSERT_STREQ(body + 4, "# HELP test_up Test gauge.\n# TYPE test_up gauge\ntest_up{who=\"unit\"} 1\n");
        ASSERT_EQ(scrapes, 1);

        /* A query string does not change the path. */
        free(ok);
        ok = fetch(base, port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
        ASSERT_EQ(status_of(ok), 200);
        ASSERT_EQ(scrapes, 2);

        /* Other paths: 404, and the collector is not run. */
        missing = fetch(base, port, "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(missing), 404);
        free(missing);
        missing = fetch(base, port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(missing), 404);
        free(missing);
        missing = fetch(base, port, "GET /metricsx HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(missing), 404);
        ASSERT_EQ(scrapes, 2);

        /* Other methods: 405 with Allow. */
        post = fetch(base, port, "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                 "Content-Length: 3\r\n\r\nabc");
        ASSERT_EQ(status_of(post), 405);
        ASSERT_TRUE(strstr(post, "\r\nAllow: GET\r\n"));
        free(post);
        post = fetch(base, port, "DELETE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(post), 405);
        ASSERT_EQ(scrapes, 2);
        /* Methods outside the allowed set never reach us. */
        trace = fetch(base, port, "TRACE /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(trace), 501);

        /* A body over the cap is refused before any callback. */
        ASSERT_TRUE(asprintf(&huge, "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                    "Content-Length: %d\r\n\r\n", METRICS_MAX_BODY_BYTES * 4) > 0);
        free(post);
        post = fetch(base, port, huge);
        ASSERT_EQ(status_of(post), 413);

        /* Headers over the cap: refused, never answered with 200. */
        n = METRICS_MAX_HEADERS_BYTES * 2;
        big = malloc(n + 128);
        ASSERT_TRUE(big);
        strcpy(big, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: ");
        memset(big + strlen(big), 'a', n);
        big[strlen("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: ") + n] = 0;
        strcat(big, "\r\nConnection: close\r\n\r\n");
        after = fetch(base, port, big);
        /* libevent 2.1 answers 400; a later one may say 413 or 431. */
        ASSERT_TRUE(status_of(after) == 400 || status_of(after) == 413 || status_of(after) == 431);
        ASSERT_EQ(scrapes, 2);

        /* A client stuck halfway through its request does not block others. */
        stalled = connect_port(port);
        send_all(stalled, "GET /metr", 9);
        for (unsigned i = 0; i < 20; i++)
                ASSERT_TRUE(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
        before = scrapes;
        stalled_ok = fetch(base, port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(status_of(stalled_ok), 200);
        ASSERT_EQ(scrapes, before + 1);

        /* The port is taken: reported as -EADDRINUSE, out-parameter untouched. */
        ASSERT_ERR(metrics_server_new(base, addr, NULL, collect, NULL, &s2), EADDRINUSE);
        ASSERT_TRUE(s2 == (MetricsServer *) 0x1);
        ASSERT_ERR(metrics_server_new(base, "nonsense", NULL, collect, NULL, &s2), EINVAL);
        ASSERT_TRUE(s2 == (MetricsServer *) 0x1);

        /* Freeing with a connection still open is clean (valgrind checks the rest). */
        ASSERT_TRUE(metrics_server_free(s) == NULL);
        ASSERT_TRUE(metrics_server_free(NULL) == NULL);

        /* The port is free again. */
        s = NULL;
        ASSERT_OK(metrics_server_new(base, addr, NULL, collect, NULL, &s));
        metrics_server_free(s);

        event_base_free(base);
}

static void test_server_ipv6(void) {
        struct event_base *base = event_base_new();
        _cleanup_close_ int probe = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
        MetricsServer *s = NULL;
        char addr[64];
        uint16_t port = 0;

        ASSERT_TRUE(base);
        if (probe < 0 || bind(probe, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                test_skip_part("no IPv6 loopback here (::1 cannot be bound): the IPv6 bind check did not run");
                event_base_free(base);
                return;
        }
        port = free_port(AF_INET6);
        ASSERT_TRUE(port > 0);
        snprintf(addr, sizeof(addr), "[::1]:%u", (unsigned) port);
        ASSERT_OK(metrics_server_new(base, addr, NULL, collect, NULL, &s));
        metrics_server_free(s);
        event_base_free(base);
}

int main(void) {
        log_set_max_level(LOG_WARNING);

        test_parse_listen();
        test_header_and_samples();
        test_histogram();
        test_process();
        test_server();
        test_server_ipv6();
        return test_finish();
}
