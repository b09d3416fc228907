/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the table-driven decoder and encoder (protocol/wire.c). The
 * input's first line names a record of the interfaces (its WireType's
 * name, e.g. "SubscribeParams"; a trailing "~" decodes leniently, as a
 * client does), the rest is JSON. What decodes must encode, and
 * encode -> decode -> encode must give the same bytes: the encoder writes
 * nothing its own decoder reads differently. The only value that may not
 * encode is an unknown name a lenient decoder kept as -1. A failure must
 * say where (a path within bounds) and why.
 */
#include <jansson.h>

#include "fuzz.h"
#include "idl-types.h"
#include "util.h"
#include "wire.h"

static const WireType *type_named(const char *name, size_t len) {
        for (size_t i = 0; i < idl_n_types; i++)
                if (strlen(idl_types[i]->name) == len && memcmp(idl_types[i]->name, name, len) == 0)
                        return idl_types[i];
        return NULL;
}

/* @text decoded as @t with @flags and encoded again; NULL when it does not decode, or not encode. */
static char *round_trip(const char *text, size_t size, const WireType *t, unsigned flags) {
        json_t *v = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
        WireDecode d = { .flags = flags };
        void *obj = calloc(1, t->size ?: 1);
        char *out = NULL;
        WireWriter w;
        size_t n;
        int k;

        if (!v || !obj) {
                json_decref(v);
                free(obj);
                return NULL;
        }
        k = wire_decode(v, t, obj, &d);
        if (k < 0 && k != -ENOMEM && (d.failure == WIRE_FAIL_NONE || strlen(d.path) >= WIRE_PATH_MAX))
                abort();
        if (k >= 0) {
                wire_writer_init(&w, 0);
                k = wire_write_object(&w, t, obj, NULL);
                if (k >= 0)
                        k = wire_writer_take(&w, &out, &n);
                wire_writer_done(&w);
                if (k < 0 && k != -ENOMEM && !(k == -EINVAL && (flags & WIRE_DECODE_LENIENT)))
                        abort();
        }
        wire_decode_done(&d);
        free(obj);
        json_decref(v);
        return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *text = (const char *) data, *nl = memchr(text, '\n', size);
        size_t len;
        unsigned flags = 0;
        const WireType *t;
        char *once, *twice;

        if (!nl || size > FUZZ_INPUT_MAX)
                return 0;
        len = (size_t) (nl - text);
        if (len > 0 && text[len - 1] == '~') {
                flags = WIRE_DECODE_LENIENT;
                len--;
        }
        t = type_named(text, len);
        if (!t)
                return 0;
        once = round_trip(nl + 1, size - len - 1 - (flags ? 1 : 0), t, flags);
        if (!once)
                return 0;
        /* What the encoder wrote, its decoder reads, and it encodes to the same bytes. */
        twice = round_trip(once, strlen(once), t, flags);
        if (!twice || !streq(once, twice))
                abort();
        free(once);
        free(twice);
        return 0;
}
