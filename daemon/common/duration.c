/* SPDX-License-Identifier: MIT */
/* The duration grammar shared by the configuration and pressurectl. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "util.h"

static const struct {
        const char *suffix;
        uint64_t usec;
} duration_units[] = {
        { "us",   1 },
        { "usec", 1 },
        { "ms",   USEC_PER_MSEC },
        { "msec", USEC_PER_MSEC },
        { "s",    USEC_PER_SEC },
        { "sec",  USEC_PER_SEC },
        { "min",  60 * USEC_PER_SEC },
};

/* The microseconds of the unit @suffix; @default_unit for none, 0 if unknown. */
static uint64_t unit_usec(const char *suffix, uint64_t default_unit) {
        if (*suffix == 0)
                return default_unit;
        for (size_t i = 0; i < ELEMENTSOF(duration_units); i++)
                if (streq(suffix, duration_units[i].suffix))
                        return duration_units[i].usec;
        return 0;
}

int parse_duration(const char *s, uint64_t default_unit_usec, uint64_t max_usec, uint64_t *ret_usec) {
        const char *p = s, *int_begin, *int_end, *frac_begin = NULL, *frac_end = NULL;
        uint64_t mult, whole = 0, frac = 0;

        if (!s || default_unit_usec == 0)
                return -EINVAL;

        int_begin = p;
        while (isdigit((unsigned char) *p))
                p++;
        int_end = p;
        if (*p == '.') {
                frac_begin = ++p;
                while (isdigit((unsigned char) *p))
                        p++;
                frac_end = p;
                if (frac_end == frac_begin)
                        return -EINVAL;
        }
        if (int_end == int_begin && !frac_begin)
                return -EINVAL;

        mult = unit_usec(p, default_unit_usec);
        if (mult == 0)
                return -EINVAL;

        for (const char *q = int_begin; q < int_end; q++) {
                unsigned d = (unsigned) (*q - '0');

                if (whole > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                whole = whole * 10 + d;
        }
        if (whole > UINT64_MAX / mult)
                return -ERANGE;
        whole *= mult;

        /* Each fractional digit is worth mult/10, mult/100, ...; stop once that is below 1 us. */
        if (frac_begin) {
                uint64_t scale = mult;

                for (const char *q = frac_begin; q < frac_end && scale >= 10; q++) {
                        scale /= 10;
                        frac += (uint64_t) (*q - '0') * scale;
                }
        }
        if (whole > UINT64_MAX - frac || whole + frac > max_usec)
                return -ERANGE;

        *ret_usec = whole + frac;
        return 0;
}

int parse_seconds(const char *s, uint64_t max_usec, uint64_t *ret_usec) {
        return parse_duration(s, USEC_PER_SEC, max_usec, ret_usec);
}

/* snprintf()'s result as the formatters of this file return it. */
static int formatted(int n, size_t size) {
        return n < 0 || (size_t) n >= size ? -ENOBUFS : n;
}

int format_seconds(uint64_t usec, char *buf, size_t size) {
        uint64_t frac = usec % USEC_PER_SEC;
        int digits = 6;

        if (frac == 0)
                return formatted(snprintf(buf, size, "%" PRIu64, usec / USEC_PER_SEC), size);
        while (frac % 10 == 0) {
                frac /= 10;
                digits--;
        }
        return formatted(snprintf(buf, size, "%" PRIu64 ".%0*" PRIu64, usec / USEC_PER_SEC, digits, frac), size);
}

int format_duration_us(uint64_t usec, char *buf, size_t size) {
        if (usec != 0 && usec % USEC_PER_SEC == 0)
                return formatted(snprintf(buf, size, "%" PRIu64 "s", usec / USEC_PER_SEC), size);
        if (usec != 0 && usec % USEC_PER_MSEC == 0)
                return formatted(snprintf(buf, size, "%" PRIu64 "ms", usec / USEC_PER_MSEC), size);
        return formatted(snprintf(buf, size, "%" PRIu64 "us", usec), size);
}
