/* SPDX-License-Identifier: MIT */
/*
 * The one grammar of durations, for the configuration ([Levels] triggers,
 * the *Sec= and Interval= keys) and for pressurectl (--psi, --timeout,
 * --exec-timeout, top -d, notify --min-interval), and the two ways of
 * writing a duration that it reads back. Pure: no I/O.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * parse_duration - parse a duration into microseconds.
 * @s: decimal digits, optionally a '.' and more digits (either side may be
 *     empty, not both), then an optional unit: us, usec, ms, msec, s, sec,
 *     min. No sign, no exponent, no whitespace, nothing after the unit.
 * @default_unit_usec: what a number without a unit counts: 1 (microseconds,
 *     PSI triggers) or USEC_PER_SEC (seconds, the other keys and options)
 * @max_usec: the largest value accepted
 * @ret_usec: the value; a fraction below one microsecond is dropped. Not
 *     written on failure.
 *
 * Returns 0, -EINVAL for malformed text (empty, no number, a sign, an
 * unknown unit), or -ERANGE for a value above @max_usec or beyond 64 bits.
 */
int parse_duration(const char *s, uint64_t default_unit_usec, uint64_t max_usec, uint64_t *ret_usec);

/*
 * parse_seconds - parse_duration() with seconds for a bare number: "10",
 * "0.5", "500ms", "2min". Returns 0, -EINVAL or -ERANGE as it does.
 */
int parse_seconds(const char *s, uint64_t max_usec, uint64_t *ret_usec);

/*
 * format_seconds - @usec as seconds with as many decimals as it needs:
 * "1", "0.5", "0.000001" ("0" for zero); parse_seconds() reads it back.
 * Returns the length without the NUL, or -ENOBUFS.
 */
int format_seconds(uint64_t usec, char *buf, size_t size);

/*
 * format_duration_us - @usec in the largest unit that keeps it exact:
 * "2s", "150ms", "1500ms", "7us" ("0us" for zero); parse_duration() reads
 * it back. Returns the length without the NUL, or -ENOBUFS.
 */
int format_duration_us(uint64_t usec, char *buf, size_t size);
