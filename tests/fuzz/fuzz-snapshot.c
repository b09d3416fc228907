/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the takeover state's reader (daemon/model/snapshot.c).
 * Whatever it accepts must encode again, and what that encoding decodes
 * to must encode to the same bytes: nothing is half-read or misread.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "snapshot.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(snapshot_done) Snapshot s = {}, again = {};
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t na, nb;
        int k;

        if (size > FUZZ_INPUT_MAX)
                return 0;
        k = snapshot_decode(data, size, &s);
        if (k == -ENOMEM)
                return 0;
        if (k < 0) {
                if (k != -EBADMSG && k != -E2BIG && k != -EPROTONOSUPPORT)
                        abort();
                return 0;
        }
        if (snapshot_encode(&s, SNAPSHOT_SIZE_MAX, &a, &na) < 0 || snapshot_decode(a, na, &again) < 0 ||
            snapshot_encode(&again, SNAPSHOT_SIZE_MAX, &b, &nb) < 0)
                abort();
        if (na != nb || memcmp(a, b, na) != 0)
                abort();
        return 0;
}
