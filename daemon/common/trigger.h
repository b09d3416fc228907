/* SPDX-License-Identifier: MIT */
/*
 * Pure logic for pressure triggers: the portable levels, PSI trigger specs
 * ("some 150ms 2s"), the kernel's validity rules, the rounding applied when
 * the kernel only accepts 2 s multiples, and vmpressure levels/modes.
 * The enums are those of the varlink interface (vocabulary-idl.h), their
 * names its names.
 * No I/O, no libevent.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "duration.h"
#include "vocabulary.h"

typedef enum Level {
        LEVEL_LOW = IDL_LEVEL_LOW,
        LEVEL_MEDIUM = IDL_LEVEL_MEDIUM,
        LEVEL_CRITICAL = IDL_LEVEL_CRITICAL,
        _LEVEL_MAX = _IDL_LEVEL_MAX,
        _LEVEL_INVALID = -1,
} Level;

typedef enum PsiStall {
        PSI_STALL_SOME = IDL_PSI_STALL_SOME,
        PSI_STALL_FULL = IDL_PSI_STALL_FULL,
        _PSI_STALL_MAX = _IDL_PSI_STALL_MAX,
        _PSI_STALL_INVALID = -1,
} PsiStall;

typedef enum VmpressureMode {
        VMPRESSURE_MODE_DEFAULT = IDL_VMPRESSURE_MODE_DEFAULT,
        VMPRESSURE_MODE_HIERARCHY = IDL_VMPRESSURE_MODE_HIERARCHY,
        VMPRESSURE_MODE_LOCAL = IDL_VMPRESSURE_MODE_LOCAL,
        _VMPRESSURE_MODE_MAX = _IDL_VMPRESSURE_MODE_MAX,
        _VMPRESSURE_MODE_INVALID = -1,
} VmpressureMode;

/* The resource a PSI trigger watches: which pressure file it is written to. */
typedef enum Resource {
        RESOURCE_MEMORY = IDL_RESOURCE_MEMORY, /* the default: memory.pressure, /proc/pressure/memory */
        RESOURCE_CPU = IDL_RESOURCE_CPU,
        RESOURCE_IO = IDL_RESOURCE_IO,
        _RESOURCE_MAX = _IDL_RESOURCE_MAX,
        _RESOURCE_INVALID = -1,
} Resource;

typedef struct PsiTrigger {
        PsiStall stall;
        uint64_t threshold_us;
        uint64_t window_us;
} PsiTrigger;

/* Kernel limits (kernel/sched/psi.c). */
#define PSI_WINDOW_MIN_US UINT64_C(500000)
#define PSI_WINDOW_MAX_US UINT64_C(10000000)
/* Without CAP_SYS_RESOURCE the window must be a multiple of this. */
#define PSI_UNPRIV_WINDOW_US UINT64_C(2000000)

Level level_from_string(const char *s);
const char *level_to_string(Level l);
PsiStall psi_stall_from_string(const char *s);
const char *psi_stall_to_string(PsiStall s);
VmpressureMode vmpressure_mode_from_string(const char *s);
const char *vmpressure_mode_to_string(VmpressureMode m);
/* resource_from_string(), resource_to_string(): "memory", "cpu", "io". */
Resource resource_from_string(const char *s);
const char *resource_to_string(Resource r);
/* resource_pressure_file - "memory.pressure", "cpu.pressure", "io.pressure"; NULL if out of range. */
const char *resource_pressure_file(Resource r);
/* resource_proc_pressure_file - "/proc/pressure/memory" and so on; NULL if out of range. */
const char *resource_proc_pressure_file(Resource r);

/*
 * psi_trigger_parse - parse "STALL THRESHOLD WINDOW", e.g. "some 150ms 2s".
 * Whitespace-separated; units as parse_duration(), a bare number
 * is microseconds. Does not apply the
 * kernel's range rules; see psi_trigger_check().
 */
int psi_trigger_parse(const char *s, PsiTrigger *ret);

/*
 * psi_trigger_check - the kernel's rules: window in [500ms, 10s],
 * 0 < threshold <= window. Returns 0 or -EINVAL with a static reason.
 */
int psi_trigger_check(const PsiTrigger *t, const char **ret_reason);

/*
 * psi_trigger_check_resource - the rules a resource adds: CPU "full"
 * pressure is not defined for the whole system (since Linux 5.19 the
 * kernel reports zeroes for it in /proc/pressure/cpu, and accepts a
 * "full" trigger there that can never fire), so @system with
 * RESOURCE_CPU and a "full" stall is refused.
 * Returns 0 or -EINVAL with a static reason.
 */
int psi_trigger_check_resource(const PsiTrigger *t, Resource resource, bool system, const char **ret_reason);

typedef enum PsiTriggerFormat {
        PSI_TRIGGER_FORMAT_KERNEL,   /* "some 150000 2000000", as written to a pressure file */
        PSI_TRIGGER_FORMAT_CONFIG,   /* "some 150ms 2s", as [Levels] and pressurectl --psi take it */
} PsiTriggerFormat;

/* Room for any trigger in either format, with the NUL. */
#define PSI_TRIGGER_FORMAT_MAX 64

/*
 * psi_trigger_format - the text of a trigger. The kernel format is
 * written to the pressure file including the trailing NUL; the config
 * format reads back through psi_trigger_parse() to the same trigger.
 * Returns the length without the NUL, -ENOBUFS, or -EINVAL for an
 * invalid stall type.
 */
int psi_trigger_format(const PsiTrigger *t, PsiTriggerFormat format, char *buf, size_t size);

/*
 * psi_trigger_round_unprivileged - the trigger an unprivileged process may
 * register: window rounded up to a multiple of 2 s, threshold scaled by the
 * same factor (rounded up, and never above the new window). Returns true if
 * anything changed.
 */
bool psi_trigger_round_unprivileged(const PsiTrigger *t, PsiTrigger *ret);

bool psi_trigger_equal(const PsiTrigger *a, const PsiTrigger *b);
