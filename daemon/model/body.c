/* SPDX-License-Identifier: MIT */
/* Shared serialized events. */
#include <stdlib.h>
#include <string.h>

#include "body.h"

Body *body_new(const char *data, size_t size) {
        Body *b = malloc(sizeof(Body) + size);

        if (!b)
                return NULL;
        b->n_ref = 1;
        b->size = size;
        b->monotonic_us = 0;
        b->flags = 0;
        b->level = -1;
        b->views = b->next_view = NULL;
        b->view_root = NULL;
        memcpy(b->data, data, size);
        return b;
}

Body *body_ref(Body *b) {
        if (b)
                b->n_ref++;
        return b;
}

Body *body_unref(Body *b) {
        Body *v;

        if (!b || --b->n_ref > 0)
                return NULL;
        /* Views have no views of their own: one level. */
        while ((v = b->views)) {
                b->views = v->next_view;
                body_unref(v);
        }
        free(b->view_root);
        free(b);
        return NULL;
}
