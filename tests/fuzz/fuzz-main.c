/* SPDX-License-Identifier: MIT */
/*
 * Replays fuzz inputs without libFuzzer: every argument is a file, or a
 * directory whose regular files are fed (in name order) to
 * LLVMFuzzerTestOneInput(). This turns each checked-in corpus into an
 * ordinary regression test that runs under any compiler, valgrind and the
 * sanitizer test setups.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "util.h"

static int replay_file(int dir_fd, const char *name, const char *display) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        uint8_t *exact;
        size_t size;
        int r;

        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                fprintf(stderr, "%s: %m\n", display);
                return -errno;
        }
        r = read_full_fd(fd, 16 * 1024 * 1024, &buf, &size);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", display, strerror(-r));
                return r;
        }

        /* Hand over a block of exactly the input's size, as libFuzzer does. */
        exact = malloc(size ?: 1);
        if (!exact)
                return -ENOMEM;
        memcpy(exact, buf, size);
        (void) LLVMFuzzerTestOneInput(exact, size);
        free(exact);
        return 0;
}

static int strcmp_ptr(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int replay_dir(const char *path, unsigned *count) {
        _cleanup_close_ int dir_fd = -1;
        DIR *d;
        struct dirent *de;
        char **names = NULL;
        size_t n = 0;
        int r = 0;

        dir_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        d = opendir(path);
        if (!d) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        while ((de = readdir(d))) {
                struct stat st;
                char **p;

                if (de->d_name[0] == '.')
                        continue;
                if (fstatat(dir_fd, de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
                        continue;
                p = realloc(names, (n + 1) * sizeof(char *));
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                names = p;
                names[n] = strdup(de->d_name);
                if (!names[n]) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);

        if (r >= 0 && n > 0)
                qsort(names, n, sizeof(char *), strcmp_ptr);
        for (size_t i = 0; i < n; i++) {
                if (r >= 0) {
                        char display[4096];

                        snprintf(display, sizeof(display), "%s/%s", path, names[i]);
                        r = replay_file(dir_fd, names[i], display);
                        if (r >= 0)
                                (*count)++;
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv) {
        unsigned count = 0;

        if (argc < 2) {
                fprintf(stderr, "Usage: %s FILE|DIRECTORY...\n", argv[0]);
                return 2;
        }

        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return 1;
                }
                if (S_ISDIR(st.st_mode))
                        r = replay_dir(argv[i], &count);
                else {
                        r = replay_file(AT_FDCWD, argv[i], argv[i]);
                        if (r >= 0)
                                count++;
                }
                if (r < 0)
                        return 1;
        }

        printf("%u inputs replayed\n", count);
        return count > 0 ? 0 : 1;
}
