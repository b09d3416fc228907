/* SPDX-License-Identifier: MIT */
/* sd-event, resolved in the program that uses it (sd-event-api.h). */
#include <dlfcn.h>
#include <errno.h>

#include "sd-event-api.h"

/* Looks @name up among the objects the program has loaded; NULL if none has it. */
static void *lookup(const char *name) {
        return dlsym(RTLD_DEFAULT, name);
}

int sd_event_api_resolve(SdEventApi *ret) {
        SdEventApi api;

        /* POSIX: a function pointer fits a void * (dlsym() depends on it). */
        *(void **) &api.event_default = lookup("sd_event_default");
        *(void **) &api.event_ref = lookup("sd_event_ref");
        *(void **) &api.event_unref = lookup("sd_event_unref");
        *(void **) &api.add_io = lookup("sd_event_add_io");
        *(void **) &api.source_set_priority = lookup("sd_event_source_set_priority");
        *(void **) &api.source_set_description = lookup("sd_event_source_set_description");
        *(void **) &api.source_unref = lookup("sd_event_source_unref");
        if (!api.event_default || !api.event_ref || !api.event_unref || !api.add_io ||
            !api.source_set_priority || !api.source_set_description || !api.source_unref)
                return -EOPNOTSUPP;
        *ret = api;
        return 0;
}
