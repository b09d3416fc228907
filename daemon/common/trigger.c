/* SPDX-License-Identifier: MIT */
/*
 * Pressure trigger logic: names of the portable levels, PSI stall types and
 * vmpressure modes (the interface's, from vocabulary-idl.h), PSI trigger
 * specs and the rules the kernel applies to them (kernel/sched/psi.c), including the 2 s window
 * granularity imposed on processes without CAP_SYS_RESOURCE.
 * Pure functions: no I/O, no allocation, no global state.
 */
#include <ctype.h>
#include <inttypes.h>

#include "trigger.h"
#include "util.h"

static const char *const resource_file_table[_RESOURCE_MAX] = {
        [RESOURCE_MEMORY] = "memory.pressure",
        [RESOURCE_CPU] = "cpu.pressure",
        [RESOURCE_IO] = "io.pressure",
};

static const char *const resource_proc_file_table[_RESOURCE_MAX] = {
        [RESOURCE_MEMORY] = "/proc/pressure/memory",
        [RESOURCE_CPU] = "/proc/pressure/cpu",
        [RESOURCE_IO] = "/proc/pressure/io",
};

/* level_to_string(), level_from_string(): "low", "medium", "critical". */
DEFINE_STRING_TABLE_LOOKUP_IN(level, Level, idl_level_table)
/* psi_stall_to_string(), psi_stall_from_string(): "some", "full", as the kernel spells them. */
DEFINE_STRING_TABLE_LOOKUP_IN(psi_stall, PsiStall, idl_psi_stall_table)
/* vmpressure_mode_to_string(), vmpressure_mode_from_string(): as written to cgroup.event_control. */
DEFINE_STRING_TABLE_LOOKUP_IN(vmpressure_mode, VmpressureMode, idl_vmpressure_mode_table)
/* resource_to_string(), resource_from_string(): "memory", "cpu", "io", as the pressure files are named. */
DEFINE_STRING_TABLE_LOOKUP_IN(resource, Resource, idl_resource_table)
/* resource_pressure_file(): the file of a cgroup2 directory. */
const char *resource_pressure_file(Resource r) {
        return (size_t) r < ELEMENTSOF(resource_file_table) ? resource_file_table[r] : NULL;
}
/* resource_proc_pressure_file(): the whole system's file. */
const char *resource_proc_pressure_file(Resource r) {
        return (size_t) r < ELEMENTSOF(resource_proc_file_table) ? resource_proc_file_table[r] : NULL;
}

/*
 * psi_trigger_parse - parse "STALL THRESHOLD WINDOW", e.g. "some 150ms 2s".
 * @s: three tokens separated by spaces or tabs; durations as parse_duration(),
 *     a bare number is microseconds
 * @ret: the trigger
 *
 * Does not apply the kernel's range rules; see psi_trigger_check().
 * Returns 0, -EINVAL or -ERANGE.
 */
int psi_trigger_parse(const char *s, PsiTrigger *ret) {
        char tok[3][32];
        const char *p = s;
        PsiTrigger t;
        unsigned n = 0;
        size_t len;
        int r;

        if (!s)
                return -EINVAL;

        for (const char *w; (w = next_word(&p, &len));) {
                if (n >= ELEMENTSOF(tok) || len >= sizeof(tok[0]))
                        return -EINVAL;
                memcpy(tok[n], w, len);
                tok[n][len] = 0;
                n++;
        }
        if (n != ELEMENTSOF(tok))
                return -EINVAL;

        t.stall = psi_stall_from_string(tok[0]);
        if (t.stall < 0)
                return -EINVAL;
        r = parse_duration(tok[1], 1, UINT64_MAX, &t.threshold_us);
        if (r < 0)
                return r;
        r = parse_duration(tok[2], 1, UINT64_MAX, &t.window_us);
        if (r < 0)
                return r;

        *ret = t;
        return 0;
}

/*
 * psi_trigger_check - apply the kernel's rules to a trigger.
 * @t: the trigger
 * @ret_reason: optional; on failure, a static, user-readable reason
 *
 * Window in [500ms, 10s], 0 < threshold <= window, stall some or full.
 * Returns 0 or -EINVAL.
 */
int psi_trigger_check(const PsiTrigger *t, const char **ret_reason) {
        const char *reason = NULL;

        if (t->stall < 0 || t->stall >= _PSI_STALL_MAX)
                reason = "stall must be \"some\" or \"full\"";
        else if (t->window_us < PSI_WINDOW_MIN_US || t->window_us > PSI_WINDOW_MAX_US)
                reason = "window must be between 500ms and 10s";
        else if (t->threshold_us == 0)
                reason = "threshold must be greater than 0";
        else if (t->threshold_us > t->window_us)
                reason = "threshold must not exceed the window";

        if (reason) {
                if (ret_reason)
                        *ret_reason = reason;
                return -EINVAL;
        }
        return 0;
}

/*
 * psi_trigger_check_resource - what a resource adds to the kernel's rules.
 * @t: the trigger
 * @resource: the pressure file it is for
 * @system: whether it is the whole system's file (/proc/pressure)
 * @ret_reason: optional; on failure, a static, user-readable reason
 *
 * Returns 0 or -EINVAL.
 */
int psi_trigger_check_resource(const PsiTrigger *t, Resource resource, bool system, const char **ret_reason) {
        if (resource == RESOURCE_CPU && system && t->stall == PSI_STALL_FULL) {
                if (ret_reason)
                        *ret_reason = "cpu \"full\" pressure is not defined for the whole system (the kernel reports it as zero, so the trigger could never fire); use \"some\", or a cgroup";
                return -EINVAL;
        }
        return 0;
}

/*
 * psi_trigger_format - the text of a trigger.
 * @t: the trigger
 * @format: PSI_TRIGGER_FORMAT_KERNEL, "some 150000 2000000", the line
 *          written to a pressure file; or PSI_TRIGGER_FORMAT_CONFIG,
 *          "some 150ms 2s", what psi_trigger_parse() reads
 * @buf: destination
 * @size: size of @buf (PSI_TRIGGER_FORMAT_MAX is always enough)
 *
 * Returns the length without the terminating NUL, -ENOBUFS if @buf is too
 * small, or -EINVAL for an invalid stall type.
 */
int psi_trigger_format(const PsiTrigger *t, PsiTriggerFormat format, char *buf, size_t size) {
        const char *stall = psi_stall_to_string(t->stall);
        char threshold[24], window[24];
        int n;

        if (!stall)
                return -EINVAL;
        if (format == PSI_TRIGGER_FORMAT_KERNEL)
                n = snprintf(buf, size, "%s %" PRIu64 " %" PRIu64, stall, t->threshold_us, t->window_us);
        else {
                (void) format_duration_us(t->threshold_us, threshold, sizeof(threshold));
                (void) format_duration_us(t->window_us, window, sizeof(window));
                n = snprintf(buf, size, "%s %s %s", stall, threshold, window);
        }
        if (n < 0)
                return -EINVAL;
        if ((size_t) n >= size)
                return -ENOBUFS;
        return n;
}

/*
 * psi_trigger_round_unprivileged - the trigger a process without
 * CAP_SYS_RESOURCE may register.
 * @t: the requested trigger
 * @ret: the window rounded up to a multiple of 2 s, the threshold scaled by
 *       new_window/old_window, rounded up and capped at the new window
 *
 * Returns true if @ret differs from @t.
 */
bool psi_trigger_round_unprivileged(const PsiTrigger *t, PsiTrigger *ret) {
        PsiTrigger n = *t;
        uint64_t rem = t->window_us % PSI_UNPRIV_WINDOW_US;

        if (rem != 0) {
                if (t->window_us > UINT64_MAX - (PSI_UNPRIV_WINDOW_US - rem))
                        n.window_us = UINT64_MAX - UINT64_MAX % PSI_UNPRIV_WINDOW_US;
                else
                        n.window_us = t->window_us + (PSI_UNPRIV_WINDOW_US - rem);
        }

        if (n.window_us != t->window_us && t->window_us > 0) {
                unsigned __int128 scaled = (unsigned __int128) t->threshold_us * n.window_us;

                scaled = (scaled + t->window_us - 1) / t->window_us;
                n.threshold_us = scaled > n.window_us ? n.window_us : (uint64_t) scaled;
        }

        *ret = n;
        return !psi_trigger_equal(&n, t);
}

/* psi_trigger_equal - true if both triggers register the same thing. */
bool psi_trigger_equal(const PsiTrigger *a, const PsiTrigger *b) {
        return a->stall == b->stall && a->threshold_us == b->threshold_us &&
               a->window_us == b->window_us;
}
