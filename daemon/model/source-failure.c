/* SPDX-License-Identifier: MIT */
/* Typed causes of a failed source, registration or source choice. */
#include <stdio.h>

#include "source-failure.h"

static int set(SourceFailure *f, SourceFailureKind kind, int error, const char *source, const char *text) {
        *f = (SourceFailure) { .kind = kind, .error = error, .source = source };
        if (text)
                snprintf(f->text, sizeof(f->text), "%s", text);
        return error;
}

int source_failure_open(SourceFailure *f, int error, const char *source, const char *file) {
        return set(f, SOURCE_FAILURE_OPEN, error, source, file);
}

int source_failure_no_such_cgroup(SourceFailure *f, int error) {
        return set(f, SOURCE_FAILURE_NO_SUCH_CGROUP, error, NULL, NULL);
}

int source_failure_invalid_cgroup_path(SourceFailure *f, int error) {
        return set(f, SOURCE_FAILURE_INVALID_CGROUP_PATH, error, NULL, NULL);
}

int source_failure_unavailable(SourceFailure *f, int error, const char *source, const char *reason) {
        return set(f, SOURCE_FAILURE_UNAVAILABLE, error, source, reason ?: "");
}

int source_failure_limit(SourceFailure *f, int error, const char *limit, uint64_t value) {
        set(f, SOURCE_FAILURE_LIMIT, error, NULL, NULL);
        f->limit = limit;
        f->value = value;
        return error;
}
