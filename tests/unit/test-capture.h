/* SPDX-License-Identifier: MIT */
/*
 * Capturing what code under test writes, for unit tests: stderr (the log)
 * into a temporary file, and an evbuffer into a string.
 */
#pragma once

#include <event2/buffer.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests.h"

/* Send stderr to a temporary file until stderr_restore(); returns the saved stderr. */
static inline int stderr_capture(char path[static 64]) {
        int saved, fd;

        snprintf(path, 64, "/tmp/pressured-test-log-XXXXXX");
        fd = mkstemp(path);
        ASSERT_TRUE(fd >= 0);
        fflush(stderr);
        saved = dup(STDERR_FILENO);
        ASSERT_TRUE(saved >= 0);
        ASSERT_TRUE(dup2(fd, STDERR_FILENO) == STDERR_FILENO);
        close(fd);
        return saved;
}

/* Put stderr back, show what was captured there too, and return it (valid until the next call). */
static inline char *stderr_restore(int saved, const char *path) {
        static char text[8192];
        ssize_t n;
        int fd;

        fflush(stderr);
        ASSERT_TRUE(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
        close(saved);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        n = read(fd, text, sizeof(text) - 1);
        ASSERT_TRUE(n >= 0);
        text[n] = 0;
        close(fd);
        ASSERT_OK(unlink(path));
        fputs(text, stderr);
        return text;
}

/* The evbuffer's contents as a malloc'ed string; the buffer is emptied. */
static inline char *take_string(struct evbuffer *b) {
        size_t n = evbuffer_get_length(b);
        char *s = malloc(n + 1);

        ASSERT_TRUE(s);
        ASSERT_EQ(evbuffer_remove(b, s, n), n);
        s[n] = 0;
        return s;
}
