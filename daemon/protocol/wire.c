/* SPDX-License-Identifier: MIT */
/* The table-driven encoder and decoder of the wire format: see wire.h. */
#include <errno.h>
#include <jansson.h>
#include <locale.h>
#include <math.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "util.h"
#include "wire.h"

const char wire_null_str[] = "null";

/* ---- the writer ---- */

void wire_writer_init(WireWriter *w, unsigned flags) {
        w->buf = w->stack;
        w->size = 0;
        w->allocated = sizeof(w->stack);
        w->flags = flags;
}

void wire_writer_done(WireWriter *w) {
        if (w->buf != w->stack)
                free(w->buf);
        wire_writer_init(w, w->flags);
}

/* Room for @n more bytes. */
static int reserve(WireWriter *w, size_t n) {
        size_t want = w->allocated;
        char *p;

        if (w->size + n <= w->allocated)
                return 0;
        while (want < w->size + n)
                want *= 2;
        p = w->buf == w->stack ? malloc(want) : realloc(w->buf, want);
        if (!p)
                return -ENOMEM;
        if (w->buf == w->stack)
                memcpy(p, w->stack, w->size);
        w->buf = p;
        w->allocated = want;
        return 0;
}

static int put(WireWriter *w, const char *s, size_t n) {
        int k = reserve(w, n);

        if (k < 0)
                return k;
        memcpy(w->buf + w->size, s, n);
        w->size += n;
        return 0;
}

#define PUT_LITERAL(w, s) put(w, s, sizeof(s) - 1)

int wire_writer_take(WireWriter *w, char **ret, size_t *ret_size) {
        int k = reserve(w, 1);
        char *p;

        if (k < 0)
                return k;
        w->buf[w->size++] = 0;
        if (w->buf == w->stack) {
                p = malloc(w->size);
                if (!p)
                        return -ENOMEM;
                memcpy(p, w->stack, w->size);
        } else
                p = w->buf;
        *ret = p;
        *ret_size = w->size;
        w->buf = w->stack;
        wire_writer_init(w, w->flags);
        return 0;
}

char *wire_put_u64(char *p, uint64_t v) {
        char digits[20];
        size_t n = 0;

        do {
                digits[n++] = (char) ('0' + v % 10);
                v /= 10;
        } while (v > 0);
        while (n > 0)
                *p++ = digits[--n];
        return p;
}

/* ---- values ---- */

/* Integers as jansson writes a json_int_t: what is above its range is its largest value. */
static int put_u64(WireWriter *w, uint64_t v) {
        char buf[20];

        return put(w, buf, (size_t) (wire_put_u64(buf, v > INT64_MAX ? INT64_MAX : v) - buf));
}

/*
 * A real as jansson writes one: "%.<precision>g" with the locale's decimal
 * point as ".", ".0" added when the text has neither "." nor "e", the
 * exponent without "+" and leading zeros.
 */
static int put_real(WireWriter *w, double v) {
        const char *point = localeconv()->decimal_point;
        char buf[32], *e;
        int n;

        if (!isfinite(v))
                return -EINVAL;
        n = snprintf(buf, sizeof(buf) - 2, "%.*g", w->flags & WIRE_WRITE_DECIMAL ? 15 : 6, v);
        if (n < 0 || (size_t) n >= sizeof(buf) - 2)
                return -EINVAL;
        if (point[0] != '.' && point[0])
                for (char *c = buf; *c; c++)
                        if (*c == point[0])
                                *c = '.';
        if (!strchr(buf, '.') && !strchr(buf, 'e')) {
                memcpy(buf + n, ".0", 3);
                n += 2;
        }
        e = strchr(buf, 'e');
        if (e) {
                char *digits = e + 1 + (e[1] == '-'), *from = e + 1;

                while (*from == '+' || *from == '-' || (*from == '0' && from[1]))
                        from++;
                memmove(digits, from, strlen(from) + 1);
                n = (int) strlen(buf);
        }
        return put(w, buf, (size_t) n);
}

/*
 * The code point of the UTF-8 sequence at @s (@n bytes left) and its length,
 * or 0 if it is not one: a stray continuation byte, a sequence cut short,
 * an overlong form, a surrogate or a value above U+10FFFF.
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *ret) {
        static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
        size_t len = s[0] < 0x80 ? 1 : s[0] < 0xc0 ? 0 : s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : s[0] < 0xf8 ? 4 : 0;
        uint32_t c;

        if (len == 0 || len > n)
                return 0;
        c = len == 1 ? s[0] : s[0] & (0x7f >> len);
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        if (c < least[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return len;
}

/* "\uXXXX" of the UTF-16 unit @u, in capitals as jansson writes it. */
static int put_unit(WireWriter *w, uint32_t u) {
        static const char hex[] = "0123456789ABCDEF";
        char buf[6] = { '\\', 'u', hex[u >> 12 & 0xf], hex[u >> 8 & 0xf], hex[u >> 4 & 0xf], hex[u & 0xf] };

        return put(w, buf, sizeof(buf));
}

/* The escape of code point @c, which is not to be written as it is. */
static int put_escape(WireWriter *w, uint32_t c) {
        static const char short_forms[][3] = {
                ['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t",
                ['"'] = "\\\"", ['\\'] = "\\\\",
        };
        int k;

        if (c < ELEMENTSOF(short_forms) && short_forms[c][0])
                return put(w, short_forms[c], 2);
        if (c < 0x10000)
                return put_unit(w, c);
        c -= 0x10000;
        k = put_unit(w, 0xd800 | (c >> 10));
        return k < 0 ? k : put_unit(w, 0xdc00 | (c & 0x3ff));
}

/* @s (NUL-terminated) as a JSON string: ASCII, escaped as jansson does with JSON_ENSURE_ASCII. */
static int put_string(WireWriter *w, const char *s) {
        const unsigned char *p = (const unsigned char *) s, *end = p + strlen(s), *run = p;
        int k = PUT_LITERAL(w, "\"");

        while (k >= 0 && p < end) {
                uint32_t c;
                size_t len = utf8_next(p, (size_t) (end - p), &c);

                if (len == 0)
                        return -EILSEQ;
                if (c >= 0x20 && c != '"' && c != '\\' && c <= 0x7f) {
                        p += len;
                        continue;
                }
                k = put(w, (const char *) run, (size_t) (p - run));
                if (k >= 0)
                        k = put_escape(w, c);
                p += len;
                run = p;
        }
        if (k >= 0)
                k = put(w, (const char *) run, (size_t) (p - run));
        return k < 0 ? k : PUT_LITERAL(w, "\"");
}

/* Whether the canonical cgroup @path is @root or one of its ancestors. */
static bool path_is_at_or_above(const char *path, const char *root) {
        size_t n = strlen(path);

        if (streq(path, "/"))
                return true;
        return strncmp(root, path, n) == 0 && (root[n] == 0 || root[n] == '/');
}

/* @c as @view names it (see IdlCgroup). */
static int put_cgroup(WireWriter *w, const IdlCgroup *c, const CgroupView *view) {
        const char *root = c->named ? NULL : cgroup_view_root(view, c->v1), *name;

        if (!root || streq(root, "/"))
                return put_string(w, c->path);
        name = cgroup_view_from_real(root, c->path);
        if (!name && path_is_at_or_above(c->path, root))
                name = "/";
        if (!name)
                return -EXDEV;
        return put_string(w, name);
}

/* ---- members ---- */

static int write_fields(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view, unsigned skip,
                        size_t *ret_written);

static const void *at(const void *obj, const WireField *f) {
        return (const char *) obj + f->offset;
}

static int put_object(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view) {
        size_t n;
        int k = PUT_LITERAL(w, "{");

        if (k >= 0)
                k = write_fields(w, t, obj, view, 0, &n);
        return k < 0 ? k : PUT_LITERAL(w, "}");
}

static int put_enum(WireWriter *w, const WireField *f, int v) {
        const WireEnum *e = f->sub;
        int k;

        if (v < 0 || (size_t) v >= e->n || v >= 32 || !(f->values & (UINT32_C(1) << v)))
                return -EINVAL;
        k = PUT_LITERAL(w, "\"");
        if (k >= 0)
                k = put(w, e->names[v], strlen(e->names[v]));
        return k < 0 ? k : PUT_LITERAL(w, "\"");
}

static int put_array(WireWriter *w, const WireField *f, const WireArray *a, const CgroupView *view) {
        const WireType *t = f->sub;
        int k = PUT_LITERAL(w, "[");

        for (size_t i = 0; k >= 0 && i < a->n; i++) {
                if (i > 0)
                        k = PUT_LITERAL(w, ",");
                if (k < 0)
                        break;
                if (!t) {
                        const char *s = ((const char *const *) a->items)[i];

                        k = s ? put_string(w, s) : -EINVAL;
                } else
                        k = put_object(w, t, (const char *) a->items + i * t->size, view);
        }
        return k < 0 ? k : PUT_LITERAL(w, "]");
}

static int put_oneof(WireWriter *w, const WireField *f, const void *v, const CgroupView *view) {
        const WireOneof *o = f->sub;
        int kind = *(const int *) ((const char *) v + o->kind_offset);

        if (kind < 0 || (size_t) kind >= o->values->n || !o->types[kind])
                return -EINVAL;
        return put_object(w, o->types[kind], (const char *) v + o->offset, view);
}

/* An untagged object or "any": its text as it is, or its JSON value as jansson writes it. */
static int put_any(WireWriter *w, const WireAny *a) {
        size_t n, flags = JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY |
                          JSON_REAL_PRECISION(w->flags & WIRE_WRITE_DECIMAL ? 15 : 6);
        int k;

        if (a->json)
                return put(w, a->json, strlen(a->json));
        n = json_dumpb(a->value, NULL, 0, flags);
        if (n == 0)
                return -EINVAL;
        k = reserve(w, n);
        if (k < 0)
                return k;
        if (json_dumpb(a->value, w->buf + w->size, n, flags) != n)
                return -ENOMEM;
        w->size += n;
        return 0;
}

/* Whether @f of @obj is written: 1 with its value, 0 when absent, -EINVAL when required and unset. */
static int presence(const WireField *f, const void *obj) {
        const void *v = at(obj, f);
        bool optional = f->flags & WIRE_OPTIONAL;
        WirePresence is = WIRE_SET;

        switch (f->kind) {
        case WIRE_STRING:
                is = *(const char *const *) v ? WIRE_SET : WIRE_ABSENT;
                break;
        case WIRE_CGROUP:
                is = ((const IdlCgroup *) v)->path ? WIRE_SET : WIRE_ABSENT;
                break;
        case WIRE_ANY:
                is = ((const WireAny *) v)->json || ((const WireAny *) v)->value ? WIRE_SET : WIRE_ABSENT;
                break;
        case WIRE_OBJECT:
                if (optional)
                        is = *(const void *const *) v ? WIRE_SET : WIRE_ABSENT;
                break;
        case WIRE_BOOL:
                is = optional ? ((const WireOptBool *) v)->is : WIRE_SET;
                break;
        case WIRE_INT:
                is = optional ? ((const WireOptU64 *) v)->is : WIRE_SET;
                break;
        case WIRE_FLOAT:
                is = optional ? ((const WireOptF64 *) v)->is : WIRE_SET;
                break;
        case WIRE_ENUM:
                is = optional ? ((const WireOptEnum *) v)->is : WIRE_SET;
                break;
        case WIRE_ARRAY:
                is = optional ? ((const WireArray *) v)->is : WIRE_SET;
                break;
        default:
                break;
        }
        if (is == WIRE_ABSENT)
                return optional ? 0 : -EINVAL;
        /* Only an optional string may be null. */
        if (!optional && (f->kind == WIRE_STRING || f->kind == WIRE_CGROUP) &&
            (f->kind == WIRE_STRING ? *(const char *const *) v : ((const IdlCgroup *) v)->path) == WIRE_NULL_STR)
                return -EINVAL;
        return 1;
}

/* Whether a present optional @f is null. */
static bool is_null(const WireField *f, const void *v) {
        if (!(f->flags & WIRE_OPTIONAL))
                return false;
        switch (f->kind) {
        case WIRE_STRING:
                return *(const char *const *) v == WIRE_NULL_STR;
        case WIRE_CGROUP:
                return ((const IdlCgroup *) v)->path == WIRE_NULL_STR;
        case WIRE_BOOL:
                return ((const WireOptBool *) v)->is == WIRE_NULL;
        case WIRE_INT:
                return ((const WireOptU64 *) v)->is == WIRE_NULL;
        case WIRE_FLOAT:
                return ((const WireOptF64 *) v)->is == WIRE_NULL;
        case WIRE_ENUM:
                return ((const WireOptEnum *) v)->is == WIRE_NULL;
        case WIRE_ARRAY:
                return ((const WireArray *) v)->is == WIRE_NULL;
        default:
                return false;
        }
}

/* The value of @f (present, not null) in @obj. */
static int put_value(WireWriter *w, const WireField *f, const void *obj, const CgroupView *view) {
        const void *v = at(obj, f);
        bool optional = f->flags & WIRE_OPTIONAL;

        switch (f->kind) {
        case WIRE_BOOL:
                return (optional ? ((const WireOptBool *) v)->v : *(const bool *) v) ? PUT_LITERAL(w, "true") :
                                                                                        PUT_LITERAL(w, "false");
        case WIRE_INT:
                return put_u64(w, optional ? ((const WireOptU64 *) v)->v : *(const uint64_t *) v);
        case WIRE_FLOAT:
                return put_real(w, optional ? ((const WireOptF64 *) v)->v : *(const double *) v);
        case WIRE_STRING:
                return put_string(w, *(const char *const *) v);
        case WIRE_CGROUP:
                return put_cgroup(w, v, view);
        case WIRE_ENUM:
                return put_enum(w, f, optional ? ((const WireOptEnum *) v)->v : *(const int *) v);
        case WIRE_CONST: {
                int k = PUT_LITERAL(w, "\"");

                if (k >= 0)
                        k = put(w, f->sub, strlen(f->sub));
                return k < 0 ? k : PUT_LITERAL(w, "\"");
        }
        case WIRE_OBJECT:
                return put_object(w, f->sub, optional ? *(const void *const *) v : v, view);
        case WIRE_ARRAY:
                return put_array(w, f, v, view);
        case WIRE_ONEOF:
                return put_oneof(w, f, v, view);
        case WIRE_ANY:
                return put_any(w, v);
        default:
                return -EINVAL;
        }
}

static int write_fields(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view, unsigned skip,
                        size_t *ret_written) {
        size_t written = 0;

        for (size_t i = 0; i < t->n_fields; i++) {
                const WireField *f = &t->fields[i];
                int k = f->kind == WIRE_CONST ? 1 : presence(f, obj);

                if (k <= 0 || (f->flags & skip)) {
                        if (k < 0 && !(f->flags & skip))
                                return k;
                        continue;
                }
                if (written++ > 0)
                        k = PUT_LITERAL(w, ",");
                if (k >= 0)
                        k = put(w, f->key, f->key_len);
                if (k >= 0)
                        k = is_null(f, at(obj, f)) ? PUT_LITERAL(w, "null") : put_value(w, f, obj, view);
                if (k < 0)
                        return k;
        }
        *ret_written = written;
        return 0;
}

int wire_write_object(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view) {
        return put_object(w, t, obj, view);
}

int wire_write_members(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view,
                       unsigned skip_flags) {
        size_t n;
        int k = write_fields(w, t, obj, view, skip_flags, &n);

        return k < 0 ? k : (int) n;
}

int wire_write_reply(WireWriter *w, const WireType *t, const void *params, const CgroupView *view, bool continues) {
        int k = PUT_LITERAL(w, "{\"parameters\":");

        if (k >= 0)
                k = put_object(w, t, params, view);
        if (k >= 0 && continues)
                k = PUT_LITERAL(w, ",\"continues\":true");
        return k < 0 ? k : PUT_LITERAL(w, "}");
}

int wire_write_error(WireWriter *w, const char *error, const WireType *t, const void *params,
                     const CgroupView *view) {
        int k = PUT_LITERAL(w, "{\"error\":");

        if (k >= 0)
                k = put_string(w, error);
        if (k >= 0)
                k = PUT_LITERAL(w, ",\"parameters\":");
        if (k >= 0)
                k = put_object(w, t, params, view);
        return k < 0 ? k : PUT_LITERAL(w, "}");
}

/* ---- decoding ---- */

struct WireChunk {
        WireChunk *next;
        alignas(max_align_t) char data[];
};

/* @size zeroed bytes that live until wire_decode_done(), or NULL. */
static void *arena_alloc(WireDecode *d, size_t size) {
        WireChunk *c = calloc(1, sizeof(WireChunk) + size);

        if (!c)
                return NULL;
        c->next = d->arena;
        d->arena = c;
        return c->data;
}

void wire_decode_done(WireDecode *d) {
        while (d->arena) {
                WireChunk *c = d->arena;

                d->arena = c->next;
                free(c);
        }
        d->failure = WIRE_FAIL_NONE;
        d->path[0] = 0;
        d->given = NULL;
}

/* Fail with @failure at the path so far, extended by @name (NULL: none). */
static int fail(WireDecode *d, WireFailure failure, size_t len, const char *name) {
        d->failure = failure;
        if (name)
                snprintf(d->path + len, sizeof(d->path) - len, "%s%s", len > 0 ? "." : "", name);
        return failure == WIRE_FAIL_KIND ? -ENOMSG : -EINVAL;
}

/* The path so far extended by ".@name" or "[@index]"; returns its length. */
static size_t path_push(WireDecode *d, size_t len, const char *name, size_t index) {
        int n;

        if (name)
                n = snprintf(d->path + len, sizeof(d->path) - len, "%s%s", len > 0 ? "." : "", name);
        else
                n = snprintf(d->path + len, sizeof(d->path) - len, "[%zu]", index);
        if (n < 0)
                return len;
        return len + (size_t) n < sizeof(d->path) ? len + (size_t) n : sizeof(d->path) - 1;
}

static int decode_object(const json_t *v, const WireType *t, void *ret, WireDecode *d, size_t len);

static int decode_int(const json_t *v, uint64_t *ret, WireDecode *d, size_t len) {
        if (json_is_integer(v)) {
                if (json_integer_value(v) < 0)
                        return fail(d, WIRE_FAIL_RANGE, len, NULL);
                *ret = (uint64_t) json_integer_value(v);
                return 0;
        }
        if (!json_is_real(v) || !(d->flags & WIRE_DECODE_LENIENT))
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        if (json_real_value(v) < 0)
                return fail(d, WIRE_FAIL_RANGE, len, NULL);
        *ret = json_real_value(v) >= 0x1p63 ? INT64_MAX : (uint64_t) json_real_value(v);
        return 0;
}

/* A string without NUL bytes (which jansson can hold), borrowed from @v. */
static int decode_string(const json_t *v, const char **ret, WireDecode *d, size_t len) {
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        *ret = json_string_value(v);
        return 0;
}

static int decode_cgroup(const json_t *v, IdlCgroup *ret, WireDecode *d, size_t len) {
        _cleanup_free_ char *path = NULL;
        const char *s;
        char *copy;
        int k = decode_string(v, &s, d, len);

        if (k < 0)
                return k;
        /* A client takes the daemon's words; the daemon checks a peer's. */
        if (d->flags & WIRE_DECODE_LENIENT) {
                *ret = (IdlCgroup) { .path = s, .named = true };
                return 0;
        }
        k = cgroup_path_normalize(s, &path);
        if (k == -ENOMEM)
                return k;
        if (k < 0) {
                d->given = s;
                return fail(d, WIRE_FAIL_CGROUP, len, NULL);
        }
        copy = arena_alloc(d, strlen(path) + 1);
        if (!copy)
                return -ENOMEM;
        *ret = (IdlCgroup) { .path = strcpy(copy, path), .named = true };
        return 0;
}

static int decode_enum(const json_t *v, const WireField *f, int *ret, WireDecode *d, size_t len) {
        const WireEnum *e = f->sub;
        const char *s;

        if (!json_is_string(v))
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        s = json_string_value(v);
        for (size_t i = 0; i < e->n && i < 32; i++)
                if (streq(s, e->names[i]) && (f->values & (UINT32_C(1) << i))) {
                        *ret = (int) i;
                        return 0;
                }
        if (!(d->flags & WIRE_DECODE_LENIENT))
                return fail(d, WIRE_FAIL_VALUE, len, NULL);
        *ret = -1;
        return 0;
}

static int decode_array(const json_t *v, const WireField *f, WireArray *ret, WireDecode *d, size_t len) {
        const WireType *t = f->sub;
        size_t n = json_array_size(v), size = t ? t->size : sizeof(const char *);
        char *items;

        if (!json_is_array(v))
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        items = n > 0 ? arena_alloc(d, n * size) : NULL;
        if (n > 0 && !items)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t l = path_push(d, len, NULL, i);
                int k = t ? decode_object(json_array_get(v, i), t, items + i * size, d, l) :
                            decode_string(json_array_get(v, i), (const char **) (items + i * size), d, l);

                if (k < 0)
                        return k;
        }
        *ret = (WireArray) { .items = items, .n = n, .is = WIRE_SET };
        return 0;
}

static int decode_oneof(const json_t *v, const WireField *f, void *ret, WireDecode *d, size_t len) {
        const WireOneof *o = f->sub;
        const json_t *which = json_is_object(v) ? json_object_get(v, o->name) : NULL;
        const char *s = json_string_value(which);

        if (!json_is_object(v))
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        if (!s)
                return fail(d, which ? WIRE_FAIL_TYPE : WIRE_FAIL_MISSING, len, o->name);
        for (size_t i = 0; i < o->values->n; i++)
                if (o->types[i] && streq(s, o->values->names[i])) {
                        *(int *) ((char *) ret + o->kind_offset) = (int) i;
                        return decode_object(v, o->types[i], (char *) ret + o->offset, d, len);
                }
        return fail(d, WIRE_FAIL_KIND, len, o->name);
}

/* An optional @f's null: its presence, WIRE_NULL_STR, or nothing (an object: NULL, the same as absent). */
static void decode_null(const WireField *f, void *v) {
        switch (f->kind) {
        case WIRE_STRING:
                *(const char **) v = WIRE_NULL_STR;
                break;
        case WIRE_CGROUP:
                *(IdlCgroup *) v = (IdlCgroup) { .path = WIRE_NULL_STR, .named = true };
                break;
        case WIRE_BOOL:
                ((WireOptBool *) v)->is = WIRE_NULL;
                break;
        case WIRE_INT:
                ((WireOptU64 *) v)->is = WIRE_NULL;
                break;
        case WIRE_FLOAT:
                ((WireOptF64 *) v)->is = WIRE_NULL;
                break;
        case WIRE_ENUM:
                ((WireOptEnum *) v)->is = WIRE_NULL;
                break;
        case WIRE_ARRAY:
                ((WireArray *) v)->is = WIRE_NULL;
                break;
        default:
                break;
        }
}

/* An optional object: allocated beside the struct. */
static int decode_optional_object(const json_t *v, const WireField *f, const void **ret, WireDecode *d,
                                  size_t len) {
        const WireType *t = f->sub;
        void *o = arena_alloc(d, t->size ?: 1);

        if (!o)
                return -ENOMEM;
        *ret = o;
        return decode_object(v, t, o, d, len);
}

/* The value @v (not null) of @f into @obj; @len: the path's length with @f. */
static int decode_value(const json_t *v, const WireField *f, void *obj, WireDecode *d, size_t len) {
        void *p = (char *) obj + f->offset;
        bool optional = f->flags & WIRE_OPTIONAL;

        switch (f->kind) {
        case WIRE_BOOL:
                if (!json_is_boolean(v))
                        return fail(d, WIRE_FAIL_TYPE, len, NULL);
                if (optional)
                        *(WireOptBool *) p = (WireOptBool) { json_is_true(v), WIRE_SET };
                else
                        *(bool *) p = json_is_true(v);
                return 0;
        case WIRE_INT:
                if (optional)
                        ((WireOptU64 *) p)->is = WIRE_SET;
                return decode_int(v, optional ? &((WireOptU64 *) p)->v : p, d, len);
        case WIRE_FLOAT:
                if (!json_is_number(v))
                        return fail(d, WIRE_FAIL_TYPE, len, NULL);
                if (optional)
                        *(WireOptF64 *) p = (WireOptF64) { json_number_value(v), WIRE_SET };
                else
                        *(double *) p = json_number_value(v);
                return 0;
        case WIRE_STRING:
                return decode_string(v, p, d, len);
        case WIRE_CGROUP:
                return decode_cgroup(v, p, d, len);
        case WIRE_ENUM:
                if (optional)
                        ((WireOptEnum *) p)->is = WIRE_SET;
                return decode_enum(v, f, optional ? &((WireOptEnum *) p)->v : p, d, len);
        case WIRE_CONST:
                if (!json_is_string(v))
                        return fail(d, WIRE_FAIL_TYPE, len, NULL);
                return streq(json_string_value(v), f->sub) ? 0 : fail(d, WIRE_FAIL_VALUE, len, NULL);
        case WIRE_OBJECT:
                if (optional)
                        return decode_optional_object(v, f, p, d, len);
                return json_is_object(v) ? decode_object(v, f->sub, p, d, len) : fail(d, WIRE_FAIL_TYPE, len, NULL);
        case WIRE_ARRAY:
                return decode_array(v, f, p, d, len);
        case WIRE_ONEOF:
                return decode_oneof(v, f, p, d, len);
        case WIRE_ANY:
                ((WireAny *) p)->value = v;
                return 0;
        default:
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        }
}

static const WireField *field_named(const WireType *t, const char *name) {
        for (size_t i = 0; i < t->n_fields; i++)
                if (streq(t->fields[i].name, name))
                        return &t->fields[i];
        return NULL;
}

/* The first member of @v that @t does not declare, if any (strict only). */
static int check_unknown(const json_t *v, const WireType *t, WireDecode *d, size_t len) {
        const char *key;
        json_t *m;

        if (d->flags & WIRE_DECODE_LENIENT)
                return 0;
        json_object_foreach((json_t *) v, key, m)
                if (!field_named(t, key))
                        return fail(d, WIRE_FAIL_UNKNOWN, len, key);
        return 0;
}

static int decode_object(const json_t *v, const WireType *t, void *ret, WireDecode *d, size_t len) {
        const char *key;
        json_t *m;
        int k = 0;

        if (!json_is_object(v))
                return fail(d, WIRE_FAIL_TYPE, len, NULL);
        if (d->flags & WIRE_DECODE_UNKNOWN_FIRST)
                k = check_unknown(v, t, d, len);
        json_object_foreach((json_t *) v, key, m) {
                const WireField *f = field_named(t, key);

                if (k < 0)
                        return k;
                if (!f) {
                        k = d->flags & WIRE_DECODE_LENIENT ? 0 : fail(d, WIRE_FAIL_UNKNOWN, len, key);
                        continue;
                }
                if (json_is_null(m) && (f->flags & WIRE_OPTIONAL))
                        decode_null(f, (char *) ret + f->offset);
                else if (!json_is_null(m))
                        k = decode_value(m, f, ret, d, path_push(d, len, key, 0));
        }
        for (size_t i = 0; k >= 0 && i < t->n_fields; i++) {
                const WireField *f = &t->fields[i];
                const json_t *m2 = json_object_get(v, f->name);

                if (!(f->flags & WIRE_OPTIONAL) && (!m2 || json_is_null(m2)))
                        k = fail(d, WIRE_FAIL_MISSING, len, f->name);
        }
        if (k >= 0)
                d->path[len] = 0;
        return k;
}

int wire_decode(const json_t *v, const WireType *t, void *ret, WireDecode *d) {
        int k;

        d->failure = WIRE_FAIL_NONE;
        d->path[0] = 0;
        d->given = NULL;
        if (t->size > 0)
                memset(ret, 0, t->size);
        k = decode_object(v, t, ret, d, 0);
        if (k < 0 && t->size > 0)
                memset(ret, 0, t->size);
        return k;
}
