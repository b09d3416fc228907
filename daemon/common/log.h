/* SPDX-License-Identifier: MIT */
/*
 * Logging for the daemon. Messages go to the journal with structured fields
 * (MESSAGE_ID, PRIORITY, CODE_*) when stderr is connected to it, to stderr
 * with a "<N>" priority prefix when running under systemd otherwise, and to
 * stderr as "pressured: LEVEL: message" when run by hand (LEVEL one of
 * debug, info, notice, warning, error, critical, alert, emergency). Repeated messages can be rate
 * limited per call site so that pressure storms cannot flood the log.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "util.h"

/* Catalogue of message IDs (journalctl MESSAGE_ID=...). Never reuse one. */
#define MESSAGE_ID_STARTED             "8fc1a063539d4ee6be808343a4e7ba83"
#define MESSAGE_ID_STOPPED             "047484cce800486ba342bc412ce57d94"
#define MESSAGE_ID_REGISTRATION_ADDED  "51e8f90fe07e4fe2aaa283e3723e68bd"
#define MESSAGE_ID_REGISTRATION_REMOVED "7e11dfd0948748258fc916158f8572c7"
#define MESSAGE_ID_LIMIT_HIT           "53e3c4652bf7400389e9352e23b6a9bc"
#define MESSAGE_ID_RELOADED            "bb8dd7f7f9864ea0b5fbcdf483a9a349"
#define MESSAGE_ID_CONFIG_REJECTED     "e8968915283b4de1a599e8a2f21778e2"
#define MESSAGE_ID_RECLAIM             "5d832f8296c64af3b2c682f6138468cc"
#define MESSAGE_ID_TAKEOVER            "6402ef33ebb84b7c9425efe27e3af555"

typedef struct RateLimit {
        uint64_t interval_usec;
        unsigned burst;
        uint64_t begin;
        unsigned num;
        unsigned suppressed;
} RateLimit;

/* log_setup - decide between journal, prefixed stderr and plain stderr. */
void log_setup(void);
void log_set_max_level(int level);

/* Parse "debug", "info", "notice", "warning", "err" (and numeric 0..7). */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

/*
 * log_internal - emit one message.
 * @level: syslog priority
 * @error: errno value (positive or negative) for %m, or 0
 * @message_id: catalogue ID or NULL
 * @rl: rate limit state of the call site, or NULL
 *
 * Returns -abs(error), so "return log_error_errno(r, ...)" forwards r.
 */
int log_internal(int level, int error, const char *message_id, RateLimit *rl,
                 const char *file, int line, const char *func,
                 const char *format, ...) _printf_(8, 9);

#define log_full_errno(level, error, id, ...) \
        log_internal((level), (error), (id), NULL, __FILE__, __LINE__, __func__, __VA_ARGS__)

#define log_debug(...)   log_full_errno(LOG_DEBUG, 0, NULL, __VA_ARGS__)
#define log_info(...)    log_full_errno(LOG_INFO, 0, NULL, __VA_ARGS__)
#define log_notice(...)  log_full_errno(LOG_NOTICE, 0, NULL, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, NULL, __VA_ARGS__)
#define log_error(...)   log_full_errno(LOG_ERR, 0, NULL, __VA_ARGS__)

#define log_debug_errno(e, ...)   log_full_errno(LOG_DEBUG, (e), NULL, __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_INFO, (e), NULL, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), NULL, __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_ERR, (e), NULL, __VA_ARGS__)

/* Structured message with a MESSAGE_ID. */
#define log_struct(level, id, ...) log_full_errno((level), 0, (id), __VA_ARGS__)

/*
 * Rate-limited logging: at most @burst messages per @interval seconds from
 * this call site; the next message that gets through reports how many were
 * suppressed.
 */
#define log_ratelimited(level, error, id, interval_sec, burst_n, ...)                      \
        ({                                                                                 \
                static RateLimit _rl = { .interval_usec = (interval_sec) * USEC_PER_SEC,   \
                                         .burst = (burst_n) };                             \
                log_internal((level), (error), (id), &_rl, __FILE__, __LINE__, __func__,   \
                             __VA_ARGS__);                                                 \
        })

/* Exposed for tests: returns true if a message may be emitted now. */
bool ratelimit_test(RateLimit *rl, uint64_t now);
