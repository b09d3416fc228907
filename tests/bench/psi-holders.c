/* SPDX-License-Identifier: MIT */
/*
 * The "every process for itself" baseline of the sharing benchmark: N
 * processes that each open their own PSI trigger on one pressure file and
 * wait for it with poll(), as a program using sd_event_add_memory_pressure()
 * does.
 *
 *   psi-holders PRESSURE_FILE N "some|full THRESHOLD_US WINDOW_US"
 *
 * Prints "ready N" once every trigger is registered, then waits until its
 * standard input reaches EOF, stops the holders and prints
 * "events E cpu_us C switches S": the notifications all holders received,
 * and their CPU time and context switches (children's rusage).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* One holder: register the trigger, report, count notifications until @stop closes. */
static _Noreturn void holder_run(const char *path, const char *trigger, int ready, int stop, int counts) {
        struct pollfd p[2];
        uint64_t events = 0;
        int fd;

        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 || write(fd, trigger, strlen(trigger) + 1) < 0) {
                /* The parent stops collecting at the first failure it reads. */
                if (write(ready, "E", 1) < 0)
                        _exit(1);
                _exit(1);
        }
        if (write(ready, "R", 1) < 0)
                _exit(1);
        close(ready);

        p[0] = (struct pollfd) { .fd = fd, .events = POLLPRI };
        p[1] = (struct pollfd) { .fd = stop, .events = POLLIN };
        for (;;) {
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[0].revents & POLLERR)
                        break;
                if (p[0].revents & POLLPRI)
                        events++;
                if (p[1].revents)
                        break;
        }
        _exit(write(counts, &events, sizeof(events)) == sizeof(events) ? 0 : 1);
}

int main(int argc, char **argv) {
        int ready[2], stop[2], counts[2];
        unsigned long n, ok = 0;
        uint64_t total = 0, e;
        struct rusage ru;
        char c;

        if (argc != 4) {
                fprintf(stderr, "Usage: psi-holders PRESSURE_FILE N TRIGGER\n");
                return 2;
        }
        n = strtoul(argv[2], NULL, 10);
        if (n == 0 || n > 100000) {
                fprintf(stderr, "Bad count \"%s\"\n", argv[2]);
                return 2;
        }
        if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(stop, O_CLOEXEC) < 0 || pipe2(counts, O_CLOEXEC) < 0) {
                perror("pipe2");
                return 1;
        }
        signal(SIGPIPE, SIG_IGN);

        for (unsigned long i = 0; i < n; i++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror("fork");
                        break;
                }
                if (pid == 0) {
                        close(ready[0]);
                        close(stop[1]);
                        close(counts[0]);
                        holder_run(argv[1], argv[3], ready[1], stop[0], counts[1]);
                }
        }
        close(ready[1]);
        close(stop[0]);
        close(counts[1]);

        while (read(ready[0], &c, 1) == 1)
                if (c == 'R')
                        ok++;
                else
                        break;
        printf("ready %lu\n", ok);
        fflush(stdout);
        if (ok == n)
                while (read(STDIN_FILENO, &c, 1) > 0)
                        ;

        close(stop[1]);
        while (read(counts[0], &e, sizeof(e)) == sizeof(e))
                total += e;
        while (wait(NULL) > 0)
                ;
        if (getrusage(RUSAGE_CHILDREN, &ru) < 0)
                return 1;
        printf("events %" PRIu64 " cpu_us %" PRIu64 " switches %ld\n", total,
               (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
                       (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec),
               ru.ru_nvcsw + ru.ru_nivcsw);
        return ok == n ? 0 : 1;
}
