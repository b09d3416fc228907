/* SPDX-License-Identifier: MIT */
/*
 * Fan-out and memory of the built daemon, measured against a floor.
 *
 * Starts the daemon on a temporary socket with limits raised, then:
 *   - memory: RSS at start, with 1,000 idle connections, with 1,000
 *     subscriptions, and after one event went to all of them;
 *   - fan-out: 1, 100, 1,000 and 4,000 subscribers ("level": "medium" on
 *     "/", one shared registration) receive injected events; each delivery's
 *     latency is the receive time (CLOCK_MONOTONIC, here) minus the event's
 *     "monotonic_us" (when the daemon accepted the injection, same clock);
 *   - floor: a forked minimal writer sends the same serialized bytes to the
 *     same number of connected Unix sockets, stamped the same way, and the
 *     same epoll reader receives them.
 * Prints tables and writes fanout.csv and memory.csv.
 *
 *   bench-fanout [--out DIR] [--daemon PATH] [--counts N,N,...]
 *                [--memory-clients N] [--quick]
 * Output directory: --out, else $PRESSURED_BENCH_OUT, else
 * $PRESSURED_BUILD_ROOT/tests/bench/out. --quick (or PRESSURED_BENCH_QUICK=1)
 * runs fewer rounds. Exits 77 when the daemon cannot serve "level" on "/".
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define CONN_BUF 4096
#define MAX_ROUND_WAIT_USEC (30 * USEC_PER_SEC)

/* One subscriber connection (to the daemon or to the floor writer). */
typedef struct Conn {
        int fd;
        size_t len;
        char buf[CONN_BUF];
} Conn;

/* What one measured configuration produced. */
typedef struct FanoutResult {
        const char *mode;           /* "daemon" or "floor" */
        unsigned subscribers;
        unsigned rounds;
        uint64_t deliveries;
        uint64_t missed;            /* deliveries that did not arrive, or reported missed */
        double p50_us, p99_us, max_us;
        double deliveries_per_sec;
        double span_p50_us;         /* accept (or first write) to last receive, per round */
        double cpu_per_delivery_us; /* on-CPU time of the daemon / the floor writer per delivery */
        double write_p50_us;        /* floor: the writer's loop over all sockets; daemon: accept
                                     * to the arrival of the Inject reply queued after the loop */
} FanoutResult;

typedef struct MemoryResult {
        const char *metric;
        double value;
        const char *unit;
} MemoryResult;

static FanoutResult results[32];
static size_t n_results;
static MemoryResult memory[16];
static size_t n_memory;

static char tmpdir[] = "/tmp/bench-fanout-XXXXXX";
static char socket_path[PATH_MAX];
static pid_t daemon_pid = -1;
static bool quick;

/* A captured daemon event, reused by the floor writer. */
static char sample[2048];
static size_t sample_len;

static uint64_t mono_usec(void) {
        return now_usec(CLOCK_MONOTONIC);
}

static double mono_usec_f(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return x < y ? -1 : x > y;
}

static double percentile(double *v, size_t n, double p) {
        size_t i;

        if (n == 0)
                return 0;
        i = (size_t) (p * (double) (n - 1) + 0.5);
        return v[i < n ? i : n - 1];
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static int connect_daemon(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (strlen(socket_path) >= sizeof(sa.sun_path)) {
                close(fd);
                return -ENAMETOOLONG;
        }
        memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int k = -errno;

                close(fd);
                return k;
        }
        return fd;
}

/* Read one NUL-terminated message from a blocking fd into @buf (buffered in @c). */
static int conn_recv_blocking(Conn *c, char *out, size_t size) {
        for (;;) {
                char *nul = memchr(c->buf, 0, c->len);

                if (nul) {
                        size_t n = (size_t) (nul - c->buf) + 1;

                        if (n > size)
                                return -EMSGSIZE;
                        memcpy(out, c->buf, n);
                        memmove(c->buf, c->buf + n, c->len - n);
                        c->len -= n;
                        return (int) n;
                }
                if (c->len == sizeof(c->buf))
                        return -EMSGSIZE;
                {
                        ssize_t k = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return -errno;
                        if (k == 0)
                                return -ECONNRESET;
                        c->len += (size_t) k;
                }
        }
}

static int call(Conn *c, const char *msg, char *reply, size_t size) {
        int k = write_all(c->fd, msg, strlen(msg) + 1);

        if (k < 0)
                return k;
        return conn_recv_blocking(c, reply, size);
}

/* A JSON integer field's value in a message, or -1. */
static int64_t json_int_field(const char *msg, const char *key) {
        char pat[64];
        const char *p;

        snprintf(pat, sizeof(pat), "\"%s\":", key);
        p = strstr(msg, pat);
        if (!p)
                return -1;
        return strtoll(p + strlen(pat), NULL, 10);
}

static int64_t daemon_status_field(Conn *ctl, const char *key) {
        char reply[16384];

        if (call(ctl, "{\"method\":\"io.pressured.GetStatus\"}", reply, sizeof(reply)) < 0)
                return -1;
        return json_int_field(reply, key);
}

/* Resident memory of @pid in KiB: VmRSS and RssAnon. */
static int proc_rss(pid_t pid, double *ret_rss, double *ret_anon) {
        char path[64], line[256];
        double rss = -1, anon = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "VmRSS:", 6) == 0)
                        rss = strtod(line + 6, NULL);
                else if (strncmp(line, "RssAnon:", 8) == 0)
                        anon = strtod(line + 8, NULL);
        }
        fclose(f);
        if (rss < 0 || anon < 0)
                return -EIO;
        *ret_rss = rss;
        *ret_anon = anon;
        return 0;
}

/* Time @pid has spent on a CPU, in ns (first field of /proc/PID/schedstat). */
static int64_t proc_cpu_ns(pid_t pid) {
        char path[64];
        long long ns = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/schedstat", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -errno;
        if (fscanf(f, "%lld", &ns) != 1)
                ns = -EIO;
        fclose(f);
        return ns;
}

/* Proportional set size of @pid in KiB (shared library pages divided among their users). */
static double proc_pss(pid_t pid) {
        char path[64], line[256];
        double pss = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Pss:", 4) == 0) {
                        pss = strtod(line + 4, NULL);
                        break;
                }
        fclose(f);
        return pss;
}

static void memory_add(const char *metric, double value, const char *unit) {
        if (n_memory < ELEMENTSOF(memory))
                memory[n_memory++] = (MemoryResult) { metric, value, unit };
}

/* Let every fd this process may need exist: the driver holds up to 2N sockets. */
static void raise_nofile(unsigned want) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return;
        if (rl.rlim_max < want) {
                struct rlimit more = { want, want };

                if (setrlimit(RLIMIT_NOFILE, &more) == 0)
                        return;
        }
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
}

static int write_config(const char *path, unsigned max_clients) {
        FILE *f = fopen(path, "we");
        struct group *g = getgrgid(getegid());

        if (!f)
                return -errno;
        /* The Medium trigger is one that ordinary pressure on a busy machine does
         * not reach, so only injected events flow; InjectGroup lets a non-root
         * run inject too. */
        fprintf(f, "[Daemon]\nLogLevel=warning\n"
                   "[Levels]\nMedium=full 2s 10s\n"
                   "[Limits]\nMaxClients=%u\nMaxClientsPerUser=%u\nIdleTimeoutSec=86400\n",
                max_clients, max_clients);
        if (geteuid() != 0 && g)
                fprintf(f, "[Policy]\nInjectGroup=%s\n", g->gr_name);
        return fclose(f) == 0 ? 0 : -errno;
}

static int daemon_start(const char *binary, unsigned max_clients) {
        char config[PATH_MAX], log_path[PATH_MAX];
        uint64_t deadline;
        int k;

        snprintf(config, sizeof(config), "%s/bench.conf", tmpdir);
        snprintf(log_path, sizeof(log_path), "%s/daemon.log", tmpdir);
        snprintf(socket_path, sizeof(socket_path), "%s/io.pressured", tmpdir);
        k = write_config(config, max_clients);
        if (k < 0)
                return k;

        daemon_pid = fork();
        if (daemon_pid < 0)
                return -errno;
        if (daemon_pid == 0) {
                int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

                if (log_fd >= 0) {
                        dup2(log_fd, STDOUT_FILENO);
                        dup2(log_fd, STDERR_FILENO);
                }
                /* Never under a service manager's watchdog. */
                unsetenv("WATCHDOG_USEC");
                unsetenv("WATCHDOG_PID");
                unsetenv("NOTIFY_SOCKET");
                unsetenv("LISTEN_FDS");
                execl(binary, binary, "--socket", socket_path, "--config", config, (char *) NULL);
                _exit(127);
        }

        deadline = mono_usec() + 10 * USEC_PER_SEC;
        while (mono_usec() < deadline) {
                int fd = connect_daemon();

                if (fd >= 0) {
                        close(fd);
                        return 0;
                }
                if (waitpid(daemon_pid, NULL, WNOHANG) == daemon_pid) {
                        daemon_pid = -1;
                        return -ECHILD;
                }
                usleep(10000);
        }
        return -ETIMEDOUT;
}

static void daemon_stop(void) {
        if (daemon_pid <= 0)
                return;
        kill(daemon_pid, SIGTERM);
        waitpid(daemon_pid, NULL, 0);
        daemon_pid = -1;
}

static void cleanup(void) {
        char path[PATH_MAX];

        daemon_stop();
        snprintf(path, sizeof(path), "%s/bench.conf", tmpdir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/daemon.log", tmpdir);
        unlink(path);
        unlink(socket_path);
        rmdir(tmpdir);
}

/*
 * Wait for @n_msgs messages on @conns (each conn @per_conn of them), record
 * their latencies in @lat, and return the receive time of the last one.
 * Messages without a "monotonic_us" (or, with @need_synthetic, not
 * synthetic) are not counted.
 */
static int receive_round(int epfd, Conn *conns, unsigned n, unsigned *got, double *lat, size_t *n_lat,
                         uint64_t *missed, double *ret_last, int64_t *ret_stamp) {
        unsigned done = 0;
        double last = 0;
        uint64_t deadline = mono_usec() + MAX_ROUND_WAIT_USEC;
        struct epoll_event evs[256];

        for (unsigned i = 0; i < n; i++)
                got[i] = 0;
        while (done < n) {
                int m = epoll_wait(epfd, evs, ELEMENTSOF(evs), 1000);

                if (m < 0 && errno == EINTR)
                        continue;
                if (m < 0)
                        return -errno;
                if (m == 0 && mono_usec() > deadline)
                        return -ETIMEDOUT;
                for (int e = 0; e < m; e++) {
                        unsigned i = evs[e].data.u32;
                        Conn *c;
                        ssize_t k;
                        double now;
                        char *p, *nul;
                        c = &conns[i];
                        k = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
                        now = mono_usec_f();

                        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                                continue;
                        if (k <= 0)
                                return k < 0 ? -errno : -ECONNRESET;
                        c->len += (size_t) k;
                        p = c->buf;
                        while ((nul = memchr(p, 0, c->len - (size_t) (p - c->buf)))) {
                                int64_t stamp = json_int_field(p, "monotonic_us");
                                int64_t miss = json_int_field(p, "missed");

                                if (stamp > 0 && strstr(p, "\"synthetic\":true")) {
                                        lat[(*n_lat)++] = now - (double) stamp;
                                        if (miss > 0)
                                                *missed += (uint64_t) miss;
                                        if (ret_stamp)
                                                *ret_stamp = stamp;
                                        if (got[i]++ == 0)
                                                done++;
                                        if (now > last)
                                                last = now;
                                        if (sample_len == 0 && (size_t) (nul - p) + 1 < sizeof(sample)) {
                                                sample_len = (size_t) (nul - p) + 1;
                                                memcpy(sample, p, sample_len);
                                        }
                                }
                                p = nul + 1;
                        }
                        c->len -= (size_t) (p - c->buf);
                        memmove(c->buf, p, c->len);
                        if (c->len == sizeof(c->buf))
                                return -EMSGSIZE;
                }
        }
        *ret_last = last;
        return 0;
}

static int set_nonblock(int fd) {
        int fl = fcntl(fd, F_GETFL);

        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

/* Open subscribers @from..@to-1 (blocking), subscribe them, consume "subscribed". */
static int subscribers_add(Conn *conns, unsigned from, unsigned to, int epfd) {
        static const char sub[] =
                "{\"method\":\"io.pressured.Subscribe\",\"parameters\":{\"cgroup\":\"/\",\"level\":\"medium\"},\"more\":true}";
        char reply[4096];

        for (unsigned i = from; i < to; i++) {
                int fd = connect_daemon();

                if (fd < 0)
                        return fd;
                conns[i] = (Conn) { .fd = fd };
                if (write_all(fd, sub, sizeof(sub)) < 0)
                        return -EIO;
        }
        for (unsigned i = from; i < to; i++) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
                int k = conn_recv_blocking(&conns[i], reply, sizeof(reply));

                if (k < 0)
                        return k;
                if (!strstr(reply, "\"subscribed\"")) {
                        fprintf(stderr, "Subscribe failed: %s\n", reply);
                        return strstr(reply, "SourceUnavailable") ? -EOPNOTSUPP : -EPROTO;
                }
                if (set_nonblock(conns[i].fd) < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, conns[i].fd, &ev) < 0)
                        return -errno;
        }
        return 0;
}

static void fanout_finish(FanoutResult *r, double *lat, size_t n_lat, double *spans, size_t n_spans,
                          double *writes, size_t n_writes) {
        double span_sum = 0;

        qsort(lat, n_lat, sizeof(double), cmp_double);
        r->deliveries = n_lat;
        r->p50_us = percentile(lat, n_lat, 0.50);
        r->p99_us = percentile(lat, n_lat, 0.99);
        r->max_us = n_lat ? lat[n_lat - 1] : 0;
        for (size_t i = 0; i < n_spans; i++)
                span_sum += spans[i];
        r->deliveries_per_sec = span_sum > 0 ? (double) n_lat / (span_sum / 1e6) : 0;
        qsort(spans, n_spans, sizeof(double), cmp_double);
        r->span_p50_us = percentile(spans, n_spans, 0.50);
        if (writes) {
                qsort(writes, n_writes, sizeof(double), cmp_double);
                r->write_p50_us = percentile(writes, n_writes, 0.50);
        }
}

static unsigned rounds_for(unsigned n) {
        unsigned r = n <= 1 ? 500 : n <= 100 ? 200 : n <= 1000 ? 60 : 25;

        return quick ? (r / 10 > 3 ? r / 10 : 3) : r;
}

/*
 * A thread that blocks on the control connection and stamps the arrival of
 * each Inject reply. The daemon queues that reply right after its fan-out
 * loop, so the stamp bounds its time to write every subscriber's socket,
 * independent of how fast the epoll reader drains the subscribers.
 */
typedef struct ReplyWaiter {
        Conn *ctl;
        pthread_t thread;
        sem_t go, done;
        bool stop;
        int result;
        double when;
        char reply[1024];
} ReplyWaiter;

static void *reply_waiter(void *userdata) {
        ReplyWaiter *w = userdata;

        for (;;) {
                while (sem_wait(&w->go) < 0 && errno == EINTR)
                        ;
                if (w->stop)
                        return NULL;
                w->result = conn_recv_blocking(w->ctl, w->reply, sizeof(w->reply));
                w->when = mono_usec_f();
                sem_post(&w->done);
        }
}

/* Inject @rounds events on "/" and collect what the @n subscribers receive. */
static int bench_daemon(Conn *ctl, Conn *conns, unsigned n, int epfd) {
        static const char inject[] =
                "{\"method\":\"io.pressured.Inject\",\"parameters\":{\"cgroup\":\"/\",\"level\":\"critical\"}}";
        unsigned rounds = rounds_for(n);
        _cleanup_free_ double *lat = calloc((size_t) n * rounds, sizeof(double));
        _cleanup_free_ double *spans = calloc(rounds, sizeof(double));
        _cleanup_free_ unsigned *got = calloc(n, sizeof(unsigned));
        _cleanup_free_ double *writes = calloc(rounds, sizeof(double));
        FanoutResult *r = &results[n_results];
        ReplyWaiter w = { .ctl = ctl };
        int64_t cpu0, cpu1 = -1;
        size_t n_lat = 0;
        int k = 0;

        if (!lat || !spans || !got || !writes)
                return -ENOMEM;
        if (sem_init(&w.go, 0, 0) < 0 || sem_init(&w.done, 0, 0) < 0)
                return -errno;
        k = -pthread_create(&w.thread, NULL, reply_waiter, &w);
        if (k < 0)
                return k;
        *r = (FanoutResult) { .mode = "daemon", .subscribers = n, .rounds = rounds };
        cpu0 = proc_cpu_ns(daemon_pid);
        for (unsigned i = 0; i < rounds; i++) {
                int64_t stamp = 0;
                double last;

                sem_post(&w.go);
                k = write_all(ctl->fd, inject, sizeof(inject));
                if (k < 0)
                        break;
                k = receive_round(epfd, conns, n, got, lat, &n_lat, &r->missed, &last, &stamp);
                if (k < 0)
                        break;
                while (sem_wait(&w.done) < 0 && errno == EINTR)
                        ;
                k = w.result;
                if (k < 0)
                        break;
                if (json_int_field(w.reply, "delivered") != (int64_t) n) {
                        fprintf(stderr, "Inject reached %s, expected %u\n", w.reply, n);
                        k = -EPROTO;
                        break;
                }
                spans[i] = last - (double) stamp;
                writes[i] = w.when - (double) stamp;
        }
        cpu1 = proc_cpu_ns(daemon_pid);
        w.stop = true;
        sem_post(&w.go);
        pthread_join(w.thread, NULL);
        sem_destroy(&w.go);
        sem_destroy(&w.done);
        if (k < 0)
                return k;
        r->missed += (uint64_t) n * rounds - n_lat;
        fanout_finish(r, lat, n_lat, spans, rounds, writes, rounds);
        if (cpu0 >= 0 && cpu1 >= cpu0 && n_lat > 0)
                r->cpu_per_delivery_us = (double) (cpu1 - cpu0) / 1e3 / (double) n_lat;
        n_results++;
        return 0;
}

/*
 * The floor writer: for each byte read from @cmd, stamp the sample event
 * with CLOCK_MONOTONIC, write it to every fd, and report the loop's time.
 */
static _Noreturn void floor_writer(int cmd, int res, const int *fds, unsigned n) {
        const char *key = "\"monotonic_us\":";
        const char *at = memmem(sample, sample_len, key, strlen(key));
        size_t head = (size_t) (at - sample) + strlen(key);
        const char *tail = at + strlen(key);
        char msg[sizeof(sample) + 32], c;

        while (tail < sample + sample_len && *tail >= '0' && *tail <= '9')
                tail++;
        memcpy(msg, sample, head);
        while (read(cmd, &c, 1) == 1) {
                uint64_t t0 = mono_usec(), t1;
                int len = snprintf(msg + head, sizeof(msg) - head, "%" PRIu64, t0);
                size_t total = head + (size_t) len;

                memcpy(msg + total, tail, (size_t) (sample + sample_len - tail));
                total += (size_t) (sample + sample_len - tail);
                for (unsigned i = 0; i < n; i++)
                        if (write(fds[i], msg, total) < 0)
                                _exit(1);
                t1 = mono_usec();
                if (write(res, &(uint64_t) { t1 - t0 }, sizeof(uint64_t)) < 0)
                        _exit(1);
        }
        _exit(0);
}

static int bench_floor(unsigned n) {
        unsigned rounds = rounds_for(n);
        _cleanup_free_ double *lat = calloc((size_t) n * rounds, sizeof(double));
        _cleanup_free_ double *spans = calloc(rounds, sizeof(double));
        _cleanup_free_ double *writes = calloc(rounds, sizeof(double));
        _cleanup_free_ unsigned *got = calloc(n, sizeof(unsigned));
        _cleanup_free_ Conn *conns = calloc(n, sizeof(Conn));
        _cleanup_free_ int *wfds = calloc(n, sizeof(int));
        _cleanup_close_ int epfd = -1;
        FanoutResult *r = &results[n_results];
        int cmd[2] = { -1, -1 }, res[2] = { -1, -1 }, k = 0;
        int64_t cpu0, cpu1;
        size_t n_lat = 0;
        pid_t pid;

        if (!lat || !spans || !writes || !got || !conns || !wfds)
                return -ENOMEM;
        if (sample_len == 0)
                return -ENODATA;
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0)
                return -errno;
        for (unsigned i = 0; i < n; i++) {
                int sv[2];
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

                if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                        k = -errno;
                        for (unsigned j = 0; j < i; j++) {
                                close(conns[j].fd);
                                close(wfds[j]);
                        }
                        return k;
                }
                conns[i] = (Conn) { .fd = sv[0] };
                wfds[i] = sv[1];
                (void) set_nonblock(sv[0]);
                (void) epoll_ctl(epfd, EPOLL_CTL_ADD, sv[0], &ev);
        }
        if (pipe2(cmd, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0) {
                k = -errno;
                goto finish;
        }
        pid = fork();
        if (pid < 0) {
                k = -errno;
                goto finish;
        }
        if (pid == 0) {
                close(cmd[1]);
                close(res[0]);
                for (unsigned i = 0; i < n; i++)
                        close(conns[i].fd);
                floor_writer(cmd[0], res[1], wfds, n);
        }
        for (unsigned i = 0; i < n; i++)
                wfds[i] = safe_close(wfds[i]);
        cmd[0] = safe_close(cmd[0]);
        res[1] = safe_close(res[1]);

        *r = (FanoutResult) { .mode = "floor", .subscribers = n, .rounds = rounds };
        cpu0 = proc_cpu_ns(pid);
        for (unsigned i = 0; i < rounds && k >= 0; i++) {
                int64_t stamp = 0;
                uint64_t wr;
                double last;

                if (write(cmd[1], "x", 1) != 1) {
                        k = -EIO;
                        break;
                }
                k = receive_round(epfd, conns, n, got, lat, &n_lat, &r->missed, &last, &stamp);
                if (k < 0)
                        break;
                if (read(res[0], &wr, sizeof(wr)) != sizeof(wr)) {
                        k = -EIO;
                        break;
                }
                spans[i] = last - (double) stamp;
                writes[i] = (double) wr;
        }
        cpu1 = proc_cpu_ns(pid);
        cmd[1] = safe_close(cmd[1]);
        waitpid(pid, NULL, 0);
        if (k >= 0) {
                r->missed += (uint64_t) n * rounds - n_lat;
                fanout_finish(r, lat, n_lat, spans, rounds, writes, rounds);
                if (cpu0 >= 0 && cpu1 >= cpu0 && n_lat > 0)
                        r->cpu_per_delivery_us = (double) (cpu1 - cpu0) / 1e3 / (double) n_lat;
                n_results++;
        }

finish:
        for (unsigned i = 0; i < n; i++) {
                safe_close(conns[i].fd);
                safe_close(wfds[i]);
        }
        safe_close(cmd[0]);
        safe_close(cmd[1]);
        safe_close(res[0]);
        safe_close(res[1]);
        return k;
}

/* Wait until the daemon counts @clients connections (the control one included). */
static int wait_clients(Conn *ctl, int64_t clients) {
        uint64_t deadline = mono_usec() + 30 * USEC_PER_SEC;

        while (mono_usec() < deadline) {
                if (daemon_status_field(ctl, "clients") == clients)
                        return 0;
                usleep(20000);
        }
        return -ETIMEDOUT;
}

static void settle(void) {
        /* Let the daemon finish what it was doing before reading its RSS. */
        usleep(200000);
}

static int bench_memory(Conn *ctl, unsigned n) {
        static const char sub[] =
                "{\"method\":\"io.pressured.Subscribe\",\"parameters\":{\"cgroup\":\"/\",\"level\":\"medium\"},\"more\":true}";
        static const char inject[] =
                "{\"method\":\"io.pressured.Inject\",\"parameters\":{\"cgroup\":\"/\",\"level\":\"critical\"}}";
        _cleanup_free_ Conn *conns = calloc(n, sizeof(Conn));
        double pss_idle, rss_idle, anon_idle, rss_conn, anon_conn, rss_sub, anon_sub, rss_ev, anon_ev, rss_end, anon_end;
        char reply[4096];
        int k = 0;

        if (!conns)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                conns[i].fd = -1;
        settle();
        if (proc_rss(daemon_pid, &rss_idle, &anon_idle) < 0)
                return -EIO;
        pss_idle = proc_pss(daemon_pid);

        for (unsigned i = 0; i < n; i++) {
                conns[i].fd = connect_daemon();
                if (conns[i].fd < 0) {
                        k = conns[i].fd;
                        goto finish;
                }
        }
        k = wait_clients(ctl, (int64_t) n + 1);
        if (k < 0)
                goto finish;
        settle();
        (void) proc_rss(daemon_pid, &rss_conn, &anon_conn);

        for (unsigned i = 0; i < n; i++)
                if (write_all(conns[i].fd, sub, sizeof(sub)) < 0) {
                        k = -EIO;
                        goto finish;
                }
        for (unsigned i = 0; i < n; i++) {
                k = conn_recv_blocking(&conns[i], reply, sizeof(reply));
                if (k < 0)
                        goto finish;
                if (!strstr(reply, "\"subscribed\"")) {
                        fprintf(stderr, "Subscribe failed: %s\n", reply);
                        k = strstr(reply, "SourceUnavailable") ? -EOPNOTSUPP : -EPROTO;
                        goto finish;
                }
        }
        settle();
        (void) proc_rss(daemon_pid, &rss_sub, &anon_sub);

        k = call(ctl, inject, reply, sizeof(reply));
        if (k < 0)
                goto finish;
        for (unsigned i = 0; i < n; i++) {
                k = conn_recv_blocking(&conns[i], reply, sizeof(reply));
                if (k < 0)
                        goto finish;
        }
        settle();
        (void) proc_rss(daemon_pid, &rss_ev, &anon_ev);

        for (unsigned i = 0; i < n; i++)
                conns[i].fd = safe_close(conns[i].fd);
        k = wait_clients(ctl, 1);
        if (k < 0)
                goto finish;
        settle();
        (void) proc_rss(daemon_pid, &rss_end, &anon_end);

        memory_add("rss_at_start", rss_idle, "KiB");
        memory_add("anon_at_start", anon_idle, "KiB");
        if (pss_idle >= 0)
                memory_add("pss_at_start", pss_idle, "KiB");
        memory_add("per_idle_connection", (rss_conn - rss_idle) * 1024 / n, "bytes");
        memory_add("per_subscription", (rss_sub - rss_conn) * 1024 / n, "bytes");
        memory_add("per_subscriber_after_first_event", (rss_ev - rss_sub) * 1024 / n, "bytes");
        memory_add("per_subscriber_total", (rss_ev - rss_idle) * 1024 / n, "bytes");
        memory_add("rss_with_subscribers", rss_ev, "KiB");
        memory_add("rss_after_all_left", rss_end, "KiB");
        memory_add("connections", n, "count");
        k = 0;

finish:
        for (unsigned i = 0; i < n; i++)
                safe_close(conns[i].fd);
        return k;
}

static int mkdir_p(const char *path) {
        char buf[PATH_MAX];

        if (snprintf(buf, sizeof(buf), "%s/", path) >= (int) sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        return 0;
}

static int write_csvs(const char *dir) {
        char path[PATH_MAX];
        FILE *f;

        if (mkdir_p(dir) < 0)
                return -errno;
        if (snprintf(path, sizeof(path), "%s/fanout.csv", dir) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "mode,subscribers,rounds,deliveries,missed,p50_us,p99_us,max_us,deliveries_per_sec,"
                   "span_p50_us,write_p50_us,cpu_per_delivery_us\n");
        for (size_t i = 0; i < n_results; i++) {
                const FanoutResult *r = &results[i];

                fprintf(f, "%s,%u,%u,%" PRIu64 ",%" PRIu64 ",%.1f,%.1f,%.1f,%.0f,%.1f,%.1f,%.3f\n", r->mode,
                        r->subscribers, r->rounds, r->deliveries, r->missed, r->p50_us, r->p99_us,
                        r->max_us, r->deliveries_per_sec, r->span_p50_us, r->write_p50_us,
                        r->cpu_per_delivery_us);
        }
        if (fclose(f) != 0)
                return -errno;

        if (snprintf(path, sizeof(path), "%s/memory.csv", dir) >= (int) sizeof(path))
                return -ENAMETOOLONG;
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "metric,value,unit\n");
        for (size_t i = 0; i < n_memory; i++)
                fprintf(f, "%s,%.0f,%s\n", memory[i].metric, memory[i].value, memory[i].unit);
        return fclose(f) == 0 ? 0 : -errno;
}

static void print_tables(void) {
        printf("\nFan-out: inject-to-receive latency (us) and deliveries per second\n");
        printf("%-7s %8s %7s %10s %7s %9s %9s %9s %12s %10s %10s %9s\n", "mode", "subs", "rounds",
               "deliveries", "missed", "p50", "p99", "max", "deliv/s", "span p50", "write p50", "cpu/deliv");
        for (size_t i = 0; i < n_results; i++) {
                const FanoutResult *r = &results[i];

                printf("%-7s %8u %7u %10" PRIu64 " %7" PRIu64 " %9.1f %9.1f %9.1f %12.0f %10.1f %10.1f %9.2f\n",
                       r->mode, r->subscribers, r->rounds, r->deliveries, r->missed, r->p50_us, r->p99_us,
                       r->max_us, r->deliveries_per_sec, r->span_p50_us, r->write_p50_us,
                       r->cpu_per_delivery_us);
        }
        for (size_t i = 0; i < n_results; i++) {
                const FanoutResult *d = &results[i];

                if (!streq(d->mode, "daemon"))
                        continue;
                for (size_t j = 0; j < n_results; j++) {
                        const FanoutResult *f = &results[j];

                        if (!streq(f->mode, "floor") || f->subscribers != d->subscribers)
                                continue;
                        printf("%u subscribers: daemon p99 = %.2fx the floor's write time (goal <= 2 at 1,000), "
                               "%.2fx the floor's p99; daemon write time = %.2fx the floor's; "
                               "deliveries/s = %.0f%% of the floor (goal >= 50%%)\n",
                               d->subscribers, f->write_p50_us > 0 ? d->p99_us / f->write_p50_us : 0,
                               f->p99_us > 0 ? d->p99_us / f->p99_us : 0,
                               f->write_p50_us > 0 ? d->write_p50_us / f->write_p50_us : 0,
                               f->deliveries_per_sec > 0 ? 100.0 * d->deliveries_per_sec / f->deliveries_per_sec : 0);
                }
        }
        printf("\nMemory (daemon VmRSS)\n");
        for (size_t i = 0; i < n_memory; i++)
                printf("%-34s %10.0f %s\n", memory[i].metric, memory[i].value, memory[i].unit);
}

static void on_signal(int sig) {
        cleanup();
        _exit(128 + sig);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "out", required_argument, NULL, 'o' },
                { "daemon", required_argument, NULL, 'd' },
                { "counts", required_argument, NULL, 'n' },
                { "memory-clients", required_argument, NULL, 'm' },
                { "quick", no_argument, NULL, 'q' },
                {},
        };
        char default_out[PATH_MAX], default_daemon[PATH_MAX];
        const char *out = getenv("PRESSURED_BENCH_OUT"), *binary, *counts_s = "1,100,1000,4000";
        const char *build = getenv("PRESSURED_BUILD_ROOT") ?: ".";
        unsigned counts[16], n_counts = 0, max_n = 0, memory_clients = 1000;
        _cleanup_free_ Conn *conns = NULL;
        _cleanup_close_ int epfd = -1;
        Conn ctl = { .fd = -1 };
        unsigned have = 0;
        int c, k;

        quick = getenv("PRESSURED_BENCH_QUICK") && streq(getenv("PRESSURED_BENCH_QUICK"), "1");
        snprintf(default_out, sizeof(default_out), "%s/tests/bench/out", build);
        snprintf(default_daemon, sizeof(default_daemon), "%s/daemon/pressured", build);
        binary = default_daemon;
        if (!out)
                out = default_out;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'o':
                        out = optarg;
                        break;
                case 'd':
                        binary = optarg;
                        break;
                case 'n':
                        counts_s = optarg;
                        break;
                case 'm':
                        memory_clients = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'q':
                        quick = true;
                        break;
                default:
                        return 2;
                }
        for (const char *p = counts_s; *p && n_counts < ELEMENTSOF(counts);) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);

                if (end == p || v == 0 || v > 100000) {
                        fprintf(stderr, "Bad --counts \"%s\"\n", counts_s);
                        return 2;
                }
                counts[n_counts++] = (unsigned) v;
                if (v > max_n)
                        max_n = (unsigned) v;
                p = *end == ',' ? end + 1 : end;
        }
        if (memory_clients == 0)
                memory_clients = 1;
        if (access(binary, X_OK) < 0) {
                fprintf(stderr, "No daemon binary at %s (set PRESSURED_BUILD_ROOT or --daemon)\n", binary);
                return 2;
        }
        if (access("/proc/pressure/memory", R_OK) < 0) {
                printf("SKIP: /proc/pressure/memory is missing, so \"level\" on \"/\" has no source\n");
                return 77;
        }

        /* Daemon and driver each need a descriptor per subscriber, the driver
         * twice as many while the floor runs. */
        raise_nofile(2 * (max_n > memory_clients ? max_n : memory_clients) + 256);
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        atexit(cleanup);
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        signal(SIGPIPE, SIG_IGN);

        k = daemon_start(binary, (max_n > memory_clients ? max_n : memory_clients) + 16);
        if (k < 0) {
                fprintf(stderr, "Failed to start %s: %s\n", binary, strerror(-k));
                return 1;
        }
        ctl.fd = connect_daemon();
        if (ctl.fd < 0) {
                fprintf(stderr, "Failed to connect: %s\n", strerror(-ctl.fd));
                return 1;
        }

        k = bench_memory(&ctl, memory_clients);
        if (k == -EOPNOTSUPP) {
                printf("SKIP: the daemon has no source for \"level\" on \"/\"\n");
                return 77;
        }
        if (k < 0) {
                fprintf(stderr, "Memory benchmark failed: %s\n", strerror(-k));
                return 1;
        }

        conns = calloc(max_n, sizeof(Conn));
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (!conns || epfd < 0)
                return 1;
        /* Ascending counts reuse the subscribers already open. */
        for (unsigned i = 0; i < n_counts; i++)
                for (unsigned j = i + 1; j < n_counts; j++)
                        if (counts[j] < counts[i]) {
                                unsigned t = counts[i];

                                counts[i] = counts[j];
                                counts[j] = t;
                        }
        for (unsigned i = 0; i < n_counts; i++) {
                unsigned n = counts[i];

                k = subscribers_add(conns, have, n, epfd);
                if (k < 0) {
                        fprintf(stderr, "Failed to open %u subscribers: %s\n", n, strerror(-k));
                        return 1;
                }
                have = n;
                k = bench_daemon(&ctl, conns, n, epfd);
                if (k < 0) {
                        fprintf(stderr, "Fan-out to %u failed: %s\n", n, strerror(-k));
                        return 1;
                }
                fprintf(stderr, "daemon, %u subscribers: done\n", n);
        }
        for (unsigned i = 0; i < have; i++)
                safe_close(conns[i].fd);
        safe_close(ctl.fd);
        daemon_stop();

        for (unsigned i = 0; i < n_counts; i++) {
                k = bench_floor(counts[i]);
                if (k < 0) {
                        fprintf(stderr, "Floor at %u failed: %s\n", counts[i], strerror(-k));
                        return 1;
                }
                fprintf(stderr, "floor, %u sockets: done\n", counts[i]);
        }

        print_tables();
        k = write_csvs(out);
        if (k < 0) {
                fprintf(stderr, "Failed to write CSV under %s: %s\n", out, strerror(-k));
                return 1;
        }
        printf("CSV: %s/fanout.csv, %s/memory.csv\n", out, out);
        return 0;
}
