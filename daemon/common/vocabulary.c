/* SPDX-License-Identifier: MIT */
/* The protocol's names that the varlink interface cannot declare as enums; see vocabulary.h. */
#include <errno.h>

#include "util.h"
#include "vocabulary.h"

const char *const voc_reclaim_state_table[_VOC_RECLAIM_STATE_MAX] = {
        [VOC_RECLAIM_STATE_PROBING] = "probing",
        [VOC_RECLAIM_STATE_BACKING_OFF] = "backing-off",
        [VOC_RECLAIM_STATE_AT_FLOOR] = "at-floor",
        [VOC_RECLAIM_STATE_UNSUPPORTED] = "unsupported",
};

const char *const voc_local_event_kind_table[_VOC_LOCAL_EVENT_KIND_MAX] = {
        [VOC_LOCAL_EVENT_KIND_RECONNECTED] = "reconnected",
        [VOC_LOCAL_EVENT_KIND_ERROR] = "error",
};

const char *name_ref_to_string(const NameRef *refs, size_t n, int i) {
        return i >= 0 && (size_t) i < n && refs[i] ? *refs[i] : NULL;
}

int name_ref_from_string(const NameRef *refs, size_t n, const char *s) {
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (refs[i] && streq(*refs[i], s))
                        return (int) i;
        return -EINVAL;
}
