/* SPDX-License-Identifier: MIT */
/*
 * What systemd-oomd reads of its configuration for its pre-kill hook:
 * PrekillHookTimeoutSec= of [OOM] in oomd.conf and its drop-ins, found and
 * merged as oomd finds and merges them (oomd.conf(5)), written in
 * systemd's time spans (systemd.time(7)). The daemon reads it at each
 * call of the hook to derive the deadline of its warnings ([Prekill]
 * Deadline= unset). Files only, no event loop; the root of the tree is a
 * parameter, so that tests read fixture trees.
 */
#pragma once

#include <stdint.h>

/* The directories oomd reads oomd.conf from, highest priority first, relative to the root. */
#define OOMD_CONF_N_DIRS 4
extern const char *const oomd_conf_dirs[OOMD_CONF_N_DIRS];

/* The most drop-ins read, and the largest file. */
#define OOMD_CONF_DROPINS_MAX 256
#define OOMD_CONF_FILE_MAX (1024 * 1024)

/* What oomd would make of its files. */
typedef struct OomdConf {
        uint64_t prekill_timeout_usec;  /* PrekillHookTimeoutSec=; 0: none, the default */
        unsigned files;                 /* files read: the main one (if any) and the drop-ins */
        unsigned ignored;               /* assignments of PrekillHookTimeoutSec= oomd ignores (bad values) */
} OomdConf;

/*
 * oomd_timespan_parse - a systemd time span: one or more numbers, each
 * with an optional fraction and an optional unit ("5s", "1min 500ms",
 * "1.5h", "2min30s"; a number without a unit is seconds), or "infinity"
 * (USEC_INFINITY). Units: us usec µs μs, ms msec, s sec second seconds,
 * m min minute minutes, h hr hour hours, d day days, w week weeks, M
 * month months, y year years.
 * Returns 0 with @ret_usec, -EINVAL for malformed text, -ERANGE beyond 64 bits.
 */
int oomd_timespan_parse(const char *s, uint64_t *ret_usec);

/*
 * oomd_conf_apply - apply one file's text @text to @conf as oomd does:
 * "[OOM]" assignments of PrekillHookTimeoutSec= replace the value (an
 * empty one restores the default, 0); one that is not a time span, or is
 * below 1 s but not 0, or infinite, is ignored (counted); comments ("#",
 * ";"), other sections and other keys are skipped.
 */
void oomd_conf_apply(OomdConf *conf, const char *text);

/*
 * oomd_conf_read - oomd's configuration under @root ("/" for the system):
 * the first of the oomd.conf files of oomd_conf_dirs, then the *.conf
 * drop-ins of their oomd.conf.d/, by file name across the directories (a
 * name in a directory of higher priority hides it in those below; an empty
 * file or a link to /dev/null masks), later ones winning. Missing files
 * and directories are fine; one that cannot be read is skipped.
 * Returns 0 with @ret filled, or -ENOMEM.
 */
int oomd_conf_read(const char *root, OomdConf *ret);
