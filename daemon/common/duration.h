/* SPDX-License-Identifier: MIT */
/*
 * The one grammar of durations, for the configuration ([Levels] triggers,
 * the *Sec= and Interval= keys) and for pressurectl (--psi, --timeout,
 * --exec-timeout, top -d, notify --min-interval). Pure: no I/O.
 */
#pragma once

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
