/* SPDX-License-Identifier: MIT */
/* Log sink selection, level filtering and per-call-site rate limiting. */
#include <stdarg.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static enum { SINK_PLAIN, SINK_PREFIXED, SINK_JOURNAL } sink = SINK_PLAIN;

static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

void log_setup(void) {
        if (stderr_is_journal())
                sink = SINK_JOURNAL;
        else if (getenv("INVOCATION_ID") || getenv("JOURNAL_STREAM"))
                sink = SINK_PREFIXED;
        else
                sink = SINK_PLAIN;
}

void log_set_max_level(int level) {
        max_level = level;
}

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

/* The level as a person reads it at the head of a plain line. */
static const char *plain_level(int level) {
        static const char *const words[] = {
                [LOG_EMERG] = "emergency", [LOG_ALERT] = "alert", [LOG_CRIT] = "critical",
                [LOG_ERR] = "error", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
        };

        return level >= 0 && (size_t) level < ELEMENTSOF(words) ? words[level] : "info";
}

int log_level_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        if (s[0] >= '0' && s[0] <= '7' && s[1] == 0)
                return s[0] - '0';
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        if (level < 0 || (size_t) level >= ELEMENTSOF(level_names))
                return NULL;
        return level_names[level];
}

bool ratelimit_test(RateLimit *rl, uint64_t now) {
        if (rl->begin == 0 || now - rl->begin >= rl->interval_usec) {
                rl->begin = now;
                rl->num = 0;
        }
        if (rl->num < rl->burst) {
                rl->num++;
                return true;
        }
        rl->suppressed++;
        return false;
}

int log_internal(int level, int error, const char *message_id, RateLimit *rl,
                 const char *file, int line, const char *func,
                 const char *format, ...) {
        char buf[2048], suffix[64] = "";
        int saved = errno;
        va_list ap;

        if (error < 0)
                error = -error;
        if (level > max_level)
                return -error;
        if (rl) {
                if (!ratelimit_test(rl, now_usec(CLOCK_MONOTONIC)))
                        return -error;
                if (rl->suppressed > 0) {
                        snprintf(suffix, sizeof(suffix), " (%u similar messages suppressed)",
                                 rl->suppressed);
                        rl->suppressed = 0;
                }
        }

        errno = error;
        va_start(ap, format);
        vsnprintf(buf, sizeof(buf), format, ap);
        va_end(ap);

        switch (sink) {
        case SINK_JOURNAL: {
                char mid[64] = "", lbuf[32], fbuf[64];

                if (message_id)
                        snprintf(mid, sizeof(mid), "MESSAGE_ID=%s", message_id);
                snprintf(lbuf, sizeof(lbuf), "CODE_LINE=%d", line);
                snprintf(fbuf, sizeof(fbuf), "ERRNO=%d", error);
                sd_journal_send("MESSAGE=%s%s", buf, suffix,
                                "PRIORITY=%d", level,
                                "SYSLOG_IDENTIFIER=pressured",
                                "CODE_FILE=%s", file,
                                "CODE_FUNC=%s", func,
                                lbuf,
                                error ? fbuf : mid[0] ? mid : NULL,
                                error && mid[0] ? mid : NULL,
                                NULL);
                break;
        }
        case SINK_PREFIXED:
                fprintf(stderr, "<%d>%s%s\n", level, buf, suffix);
                break;
        case SINK_PLAIN:
                /* A console has no priority field: the level leads the line. */
                fprintf(stderr, "pressured: %s: %s%s\n", plain_level(level), buf, suffix);
                break;
        }

        errno = saved;
        return -error;
}
