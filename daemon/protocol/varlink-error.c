/* SPDX-License-Identifier: MIT */
/* Typed varlink error constructors and the errno-to-error mapping. */
#include <stdio.h>
#include <sys/resource.h>

#include "cgroup.h"
#include "util.h"
#include "varlink-error.h"
#include "vocabulary.h"

void varlink_error_done(VarlinkError *e) {
        json_decref(e->parameters);
        *e = (VarlinkError) {};
}

/* Fill @e; a failed json_pack leaves {} rather than no parameters at all. */
static int set(VarlinkError *e, int error, const char *name, json_t *parameters) {
        json_decref(e->parameters);
        e->name = name;
        e->parameters = parameters ?: json_object();
        e->detail = NULL;
        return error;
}

static int set_string(VarlinkError *e, int error, const char *name, const char *key, const char *value) {
        return set(e, error, name, json_pack("{s:s}", key, value ?: ""));
}

int varlink_error_no_such_cgroup(VarlinkError *e, int error, const char *cgroup) {
        return set_string(e, error, IDL_ERROR_NAME(NO_SUCH_CGROUP), "cgroup", cgroup);
}

int varlink_error_invalid_cgroup_path(VarlinkError *e, int error, const char *cgroup) {
        CgroupPathProblem p = cgroup_path_check(cgroup);

        (void) set_string(e, error, IDL_ERROR_NAME(INVALID_CGROUP_PATH), "cgroup", cgroup);
        e->detail = cgroup_path_problem_to_string(p != CGROUP_PATH_OK ? p : cgroup_path_problem_from_errno(error));
        return error;
}

int varlink_error_permission_denied(VarlinkError *e, const char *reason) {
        return set_string(e, -EACCES, IDL_ERROR_NAME(PERMISSION_DENIED), "reason", reason);
}

int varlink_error_source_unavailable(VarlinkError *e, int error, const char *source, const char *reason) {
        return set(e, error, IDL_ERROR_NAME(SOURCE_UNAVAILABLE),
                   json_pack("{s:s, s:s}", "source", source ?: "", "reason", reason ?: ""));
}

int varlink_error_invalid_trigger(VarlinkError *e, int error, const char *reason) {
        return set_string(e, error, IDL_ERROR_NAME(INVALID_TRIGGER), "reason", reason);
}

int varlink_error_limit_exceeded(VarlinkError *e, int error, const char *limit, uint64_t value) {
        json_int_t v = value > INT64_MAX ? INT64_MAX : (json_int_t) value;

        return set(e, error, IDL_ERROR_NAME(LIMIT_EXCEEDED), json_pack("{s:s, s:I}", "limit", limit, "value", v));
}

int varlink_error_configuration_rejected(VarlinkError *e, int error, const char *reason) {
        return set_string(e, error, IDL_ERROR_NAME(CONFIGURATION_REJECTED), "reason", reason);
}

int varlink_error_internal(VarlinkError *e, int error) {
        return set_string(e, error, IDL_ERROR_NAME(INTERNAL_ERROR), "reason", strerror(error < 0 ? -error : error));
}

int varlink_error_no_such_prekill(VarlinkError *e, int64_t id) {
        return set(e, -ENOENT, IDL_ERROR_NAME(NO_SUCH_PREKILL), json_pack("{s:I}", "id", (json_int_t) id));
}

int varlink_error_invalid_parameter(VarlinkError *e, const char *parameter) {
        return set_string(e, -EINVAL, IDL_ERROR_NAME(VARLINK_INVALID_PARAMETER), "parameter", parameter);
}

int varlink_error_method_not_found(VarlinkError *e, const char *method) {
        return set_string(e, -ENOENT, IDL_ERROR_NAME(VARLINK_METHOD_NOT_FOUND), "method", method);
}

int varlink_error_interface_not_found(VarlinkError *e, const char *interface) {
        return set_string(e, -ENOENT, IDL_ERROR_NAME(VARLINK_INTERFACE_NOT_FOUND), "interface", interface);
}

int varlink_error_expected_more(VarlinkError *e) {
        return set(e, -EINVAL, IDL_ERROR_NAME(VARLINK_EXPECTED_MORE), NULL);
}

int varlink_error_open_files(VarlinkError *e, int error) {
        struct rlimit rl = {};

        (void) getrlimit(RLIMIT_NOFILE, &rl);
        return varlink_error_limit_exceeded(e, error, "open files",
                                            rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t) rl.rlim_cur);
}

int varlink_error_from_errno(VarlinkError *e, int error, const char *source, const char *cgroup,
                             const char *file) {
        char reason[256];
        int errnum = error < 0 ? -error : error;

        switch (errnum) {
        case EMFILE:
        case ENFILE:
                return varlink_error_open_files(e, error);
        case ENOMEM:
                return varlink_error_internal(e, error); /* the daemon's failure, not the source's */
        case ENOENT:
                if (!file)
                        return varlink_error_no_such_cgroup(e, error, cgroup);
                snprintf(reason, sizeof(reason), "%s does not exist", file);
                return varlink_error_source_unavailable(e, error, source, reason);
        case ELOOP:
        case EXDEV:
        case ENOTDIR:
        case ENAMETOOLONG:
                if (!file)
                        return varlink_error_invalid_cgroup_path(e, error, cgroup);
                break;
        case EINVAL:
                if (!file)
                        return varlink_error_invalid_cgroup_path(e, error, cgroup);
                snprintf(reason, sizeof(reason), "the kernel rejected %s: %s", file, strerror(errnum));
                return varlink_error_invalid_trigger(e, error, reason);
        case EOPNOTSUPP:
                snprintf(reason, sizeof(reason), "%s: %s (is PSI or the memory controller disabled?)",
                         file ?: "the cgroup", strerror(errnum));
                return varlink_error_source_unavailable(e, error, source, reason);
        default:
                break;
        }
        snprintf(reason, sizeof(reason), "%s cannot be used: %s", file ?: "the cgroup", strerror(errnum));
        return varlink_error_source_unavailable(e, error, source, reason);
}

void varlink_error_from_failure(VarlinkError *e, const SourceFailure *f, const char *cgroup) {
        switch (f->kind) {
        case SOURCE_FAILURE_NONE:
                break;
        case SOURCE_FAILURE_OPEN:
                (void) varlink_error_from_errno(e, f->error, f->source, cgroup, f->text[0] ? f->text : NULL);
                break;
        case SOURCE_FAILURE_NO_SUCH_CGROUP:
                (void) varlink_error_no_such_cgroup(e, f->error, cgroup);
                break;
        case SOURCE_FAILURE_INVALID_CGROUP_PATH:
                (void) varlink_error_invalid_cgroup_path(e, f->error, cgroup);
                break;
        case SOURCE_FAILURE_UNAVAILABLE:
                (void) varlink_error_source_unavailable(e, f->error, f->source, f->text);
                break;
        case SOURCE_FAILURE_LIMIT:
                (void) varlink_error_limit_exceeded(e, f->error, f->limit, f->value);
                break;
        }
}
