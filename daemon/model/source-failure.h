/* SPDX-License-Identifier: MIT */
/*
 * Why a kernel source, the registry or the choice of a source failed, in
 * types: the errno and a small cause (which source, what failed, a reason,
 * a limit). Only the server names it for the wire
 * (varlink_error_from_failure()). Pure: no I/O, no allocation; the cause
 * is copied into fixed buffers at least as large as the texts the daemon
 * has ever sent, so nothing of it depends on the failed object's lifetime.
 *
 * The cgroup is not part of the cause: whoever asked for the registration
 * knows it, and names it as its peer does.
 *
 * Every setter fills @f (dropping what it held) and returns the negative
 * errno it is given, so a source writes
 * "return source_failure_open(f, -errno, "psi", file);".
 */
#pragma once

#include <stdint.h>

typedef enum SourceFailureKind {
        SOURCE_FAILURE_NONE,                 /* nothing said beyond the errno (out of memory, ...) */
        SOURCE_FAILURE_OPEN,                 /* opening the cgroup directory or a file in it failed: the errno decides */
        SOURCE_FAILURE_NO_SUCH_CGROUP,       /* the cgroup is in none of the hierarchies in use */
        SOURCE_FAILURE_INVALID_CGROUP_PATH,  /* the path is a symlink, a file, or leads out of the hierarchy */
        SOURCE_FAILURE_UNAVAILABLE,          /* the source cannot serve the cgroup: @text is the reason */
        SOURCE_FAILURE_LIMIT,                /* a limit of the daemon was reached: @limit, @value */
} SourceFailureKind;

/* Large enough for every reason and every file description the sources give. */
#define SOURCE_FAILURE_TEXT_MAX 512

typedef struct SourceFailure {
        SourceFailureKind kind;
        int error;                           /* the negative errno */
        const char *source;                  /* static: "psi", "vmpressure", ...; OPEN, UNAVAILABLE */
        const char *limit;                   /* static: "MaxRegistrations"; LIMIT */
        uint64_t value;                      /* the limit's value; LIMIT */
        /* OPEN: what failed inside the cgroup directory, in words ("memory.pressure",
         * "the PSI trigger \"some 150ms 2s\""), "" for the directory itself;
         * UNAVAILABLE: the reason. */
        char text[SOURCE_FAILURE_TEXT_MAX];
} SourceFailure;

/* source_failure_open - opening @file (NULL: the cgroup directory) for @source failed with @error. */
int source_failure_open(SourceFailure *f, int error, const char *source, const char *file);
/* source_failure_no_such_cgroup - the cgroup is in no hierarchy in use. */
int source_failure_no_such_cgroup(SourceFailure *f, int error);
/* source_failure_invalid_cgroup_path - the cgroup's path names no cgroup directory. */
int source_failure_invalid_cgroup_path(SourceFailure *f, int error);
/* source_failure_unavailable - @source cannot serve the cgroup, because of @reason. */
int source_failure_unavailable(SourceFailure *f, int error, const char *source, const char *reason);
/* source_failure_limit - the daemon's @limit (static), of @value, was reached. */
int source_failure_limit(SourceFailure *f, int error, const char *limit, uint64_t value);
