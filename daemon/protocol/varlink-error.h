/* SPDX-License-Identifier: MIT */
/*
 * The varlink errors the daemon answers, one typed constructor per error
 * declared in io.pressured.varlink and per org.varlink.service error we
 * use, so that every reply carries exactly the declared parameters; and
 * the one mapping from a failed kernel open or registration (an errno) to
 * the declared error. Pure: no I/O beyond getrlimit(), no event loop.
 *
 * Every constructor fills @e (dropping what it held) and returns the
 * negative errno it is given, so a caller writes
 * "return varlink_error_no_such_cgroup(e, -ENOENT, cgroup);".
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "source-failure.h"

/*
 * A varlink error to send: its name (static) and its parameters (owned);
 * @detail (static, or NULL) says more for the log line only, where the
 * interface declares no parameter for it (why a cgroup path is invalid).
 */
typedef struct VarlinkError {
        const char *name;
        json_t *parameters;
        const char *detail;
} VarlinkError;

/* varlink_error_done - drop what @e holds and reset it to "no error". */
void varlink_error_done(VarlinkError *e);

/* io.pressured.NoSuchCgroup (cgroup). */
int varlink_error_no_such_cgroup(VarlinkError *e, int error, const char *cgroup);
/*
 * io.pressured.InvalidCgroupPath (cgroup); @cgroup NULL is sent as "".
 * The detail is the reason (cgroup.h): the rule @cgroup breaks, else
 * what the failed open @error says of it.
 */
int varlink_error_invalid_cgroup_path(VarlinkError *e, int error, const char *cgroup);
/* io.pressured.PermissionDenied (reason); returns -EACCES. */
int varlink_error_permission_denied(VarlinkError *e, const char *reason);
/* io.pressured.SourceUnavailable (source, reason). */
int varlink_error_source_unavailable(VarlinkError *e, int error, const char *source, const char *reason);
/* io.pressured.InvalidTrigger (reason). */
int varlink_error_invalid_trigger(VarlinkError *e, int error, const char *reason);
/* io.pressured.LimitExceeded (limit, value). */
int varlink_error_limit_exceeded(VarlinkError *e, int error, const char *limit, uint64_t value);
/* io.pressured.ConfigurationRejected (reason). */
int varlink_error_configuration_rejected(VarlinkError *e, int error, const char *reason);
/* io.pressured.InternalError (reason): the daemon failed (out of memory, ...); reason is strerror(@error). */
int varlink_error_internal(VarlinkError *e, int error);

/* io.pressured.NoSuchPrekill (id); returns -ENOENT. */
int varlink_error_no_such_prekill(VarlinkError *e, int64_t id);

/* org.varlink.service.InvalidParameter (parameter); returns -EINVAL. */
int varlink_error_invalid_parameter(VarlinkError *e, const char *parameter);
/* org.varlink.service.MethodNotFound (method); returns -ENOENT. */
int varlink_error_method_not_found(VarlinkError *e, const char *method);
/* org.varlink.service.InterfaceNotFound (interface); returns -ENOENT. */
int varlink_error_interface_not_found(VarlinkError *e, const char *interface);
/* org.varlink.service.ExpectedMore (); returns -EINVAL. */
int varlink_error_expected_more(VarlinkError *e);

/*
 * varlink_error_open_files - LimitExceeded for the open-files limit, whose
 * value is the soft RLIMIT_NOFILE of the daemon.
 * @e: filled
 * @error: -EMFILE or -ENFILE, returned
 */
int varlink_error_open_files(VarlinkError *e, int error);

/*
 * varlink_error_from_errno - the declared error for a failed open or
 * kernel registration, the one place that decides it.
 * @e: filled
 * @error: the negative errno of the failure
 * @source: the source being set up ("psi", "vmpressure", "memory_events",
 *          "protection"), named by SourceUnavailable
 * @cgroup: the cgroup, named by NoSuchCgroup and InvalidCgroupPath
 * @file: NULL when the cgroup directory itself failed to open; otherwise
 *        what failed inside it, in words ("memory.pressure", "the trigger
 *        \"some 150ms 2s\""), used in the reason
 *
 * The cgroup directory: ENOENT is NoSuchCgroup; ELOOP, EXDEV, ENOTDIR,
 * EINVAL and ENAMETOOLONG are InvalidCgroupPath. Anything inside it:
 * ENOENT is SourceUnavailable (the file is missing), EINVAL is
 * InvalidTrigger (the kernel rejected the registration). Either:
 * EMFILE/ENFILE is LimitExceeded "open files"; ENOMEM is InternalError;
 * EACCES, EPERM, EOPNOTSUPP and every other errno is SourceUnavailable
 * with the reason. Returns @error.
 */
int varlink_error_from_errno(VarlinkError *e, int error, const char *source, const char *cgroup,
                             const char *file);

/*
 * varlink_error_from_failure - the declared error for what a source, the
 * registry or the source choice said of its failure: the one place below
 * the methods that names a SourceFailure for the wire.
 * @e: filled, unless @f says nothing (SOURCE_FAILURE_NONE)
 * @f: the cause
 * @cgroup: the cgroup the request named, for NoSuchCgroup and
 *          InvalidCgroupPath
 *
 * An open is mapped by varlink_error_from_errno() (its file, or the
 * directory when there is none); the other kinds are their error, with
 * the source, reason or limit of @f.
 */
void varlink_error_from_failure(VarlinkError *e, const SourceFailure *f, const char *cgroup);
