/* SPDX-License-Identifier: MIT */
/*
 * Cost of a protection refresh on fake cgroup2 trees of 100, 1,000 and
 * 10,000 cgroups (made by tests/make-fake-cgroup-tree.py):
 *   - reader, nothing changed: directory listings skipped after fstat(),
 *     and the same with every directory listed (list-always);
 *   - reader, 10% of usages changed between refreshes (the generator's
 *     --mutate), with the optimized propagation and with always-propagate;
 *   - the model alone (no I/O), 10% of usages changed per refresh, both
 *     propagation modes.
 * Prints a table and writes CSV.
 *
 *   bench-protection [--csv PATH] [--generator SCRIPT] [--sizes N,N,...]
 *                    [--iterations N]
 * CSV path: --csv, else $PRESSURED_BENCH_CSV, else
 * $PRESSURED_BUILD_ROOT/tests/bench/out/bench-protection.csv.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protection-tree.h"
#include "tests.h"

typedef struct Row {
        unsigned cgroups;
        const char *scenario;
        unsigned refreshes;
        double wall_us, cpu_us;
        double syscalls, preads, getdents, fstats, opens;
        double applied, skipped, recomputed;
} Row;

static Row rows[64];
static size_t n_rows;

/* Descriptors held after the first read, per size. */
static struct {
        unsigned cgroups;
        uint64_t fds, limit;
} fds[8];
static size_t n_fds_rows;

static const char *generator;
static unsigned iterations = 10;

static double now_us(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

static int run_generator(const char *dir, const char *mode, const char *arg, unsigned seed) {
        char seed_s[16];
        pid_t pid;
        int status;

        snprintf(seed_s, sizeof(seed_s), "%u", seed);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

                if (null >= 0)
                        dup2(null, STDERR_FILENO);
                execlp("python3", "python3", generator, dir, mode, arg, "--seed", seed_s,
                       "--depth", "4", (char *) NULL);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

typedef struct Snapshot {
        ProtectionReaderStats stats;
        ProtectionCounters counters;
        double wall, cpu;
} Snapshot;

static void snapshot(ProtectionReader *r, ProtectionTree *t, Snapshot *ret) {
        if (r)
                protection_reader_get_stats(r, &ret->stats);
        else
                memset(&ret->stats, 0, sizeof(ret->stats));
        protection_tree_get_counters(t, &ret->counters);
        ret->wall = now_us(CLOCK_MONOTONIC);
        ret->cpu = now_us(CLOCK_PROCESS_CPUTIME_ID);
}

/* Accumulate one measured refresh into @row. */
static void account(Row *row, const Snapshot *a, const Snapshot *b) {
        row->refreshes++;
        row->wall_us += b->wall - a->wall;
        row->cpu_us += b->cpu - a->cpu;
        row->syscalls += (double) (b->stats.syscalls - a->stats.syscalls);
        row->preads += (double) (b->stats.preads - a->stats.preads);
        row->getdents += (double) (b->stats.getdents - a->stats.getdents);
        row->fstats += (double) (b->stats.fstats - a->stats.fstats);
        row->opens += (double) (b->stats.opens - a->stats.opens);
        row->applied += (double) (b->counters.propagations_applied - a->counters.propagations_applied);
        row->skipped += (double) (b->counters.propagations_skipped - a->counters.propagations_skipped);
        row->recomputed += (double) (b->counters.recomputations - a->counters.recomputations);
}

static Row *row_new(unsigned cgroups, const char *scenario) {
        Row *row = &rows[n_rows++];

        *row = (Row) { .cgroups = cgroups, .scenario = scenario };
        return row;
}

static void row_finish(Row *row) {
        double n = row->refreshes ? row->refreshes : 1;

        row->wall_us /= n;
        row->cpu_us /= n;
        row->syscalls /= n;
        row->preads /= n;
        row->getdents /= n;
        row->fstats /= n;
        row->opens /= n;
        row->applied /= n;
        row->skipped /= n;
        row->recomputed /= n;
}

/* Try to allow every node its descriptors; returns the soft limit obtained. */
static rlim_t ensure_fds(unsigned cgroups) {
        rlim_t want = (rlim_t) cgroups * 4 + 256;
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 1024;
        if (rl.rlim_cur >= want)
                return rl.rlim_cur;
        if (rl.rlim_max < want) {
                struct rlimit more = { .rlim_cur = want, .rlim_max = want };

                /* Needs CAP_SYS_RESOURCE; without it, settle for the hard limit. */
                if (setrlimit(RLIMIT_NOFILE, &more) == 0)
                        return want;
        }
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                (void) getrlimit(RLIMIT_NOFILE, &rl);
        return rl.rlim_cur;
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

/* The model alone: every node re-submitted, 10% with a new usage, then compute. */
static void bench_model(ProtectionTree *t, unsigned cgroups, bool always) {
        ProtectionNode *root = protection_tree_root(t), **nodes;
        size_t n = protection_tree_size(t), i = 0;
        Row *row = row_new(cgroups, always ? "model-10%-always" : "model-10%-optimized");
        unsigned rounds = 200;

        nodes = calloc(n, sizeof(*nodes));
        if (!nodes)
                abort();
        for (ProtectionNode *x = root; x; x = protection_node_next(x, root))
                nodes[i++] = x;

        protection_tree_set_always_propagate(t, always);
        (void) protection_tree_compute(t, NULL, NULL);
        for (unsigned k = 0; k < rounds; k++) {
                Snapshot a, b;

                snapshot(NULL, t, &a);
                for (i = 0; i < n; i++) {
                        ProtectionValues v;

                        protection_node_get(nodes[i], &v);
                        if (rnd() % 10 == 0)
                                v.usage = (rnd() % (1u << 20)) * 4096;
                        (void) protection_node_update(t, nodes[i], v.usage, v.min, v.low);
                }
                (void) protection_tree_compute(t, NULL, NULL);
                snapshot(NULL, t, &b);
                account(row, &a, &b);
        }
        protection_tree_set_always_propagate(t, false);
        row_finish(row);
        free(nodes);
}

static int bench_size(unsigned cgroups) {
        char dir[] = "/tmp/bench-protection-XXXXXX", tree[PATH_MAX], nodes_s[16];
        _cleanup_(protection_reader_freep) ProtectionReader *r = NULL;
        ProtectionTree *t;
        unsigned seed = 1000;
        rlim_t limit;
        int k;

        limit = ensure_fds(cgroups);
        if (!mkdtemp(dir))
                return -errno;
        snprintf(tree, sizeof(tree), "%s/tree", dir);
        snprintf(nodes_s, sizeof(nodes_s), "%u", cgroups);
        k = run_generator(tree, "--nodes", nodes_s, 1);
        if (k < 0) {
                fprintf(stderr, "Failed to run %s\n", generator);
                goto finish;
        }

        k = protection_reader_new(tree, false, &r);
        if (k < 0)
                goto finish;
        t = protection_reader_get_tree(r);
        /* Everything but a reserve may stay open; the rest is read open/pread/close. */
        protection_reader_set_fd_budget(r, limit > 512 ? (unsigned) (limit - 256) : (unsigned) limit / 2);
        k = protection_reader_track(r, "/");
        if (k < 0)
                goto finish;
        {
                ProtectionReaderStats s;

                protection_reader_get_stats(r, &s);
                fds[n_fds_rows].cgroups = cgroups;
                fds[n_fds_rows].fds = s.fds_open;
                fds[n_fds_rows].limit = (uint64_t) limit;
                n_fds_rows++;
        }

        /* Nothing changed: with and without the fstat() shortcut. */
        for (int always = 0; always <= 1; always++) {
                Row *row = row_new(cgroups, always ? "unchanged-list-always" : "unchanged");

                protection_reader_set_list_always(r, always);
                for (unsigned i = 0; i < iterations * 2; i++) {
                        Snapshot a, b;

                        snapshot(r, t, &a);
                        k = protection_reader_refresh(r);
                        snapshot(r, t, &b);
                        if (k < 0)
                                goto finish;
                        account(row, &a, &b);
                }
                row_finish(row);
        }
        protection_reader_set_list_always(r, false);

        /* 10% of usages rewritten between refreshes. */
        for (int always = 0; always <= 1; always++) {
                Row *row = row_new(cgroups, always ? "changed-10%-always" : "changed-10%-optimized");

                protection_tree_set_always_propagate(t, always);
                /* Rewriting 10% of a 10,000-node tree takes the generator seconds. */
                for (unsigned i = 0; i < (cgroups >= 10000 ? 3 : iterations); i++) {
                        Snapshot a, b;

                        k = run_generator(tree, "--mutate", "10", seed++);
                        if (k < 0)
                                goto finish;
                        snapshot(r, t, &a);
                        k = protection_reader_refresh(r);
                        snapshot(r, t, &b);
                        if (k < 0)
                                goto finish;
                        account(row, &a, &b);
                }
                row_finish(row);
        }
        protection_tree_set_always_propagate(t, false);

        bench_model(t, cgroups, false);
        bench_model(t, cgroups, true);
        k = 0;

finish:
        r = protection_reader_free(r);
        (void) test_rm_tree(dir);
        if (k < 0)
                fprintf(stderr, "Benchmark at %u cgroups failed: %s\n", cgroups, strerror(-k));
        return k;
}

static int mkdir_parents(const char *path) {
        char buf[PATH_MAX];

        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        return 0;
}

static int write_csv(const char *path) {
        FILE *f;

        if (mkdir_parents(path) < 0)
                return -errno;
        f = fopen(path, "we");
        if (!f)
                return -errno;
        fprintf(f, "cgroups,scenario,refreshes,wall_us,cpu_us,syscalls,preads,getdents,fstats,opens,"
                   "propagations_applied,propagations_skipped,recomputed\n");
        for (size_t i = 0; i < n_rows; i++) {
                const Row *w = &rows[i];

                fprintf(f, "%u,%s,%u,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n",
                        w->cgroups, w->scenario, w->refreshes, w->wall_us, w->cpu_us, w->syscalls,
                        w->preads, w->getdents, w->fstats, w->opens, w->applied, w->skipped,
                        w->recomputed);
        }
        return fclose(f) == 0 ? 0 : -errno;
}

static void print_table(void) {
        printf("%8s  %-22s %11s %11s %9s %9s %9s %9s %10s\n", "cgroups", "scenario", "wall us",
               "cpu us", "syscalls", "getdents", "applied", "skipped", "recomputed");
        for (size_t i = 0; i < n_rows; i++) {
                const Row *w = &rows[i];

                printf("%8u  %-22s %11.1f %11.1f %9.0f %9.1f %9.1f %9.1f %10.1f\n", w->cgroups,
                       w->scenario, w->wall_us, w->cpu_us, w->syscalls, w->getdents, w->applied,
                       w->skipped, w->recomputed);
        }
        printf("(per refresh, averaged; fake trees under /tmp)\n");
        for (size_t i = 0; i < n_fds_rows; i++)
                printf("%u cgroups: %" PRIu64 " descriptors held (RLIMIT_NOFILE %" PRIu64 ")\n",
                       fds[i].cgroups, fds[i].fds, fds[i].limit);
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "csv", required_argument, NULL, 'c' },
                { "generator", required_argument, NULL, 'g' },
                { "sizes", required_argument, NULL, 's' },
                { "iterations", required_argument, NULL, 'i' },
                {},
        };
        char default_csv[PATH_MAX], default_generator[PATH_MAX];
        const char *csv = getenv("PRESSURED_BENCH_CSV"), *sizes = "100,1000,10000";
        int c, k;

        if (getenv("PRESSURED_SOURCE_ROOT")) {
                snprintf(default_generator, sizeof(default_generator), "%s/tests/make-fake-cgroup-tree.py",
                         getenv("PRESSURED_SOURCE_ROOT"));
                generator = default_generator;
        }
        if (!csv) {
                snprintf(default_csv, sizeof(default_csv), "%s/tests/bench/out/bench-protection.csv",
                         getenv("PRESSURED_BUILD_ROOT") ?: ".");
                csv = default_csv;
        }

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'c':
                        csv = optarg;
                        break;
                case 'g':
                        generator = optarg;
                        break;
                case 's':
                        sizes = optarg;
                        break;
                case 'i':
                        iterations = (unsigned) strtoul(optarg, NULL, 10);
                        if (iterations == 0)
                                iterations = 1;
                        break;
                default:
                        return 2;
                }
        if (!generator) {
                fprintf(stderr, "Need --generator or $PRESSURED_SOURCE_ROOT\n");
                return 2;
        }

        for (const char *p = sizes; *p;) {
                unsigned n = (unsigned) strtoul(p, NULL, 10);

                if (n > 0 && n_rows + 6 <= sizeof(rows) / sizeof(rows[0]) &&
                    n_fds_rows < sizeof(fds) / sizeof(fds[0])) {
                        k = bench_size(n);
                        if (k < 0)
                                return 1;
                }
                p += strcspn(p, ",");
                p += *p == ',';
        }

        print_table();
        k = write_csv(csv);
        if (k < 0) {
                fprintf(stderr, "Failed to write %s: %s\n", csv, strerror(-k));
                return 1;
        }
        printf("CSV written to %s\n", csv);
        return 0;
}
