/* SPDX-License-Identifier: MIT */
/*
 * The subscribers of bench-prekill.py: N kills subscriptions on a cgroup,
 * read with epoll, so that the figures are the daemon's and not a slow
 * reader's.
 *
 *   prekill-reader SOCKET N CGROUP
 *
 * Prints "ready" once every subscription has its "subscribed"; then for
 * each line on stdin reads one message from each subscription and prints
 * the warning's id and the CLOCK_MONOTONIC microseconds of every read, on
 * one line: "ID T1 T2 ...". Exits 0 at the end of stdin, 1 on an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct Sub {
        int fd;
        char buf[4096];
        size_t len;
        bool done;
} Sub;

static uint64_t mono_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static int subscribe(const char *path, const char *cgroup) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char msg[512], c;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int n = snprintf(msg, sizeof(msg),
                         "{\"method\":\"io.pressured.Subscribe\",\"more\":true,\"parameters\":{\"kills\":true,\"cgroup\":\"%s\"}}",
                         cgroup);

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || write(fd, msg, (size_t) n + 1) != n + 1)
                return -1;
        /* "subscribed", up to its NUL. */
        for (;;) {
                if (read(fd, &c, 1) != 1)
                        return -1;
                if (c == 0)
                        break;
        }
        if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
                return -1;
        return fd;
}

/* The "id" of the event in @msg, or -1. */
static long long event_id(const char *msg) {
        const char *p = strstr(msg, "\"id\":");

        return p ? strtoll(p + 5, NULL, 10) : -1;
}

/* Read one message from each of the @n subscriptions; their times into @times. */
static int read_round(int ep, Sub *subs, unsigned n, uint64_t *times, long long *ret_id) {
        unsigned left = n, got = 0;

        for (unsigned i = 0; i < n; i++)
                subs[i].done = false;
        while (left > 0) {
                struct epoll_event evs[256];
                int m = epoll_wait(ep, evs, 256, 60000);

                if (m <= 0)
                        return -1;
                for (int k = 0; k < m; k++) {
                        Sub *s = &subs[evs[k].data.u32];
                        ssize_t r = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len - 1);
                        uint64_t t = mono_us();
                        char *nul;

                        if (r <= 0 && !(r < 0 && errno == EAGAIN))
                                return -1;
                        if (r > 0)
                                s->len += (size_t) r;
                        s->buf[s->len] = 0;
                        nul = memchr(s->buf, 0, s->len);
                        if (s->done || !nul)
                                continue;
                        if (got == 0)
                                *ret_id = event_id(s->buf);
                        times[got++] = t;
                        s->done = true;
                        left--;
                        s->len -= (size_t) (nul + 1 - s->buf);
                        memmove(s->buf, nul + 1, s->len);
                }
        }
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = argc == 4 ? (unsigned) strtoul(argv[2], NULL, 10) : 0;
        Sub *subs = calloc(n ? n : 1, sizeof(Sub));
        uint64_t *times = calloc(n ? n : 1, sizeof(uint64_t));
        int ep = epoll_create1(EPOLL_CLOEXEC);
        char line[64];

        if (argc != 4 || n == 0 || !subs || !times || ep < 0) {
                fprintf(stderr, "usage: %s SOCKET N CGROUP\n", argv[0]);
                return 2;
        }
        for (unsigned i = 0; i < n; i++) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };

                subs[i].fd = subscribe(argv[1], argv[3]);
                if (subs[i].fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, subs[i].fd, &ev) < 0) {
                        fprintf(stderr, "subscription %u failed: %s\n", i, strerror(errno));
                        return 1;
                }
        }
        printf("ready\n");
        fflush(stdout);
        while (fgets(line, sizeof(line), stdin)) {
                long long id = -1;

                if (read_round(ep, subs, n, times, &id) < 0) {
                        fprintf(stderr, "reading the warnings failed\n");
                        return 1;
                }
                printf("%lld", id);
                for (unsigned i = 0; i < n; i++)
                        printf(" %" PRIu64, times[i]);
                printf("\n");
                fflush(stdout);
        }
        return 0;
}
