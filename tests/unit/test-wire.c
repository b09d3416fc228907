/* SPDX-License-Identifier: MIT */
/*
 * The table-driven encoder and decoder (protocol/wire.c) on the tables
 * gen-wire.py makes from the interfaces (idl-types.c).
 *
 * Bytes: for every record of every interface, random values (escapes,
 * control characters, non-ASCII and invalid UTF-8 in strings; reals such as
 * 18.12, 0.07, 100, 1e-7 and -0; 0, INT64_MAX and UINT64_MAX; every
 * presence of every optional member) are encoded and compared byte for byte
 * with jansson's json_dumpb() of the same object built by a reference
 * walk of the same table, with the daemon's flags and with the decimal
 * ones; a string jansson refuses is refused (-EILSEQ). Every message of
 * the golden files (tests/unit/data/wire, what the daemon writes today) is
 * decoded strictly and leniently, encoded again, and compared with
 * jansson's bytes and with the golden message as JSON.
 *
 * Then the rules: required members, enum values a member does not allow,
 * NaN, @cgroup paths named as a peer in a cgroup namespace names them
 * (-EXDEV outside its view), the subscriber's members left out of a body,
 * varlink's envelopes, the writer beyond its stack; the decoder's
 * failures with their paths, strict and lenient, and allocation failures.
 *
 * Usage: test-wire GOLDEN-DIR
 */
#include <dirent.h>
#include <math.h>

#include "fail-inject.h"
#include "idl-types.h"
#include "tests.h"
#include "util.h"
#include "varlink.h"
#include "wire.h"

/* ---- deterministic randomness, and memory the random values live in ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15;

static uint64_t rnd(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static size_t rnd_below(size_t n) {
        return (size_t) (rnd() % n);
}

static void *held[4096];
static size_t n_held;

static void *hold(void *p) {
        ASSERT_TRUE(p && n_held < ELEMENTSOF(held));
        return held[n_held++] = p;
}

/* JSON values whose strings decoded structs borrow. */
static json_t *held_json[64];
static size_t n_held_json;

static void release_held(void) {
        while (n_held > 0)
                free(held[--n_held]);
        while (n_held_json > 0)
                json_decref(held_json[--n_held_json]);
}

/* ---- the reference: the same table walked into jansson's objects ---- */

static json_t *ref_object(const WireType *t, const void *obj, const CgroupView *view);

static const void *member(const void *obj, const WireField *f) {
        return (const char *) obj + f->offset;
}

/* What the encoder writes for @f's value in @obj, as jansson's value; NULL: jansson refuses it. */
static json_t *ref_value(const WireField *f, const void *obj, const CgroupView *view) {
        const void *v = member(obj, f);
        bool optional = f->flags & WIRE_OPTIONAL;

        switch (f->kind) {
        case WIRE_BOOL:
                return json_boolean(optional ? ((const WireOptBool *) v)->v : *(const bool *) v);
        case WIRE_INT: {
                uint64_t i = optional ? ((const WireOptU64 *) v)->v : *(const uint64_t *) v;

                return json_integer(i > INT64_MAX ? INT64_MAX : (json_int_t) i);
        }
        case WIRE_FLOAT:
                return json_real(optional ? ((const WireOptF64 *) v)->v : *(const double *) v);
        case WIRE_STRING:
                return json_string(*(const char *const *) v);
        case WIRE_CGROUP:
                /* Views are checked on their own: here the daemon's own. */
                return json_string(((const IdlCgroup *) v)->path);
        case WIRE_ENUM: {
                const WireEnum *e = f->sub;

                return json_string(e->names[optional ? ((const WireOptEnum *) v)->v : *(const int *) v]);
        }
        case WIRE_CONST:
                return json_string(f->sub);
        case WIRE_OBJECT:
                return ref_object(f->sub, optional ? *(const void *const *) v : v, view);
        case WIRE_ARRAY: {
                const WireArray *a = v;
                const WireType *t = f->sub;
                json_t *arr = json_array();

                for (size_t i = 0; arr && i < a->n; i++) {
                        json_t *x = t ? ref_object(t, (const char *) a->items + i * t->size, view) :
                                        json_string(((const char *const *) a->items)[i]);

                        if (!x || json_array_append_new(arr, x) < 0)
                                arr = (json_decref(arr), NULL);
                }
                return arr;
        }
        case WIRE_ONEOF: {
                const WireOneof *o = f->sub;
                int kind = *(const int *) ((const char *) v + o->kind_offset);

                return ref_object(o->types[kind], (const char *) v + o->offset, view);
        }
        case WIRE_ANY:
                if (!((const WireAny *) v)->json)
                        return json_incref((json_t *) ((const WireAny *) v)->value);
                return json_loads(((const WireAny *) v)->json, JSON_DECODE_ANY, NULL);
        default:
                TEST_FAIL("kind %d", f->kind);
        }
}

/* Whether @f is left out, and whether it is null, by the same rules as the encoder's, read independently. */
static bool ref_absent(const WireField *f, const void *obj, bool *ret_null) {
        const void *v = member(obj, f);
        WirePresence is = WIRE_SET;

        *ret_null = false;
        if (!(f->flags & WIRE_OPTIONAL))
                return false;
        switch (f->kind) {
        case WIRE_STRING:
                *ret_null = *(const char *const *) v == WIRE_NULL_STR;
                return !*(const char *const *) v;
        case WIRE_CGROUP:
                *ret_null = ((const IdlCgroup *) v)->path == WIRE_NULL_STR;
                return !((const IdlCgroup *) v)->path;
        case WIRE_OBJECT:
                return !*(const void *const *) v;
        case WIRE_ANY:
                return !((const WireAny *) v)->json && !((const WireAny *) v)->value;
        case WIRE_BOOL:
                is = ((const WireOptBool *) v)->is;
                break;
        case WIRE_INT:
                is = ((const WireOptU64 *) v)->is;
                break;
        case WIRE_FLOAT:
                is = ((const WireOptF64 *) v)->is;
                break;
        case WIRE_ENUM:
                is = ((const WireOptEnum *) v)->is;
                break;
        case WIRE_ARRAY:
                is = ((const WireArray *) v)->is;
                break;
        default:
                break;
        }
        *ret_null = is == WIRE_NULL;
        return is == WIRE_ABSENT;
}

static json_t *ref_object(const WireType *t, const void *obj, const CgroupView *view) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < t->n_fields; i++) {
                const WireField *f = &t->fields[i];
                bool null;
                json_t *v;

                if (f->kind != WIRE_CONST && ref_absent(f, obj, &null))
                        continue;
                v = f->kind != WIRE_CONST && null ? json_null() : ref_value(f, obj, view);
                if (!v || json_object_set_new(o, f->name, v) < 0)
                        o = (json_decref(o), NULL);
        }
        return o;
}

/* ---- random values ---- */

static const char *const strings[] = {
        "", "a", "/", "/system.slice/db.service", "quote \" backslash \\ slash /", "tab\tnewline\ncr\r",
        "\b\f\x01\x1f\x7f", "caf\xc3\xa9", "\xe2\x82\xac 100", "\xf0\x9f\x98\x80", "\xef\xbf\xbf\xf4\x8f\xbf\xbf",
        /* not UTF-8: a stray continuation, a cut sequence, overlong, a surrogate, above U+10FFFF, 0xff */
        "\x80", "ab\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff",
};

static const double reals[] = { 0, -0.0, 18.12, 0.07, 100, 1e-7, 1e20, 1.5e300, 4.9e-324, 123456.789, 0.1, 1e6,
                                99.99995, -3.25, 1e15, 123456789012345678.0 };

static const char *const anys[] = { "1", "\"x\"", "{\"resource\":\"memory\",\"type\":\"some\"}", "[1,2]", "0.5" };

/* A random string: from the list, or random bytes (mostly not UTF-8). */
static const char *rnd_string(void) {
        size_t n;
        char *s;

        if (rnd_below(4) > 0)
                return strings[rnd_below(ELEMENTSOF(strings))];
        n = rnd_below(12);
        s = hold(malloc(n + 1));
        for (size_t i = 0; i < n; i++)
                s[i] = (char) (rnd_below(255) + 1);
        s[n] = 0;
        return s;
}

static uint64_t rnd_u64(void) {
        static const uint64_t special[] = { 0, 1, 42, INT64_MAX, (uint64_t) INT64_MAX + 1, UINT64_MAX, 1000000 };

        return rnd_below(2) ? special[rnd_below(ELEMENTSOF(special))] : rnd() >> rnd_below(64);
}

static double rnd_real(void) {
        double d;
        uint64_t bits;

        if (rnd_below(3) > 0)
                return reals[rnd_below(ELEMENTSOF(reals))];
        do {
                bits = rnd();
                memcpy(&d, &bits, sizeof(d));
        } while (!isfinite(d));
        return d;
}

/* A value of @e that @f allows. */
static int rnd_enum(const WireField *f) {
        const WireEnum *e = f->sub;

        for (;;) {
                int v = (int) rnd_below(e->n);

                if (f->values & (UINT32_C(1) << v))
                        return v;
        }
}

static void fill_object(const WireType *t, void *obj, int depth);

static WirePresence rnd_presence(void) {
        static const WirePresence p[] = { WIRE_ABSENT, WIRE_NULL, WIRE_SET, WIRE_SET };

        return p[rnd_below(ELEMENTSOF(p))];
}

static void fill_array(const WireField *f, WireArray *a, int depth) {
        const WireType *t = f->sub;
        size_t n = depth > 2 ? 0 : rnd_below(4), size = t ? t->size : sizeof(char *);
        char *items = n > 0 ? hold(calloc(n, size)) : NULL;

        for (size_t i = 0; i < n; i++)
                if (t)
                        fill_object(t, items + i * size, depth + 1);
                else
                        ((const char **) items)[i] = rnd_string();
        *a = (WireArray) { .items = items, .n = n, .is = (f->flags & WIRE_OPTIONAL) ? rnd_presence() : WIRE_SET };
}

static void fill_oneof(const WireField *f, void *v, int depth) {
        const WireOneof *o = f->sub;
        int kind;

        do
                kind = (int) rnd_below(o->values->n);
        while (!o->types[kind]);
        *(int *) ((char *) v + o->kind_offset) = kind;
        fill_object(o->types[kind], (char *) v + o->offset, depth + 1);
}

static void fill_field(const WireField *f, void *obj, int depth) {
        void *v = (char *) obj + f->offset;
        bool optional = f->flags & WIRE_OPTIONAL;
        WirePresence is = optional ? rnd_presence() : WIRE_SET;

        switch (f->kind) {
        case WIRE_BOOL:
                if (optional)
                        *(WireOptBool *) v = (WireOptBool) { rnd_below(2), is };
                else
                        *(bool *) v = rnd_below(2);
                break;
        case WIRE_INT:
                if (optional)
                        *(WireOptU64 *) v = (WireOptU64) { rnd_u64(), is };
                else
                        *(uint64_t *) v = rnd_u64();
                break;
        case WIRE_FLOAT:
                if (optional)
                        *(WireOptF64 *) v = (WireOptF64) { rnd_real(), is };
                else
                        *(double *) v = rnd_real();
                break;
        case WIRE_STRING:
                *(const char **) v = is == WIRE_ABSENT ? NULL : is == WIRE_NULL ? WIRE_NULL_STR : rnd_string();
                break;
        case WIRE_CGROUP:
                *(IdlCgroup *) v = (IdlCgroup) {
                        .path = is == WIRE_ABSENT ? NULL : is == WIRE_NULL ? WIRE_NULL_STR : rnd_string(),
                };
                break;
        case WIRE_ENUM:
                if (optional)
                        *(WireOptEnum *) v = (WireOptEnum) { rnd_enum(f), is };
                else
                        *(int *) v = rnd_enum(f);
                break;
        case WIRE_OBJECT: {
                const WireType *t = f->sub;

                if (!optional) {
                        fill_object(t, v, depth + 1);
                        break;
                }
                *(void **) v = NULL;
                if (is != WIRE_SET || depth > 3)
                        break;
                *(void **) v = hold(calloc(1, t->size ?: 1));
                fill_object(t, *(void **) v, depth + 1);
                break;
        }
        case WIRE_ARRAY:
                fill_array(f, v, depth);
                break;
        case WIRE_ONEOF:
                fill_oneof(f, v, depth);
                break;
        case WIRE_ANY:
                ((WireAny *) v)->json = optional && is != WIRE_SET ? NULL : anys[rnd_below(ELEMENTSOF(anys))];
                break;
        default:
                break;
        }
}

static void fill_object(const WireType *t, void *obj, int depth) {
        for (size_t i = 0; i < t->n_fields; i++)
                if (t->fields[i].kind != WIRE_CONST)
                        fill_field(&t->fields[i], obj, depth);
}

/* ---- bytes: the encoder against jansson ---- */

/* @obj of @t encoded, or the error; *@ret the text (malloc'ed) on success. */
static int encode(const WireType *t, const void *obj, unsigned flags, char **ret) {
        WireWriter w;
        size_t n;
        int k;

        wire_writer_init(&w, flags);
        k = wire_write_object(&w, t, obj, NULL);
        if (k >= 0)
                k = wire_writer_take(&w, ret, &n);
        wire_writer_done(&w);
        if (k >= 0)
                ASSERT_EQ(n, strlen(*ret) + 1);
        return k;
}

/* The encoder's bytes of @obj are jansson's, with both precisions; or both refuse it. */
static bool check_bytes(const WireType *t, const void *obj) {
        json_t *ref = ref_object(t, obj, NULL);
        bool ok = ref != NULL;

        for (int decimal = 0; decimal < 2; decimal++) {
                _cleanup_free_ char *mine = NULL, *theirs = NULL;
                int k = encode(t, obj, decimal ? WIRE_WRITE_DECIMAL : 0, &mine);

                if (!ref) {
                        /* jansson refused a string: not UTF-8. */
                        if (k != -EILSEQ)
                                TEST_FAIL("%s: jansson refuses a value the encoder wrote (%d): %s", t->name, k,
                                          mine ? mine : "");
                        continue;
                }
                if (k < 0)
                        TEST_FAIL("%s: the encoder failed with %d where jansson did not", t->name, k);
                theirs = json_dumps(ref, decimal ? VARLINK_JSON_FLAGS_DECIMAL : VARLINK_JSON_FLAGS);
                ASSERT_TRUE(theirs);
                if (!streq(mine, theirs))
                        TEST_FAIL("%s:\n  wire:    %s\n  jansson: %s", t->name, mine, theirs);
        }
        json_decref(ref);
        return ok;
}

static void test_random_bytes(void) {
        unsigned compared = 0, refused = 0;

        for (size_t i = 0; i < idl_n_types; i++) {
                const WireType *t = idl_types[i];

                for (int round = 0; round < 300; round++) {
                        void *obj = hold(calloc(1, t->size ?: 1));

                        fill_object(t, obj, 0);
                        if (check_bytes(t, obj))
                                compared++;
                        else
                                refused++;
                        release_held();
                }
        }
        printf("random values: %u objects byte-identical to jansson's (twice: 6 and 15 digits), "
               "%u refused by both (not UTF-8)\n", compared, refused);
        ASSERT_TRUE(compared > 1000 && refused > 100);
}

/* Reals on their own: every form %g takes. */
static void test_reals(void) {
        static const WireField fields[] = { { WIRE_KEY("x"), WIRE_FLOAT, 0, 0, 0, NULL } };
        static const WireType t = { "Real", sizeof(double), fields, 1 };

        for (int i = 0; i < 100000; i++) {
                double d = rnd_real();
                int scale = (int) rnd_below(40) - 20;

                if (i % 2)
                        d = round(d * 1e6) / 1e6 * pow(10, scale);
                if (isfinite(d))
                        (void) check_bytes(&t, &d);
        }
}

/* ---- the golden messages ---- */

/* The method each golden file answers (by the start of its name), or NULL: an error or a stream's event. */
static const char *golden_method(const char *name) {
        static const struct {
                const char *prefix, *method;
        } map[] = {
                { "reply-get-info", "org.varlink.service.GetInfo" },
                { "reply-get-interface-description", "org.varlink.service.GetInterfaceDescription" },
                { "reply-get-status", "io.pressured.GetStatus" },
                { "reply-get-protection", "io.pressured.GetProtection" },
                { "reply-get-headroom", "io.pressured.GetHeadroom" },
                { "reply-inject", "io.pressured.Inject" },
                { "reply-reload", "io.pressured.Reload" },
                { "reply-subscribe", "io.pressured.Subscribe" },
                { "subscribed-", "io.pressured.Subscribe" },
                { "event-", "io.pressured.Subscribe" },
                { "report-list", "io.systemd.Metrics.List" },
                { "report-describe", "io.systemd.Metrics.Describe" },
        };

        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strncmp(name, map[i].prefix, strlen(map[i].prefix)) == 0)
                        return map[i].method;
        return NULL;
}

static const WireType *reply_type(const char *method) {
        for (size_t i = 0; i < idl_n_methods; i++)
                if (streq(idl_methods[i].name, method))
                        return idl_methods[i].reply;
        TEST_FAIL("no method %s", method);
}

static const WireType *error_type(const char *error) {
        for (size_t i = 0; i < idl_n_errors; i++)
                if (streq(idl_errors[i].name, error))
                        return idl_errors[i].parameters;
        TEST_FAIL("no error %s", error);
}

/*
 * What the daemon writes today that its interface does not allow: a
 * "protection" event without the "node" the IDL requires (event.c leaves it
 * out when the node cannot be serialized, out of memory), and a seq above
 * the IDL's int range (event_prefix() writes a uint64_t as it is), which
 * jansson does not parse (WIRE_FAIL_NONE here). Decoding refuses each;
 * whoever changes that output takes it off this list.
 */
static const struct {
        const char *file;
        WireFailure failure;
        const char *path;
} known_violations[] = {
        { "event-protection-no-node.json", WIRE_FAIL_MISSING, "event.node" },
        { "event-pressure-vmpressure.json", WIRE_FAIL_NONE, NULL },
};

/* Whether @file (@msg, NULL if jansson did not parse it) is a known violation of the interface, refused as such. */
static bool known_violation(const char *file, const json_t *msg, const WireType *t) {
        for (size_t i = 0; i < ELEMENTSOF(known_violations); i++) {
                void *obj = hold(calloc(1, t->size ?: 1));
                WireDecode d = { .flags = WIRE_DECODE_LENIENT };

                if (!streq(known_violations[i].file, file))
                        continue;
                if (known_violations[i].failure == WIRE_FAIL_NONE) {
                        ASSERT_TRUE(!msg);
                        return true;
                }
                ASSERT_ERR(wire_decode(json_object_get(msg, "parameters"), t, obj, &d), EINVAL);
                ASSERT_EQ(d.failure, known_violations[i].failure);
                ASSERT_STREQ(d.path, known_violations[i].path);
                wire_decode_done(&d);
                return true;
        }
        return false;
}

/*
 * One golden message @text: its parameters decode (strictly and leniently
 * alike), encode to jansson's bytes of the same values and to the same
 * JSON as the message; and the whole message, made again with varlink's
 * envelope, is the golden one byte for byte if its members are in the
 * interface's order. Returns whether it is.
 */
static unsigned strict_cgroup_refused;

static bool check_golden(const char *file, const char *text, unsigned flags) {
        json_error_t err;
        json_t *msg = json_loads(text, JSON_REJECT_DUPLICATES, &err), *params, *again;
        const char *error = json_string_value(json_object_get(msg, "error"));
        const WireType *t;
        _cleanup_free_ char *mine = NULL;
        WireDecode d = {}, dl = { .flags = WIRE_DECODE_LENIENT };
        WireWriter w;
        void *obj, *obj2;
        size_t n;
        bool same;

        t = error ? error_type(error) : reply_type(golden_method(file));
        if (known_violation(file, msg, t)) {
                json_decref(msg);
                release_held();
                return false;
        }
        if (!msg)
                TEST_FAIL("%s: %s is not JSON: %s", file, text, err.text);
        params = json_object_get(msg, "parameters");
        obj = hold(calloc(1, t->size ?: 1));
        obj2 = hold(calloc(1, t->size ?: 1));
        if (wire_decode(params, t, obj, &dl) < 0)
                TEST_FAIL("%s: %s does not decode: failure %d at %s", file, text, dl.failure, dl.path);
        /* Strictly too, but for a path a peer could not have given (InvalidCgroupPath's echo, control characters). */
        if (wire_decode(params, t, obj2, &d) < 0 && d.failure != WIRE_FAIL_CGROUP)
                TEST_FAIL("%s: %s does not decode strictly: failure %d at %s", file, text, d.failure, d.path);
        strict_cgroup_refused += d.failure == WIRE_FAIL_CGROUP;
        (void) check_bytes(t, obj);
        wire_writer_init(&w, flags);
        if (error)
                ASSERT_OK(wire_write_error(&w, error, t, obj, NULL));
        else
                ASSERT_OK(wire_write_reply(&w, t, obj, NULL, json_is_true(json_object_get(msg, "continues"))));
        ASSERT_OK(wire_writer_take(&w, &mine, &n));
        again = json_loads(mine, JSON_REJECT_DUPLICATES, &err);
        if (!json_equal(again, msg))
                TEST_FAIL("%s: decoded and encoded again, %s is %s", file, text, mine);
        same = streq(mine, text);
        json_decref(again);
        json_decref(msg);
        wire_decode_done(&d);
        wire_decode_done(&dl);
        release_held();
        return same;
}

static void test_golden(const char *dir) {
        DIR *dp = opendir(dir);
        struct dirent *de;
        unsigned files = 0, messages = 0, identical = 0;

        ASSERT_TRUE(dp);
        while ((de = readdir(dp))) {
                _cleanup_free_ char *path = NULL, *text = NULL;
                size_t n;

                if (!strstr(de->d_name, ".json"))
                        continue;
                ASSERT_TRUE(asprintf(&path, "%s/%s", dir, de->d_name) > 0);
                ASSERT_OK(read_full_file(path, 1 << 20, &text, &n));
                files++;
                for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                        *nl = 0;
                        messages++;
                        identical += check_golden(de->d_name, line,
                                                  strncmp(de->d_name, "report-", 7) == 0 ? WIRE_WRITE_DECIMAL : 0);
                }
        }
        closedir(dp);
        printf("golden files: %u, messages %u: every one decoded, encoded as jansson would and equal as JSON; "
               "%u byte-identical with the envelope (the others differ in the order of members); "
               "%u with a path a strict decoder refuses\n", files, messages, identical, strict_cgroup_refused);
        ASSERT_EQ(strict_cgroup_refused, 3);    /* InvalidCgroupPath's two, the escapes */
        ASSERT_TRUE(files > 60 && messages > 100);
}

/* ---- the encoder's rules ---- */

static char *encode_ok(const WireType *t, const void *obj, const CgroupView *view) {
        WireWriter w;
        char *text;
        size_t n;

        wire_writer_init(&w, 0);
        ASSERT_OK(wire_write_object(&w, t, obj, view));
        ASSERT_OK(wire_writer_take(&w, &text, &n));
        return hold(text);
}

static int encode_err(const WireType *t, const void *obj, const CgroupView *view) {
        WireWriter w;
        int k;

        wire_writer_init(&w, 0);
        k = wire_write_object(&w, t, obj, view);
        wire_writer_done(&w);
        return k;
}

static void test_required_and_values(void) {
        IdlKilledEvent k = { .cgroup = IDL_CGROUP("/a"), .by = "kernel", .reason = "oom_kill", .seq = 1,
                             .count = UINT64_MAX, .missed = INT64_MAX, .time_us = 3, .monotonic_us = 4 };
        IdlPressureEvent p = { .cgroup = IDL_CGROUP("/a"), .source = IDL_SOURCE_INJECT };
        IdlReclaimEntry r = { .cgroup = IDL_CGROUP("/a"), .state = "probing", .stall_pct = NAN };
        IdlGetHeadroomReply h = { .limit_bytes = WIRE_NULL_U64, .limiting_cgroup = IDL_CGROUP_NULL,
                                  .headroom_bytes = WIRE_U64(5) };

        ASSERT_STREQ(encode_ok(&idl_killed_event_type, &k, NULL),
                     "{\"kind\":\"killed\",\"cgroup\":\"/a\",\"by\":\"kernel\",\"reason\":\"oom_kill\",\"seq\":1,"
                     "\"count\":9223372036854775807,\"missed\":9223372036854775807,\"time_us\":3,"
                     "\"monotonic_us\":4}");
        /* Optional members: absent (zero), null, set. */
        ASSERT_STREQ(encode_ok(&idl_get_headroom_reply_type, &h, NULL),
                     "{\"usage_bytes\":0,\"limit_bytes\":null,\"limiting_cgroup\":null,\"headroom_bytes\":5}");
        /* A required string unset, or null. */
        k.by = NULL;
        ASSERT_ERR(encode_err(&idl_killed_event_type, &k, NULL), EINVAL);
        k.by = WIRE_NULL_STR;
        ASSERT_ERR(encode_err(&idl_killed_event_type, &k, NULL), EINVAL);
        k.by = "kernel";
        k.cgroup = (IdlCgroup) {};
        ASSERT_ERR(encode_err(&idl_killed_event_type, &k, NULL), EINVAL);
        k.cgroup = IDL_CGROUP("/\xff");
        ASSERT_ERR(encode_err(&idl_killed_event_type, &k, NULL), EILSEQ);
        /* A value the member's enum has, but not this member: PressureEvent has no "kills" source. */
        ASSERT_TRUE(strstr(encode_ok(&idl_pressure_event_type, &p, NULL), "\"source\":\"inject\""));
        p.source = IDL_SOURCE_KILLS;
        ASSERT_ERR(encode_err(&idl_pressure_event_type, &p, NULL), EINVAL);
        p.source = _IDL_SOURCE_MAX;
        ASSERT_ERR(encode_err(&idl_pressure_event_type, &p, NULL), EINVAL);
        p.source = IDL_SOURCE_PSI;
        p.level = (IdlLevelOpt) { -1, WIRE_SET };
        ASSERT_ERR(encode_err(&idl_pressure_event_type, &p, NULL), EINVAL);
        /* JSON has no NaN nor infinity. */
        ASSERT_ERR(encode_err(&idl_reclaim_entry_type, &r, NULL), EINVAL);
        r.stall_pct = INFINITY;
        ASSERT_ERR(encode_err(&idl_reclaim_entry_type, &r, NULL), EINVAL);
        release_held();
}

/* A peer in a cgroup namespace: paths named as it names them, the rest refused. */
static void test_views(void) {
        CgroupView view = { .v2_root = (char *) "/machine.slice/ctr", .v1_root = (char *) "/ctr" };
        static const struct {
                const char *path;
                bool v1, named;
                const char *seen;       /* NULL: -EXDEV */
        } cases[] = {
                { "/machine.slice/ctr/app", false, false, "/app" },
                { "/machine.slice/ctr", false, false, "/" },
                { "/machine.slice", false, false, "/" },        /* above the root: the root */
                { "/", false, false, "/" },
                { "/machine.slice/ctrx", false, false, NULL },
                { "/other", false, false, NULL },
                { "/ctr/app", true, false, "/app" },            /* the v1 memory hierarchy's root */
                { "/machine.slice/ctr/app", true, false, NULL },
                { "/anything", false, true, "/anything" },      /* given by the peer: as it is */
        };
        IdlNoSuchCgroupError e;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *want = NULL;

                e.cgroup = (IdlCgroup) { .path = cases[i].path, .v1 = cases[i].v1, .named = cases[i].named };
                if (!cases[i].seen) {
                        ASSERT_ERR(encode_err(&idl_no_such_cgroup_error_type, &e, &view), EXDEV);
                        continue;
                }
                ASSERT_TRUE(asprintf(&want, "{\"cgroup\":\"%s\"}", cases[i].seen) > 0);
                ASSERT_STREQ(encode_ok(&idl_no_such_cgroup_error_type, &e, &view), want);
                /* The daemon's own view: as it is. */
                ASSERT_TRUE(strstr(encode_ok(&idl_no_such_cgroup_error_type, &e, NULL), cases[i].path));
        }
        /* Nested: every @cgroup of an event with a protection node. */
        {
                IdlProtectionNode node = { .cgroup = IDL_CGROUP("/machine.slice/ctr/app/x"),
                                           .state = IDL_PROTECTION_STATE_LOW };
                IdlPressureEvent p = { .cgroup = IDL_CGROUP("/machine.slice/ctr/app"), .protection = &node };

                ASSERT_TRUE(strstr(encode_ok(&idl_pressure_event_type, &p, &view), "\"cgroup\":\"/app\""));
                ASSERT_TRUE(strstr(encode_ok(&idl_pressure_event_type, &p, &view), "\"cgroup\":\"/app/x\""));
                node.cgroup = IDL_CGROUP("/elsewhere");
                ASSERT_ERR(encode_err(&idl_pressure_event_type, &p, &view), EXDEV);
        }
        release_held();
}

/* An event's shared body: its members but the subscriber's own. */
static void test_members_and_envelopes(void) {
        IdlKilledEvent k = { .cgroup = IDL_CGROUP("/a"), .by = "kernel", .reason = "oom_kill", .seq = 1, .count = 2,
                             .missed = 3, .time_us = 4, .monotonic_us = 5 };
        IdlVarlinkInvalidParameterError e = { .parameter = "psi.stall" };
        IdlInjectReply r = { .delivered = 3 };
        char buf[32], *text;
        WireWriter w;
        size_t n;
        json_t *j;

        wire_writer_init(&w, 0);
        ASSERT_EQ(wire_write_members(&w, &idl_killed_event_type, &k, NULL, WIRE_SUBSCRIBER), 6);
        ASSERT_OK(wire_writer_take(&w, &text, &n));
        ASSERT_STREQ(text, "\"kind\":\"killed\",\"cgroup\":\"/a\",\"by\":\"kernel\",\"reason\":\"oom_kill\","
                           "\"time_us\":4,\"monotonic_us\":5");
        free(text);
        /* varlink's envelopes, as varlink.c's jansson writes them. */
        ASSERT_OK(wire_write_reply(&w, &idl_inject_reply_type, &r, NULL, true));
        ASSERT_OK(wire_writer_take(&w, &text, &n));
        j = json_pack("{s:I}", "delivered", (json_int_t) 3);
        {
                _cleanup_free_ char *theirs = varlink_reply_new(j, true, &n);

                ASSERT_STREQ(text, theirs);
        }
        free(text);
        ASSERT_OK(wire_write_error(&w, "org.varlink.service.InvalidParameter",
                                   &idl_varlink_invalid_parameter_error_type, &e, NULL));
        ASSERT_OK(wire_writer_take(&w, &text, &n));
        {
                _cleanup_free_ char *theirs = varlink_error_new("org.varlink.service.InvalidParameter",
                                                                json_pack("{s:s}", "parameter", "psi.stall"), &n);

                ASSERT_STREQ(text, theirs);
        }
        free(text);
        /* An error with no parameters, and no members at all. */
        ASSERT_OK(wire_write_error(&w, "org.varlink.service.ExpectedMore", &idl_varlink_expected_more_error_type, NULL,
                                   NULL));
        ASSERT_OK(wire_writer_take(&w, &text, &n));
        ASSERT_STREQ(text, "{\"error\":\"org.varlink.service.ExpectedMore\",\"parameters\":{}}");
        free(text);
        wire_writer_done(&w);
        ASSERT_EQ(wire_put_u64(buf, 0) - buf, 1);
        *wire_put_u64(buf, UINT64_MAX) = 0;
        ASSERT_STREQ(buf, "18446744073709551615");
}

/* Beyond the writer's stack: the heap; and every allocation failing in turn. */
static void test_writer(void) {
        char *big = hold(malloc(3 * WIRE_WRITER_STACK));
        IdlNoSuchCgroupError e = { .cgroup = IDL_CGROUP(big) };
        char *text;
        WireWriter w;
        size_t n;
        int k;

        memset(big, 'x', 3 * WIRE_WRITER_STACK - 1);
        big[0] = '/';
        big[3 * WIRE_WRITER_STACK - 1] = 0;
        wire_writer_init(&w, 0);
        ASSERT_OK(wire_write_object(&w, &idl_no_such_cgroup_error_type, &e, NULL));
        ASSERT_TRUE(w.buf != w.stack);
        ASSERT_OK(wire_writer_take(&w, &text, &n));
        ASSERT_EQ(n, strlen("{\"cgroup\":\"\"}") + 3 * WIRE_WRITER_STACK - 1 + 1);
        free(text);
        for (unsigned i = 1;; i++) {
                bool injected;

                fail_inject_reset();
                fail_inject_after(FAIL_MALLOC, i);
                k = wire_write_object(&w, &idl_no_such_cgroup_error_type, &e, NULL);
                if (k >= 0)
                        k = wire_writer_take(&w, &text, &n);
                injected = fail_inject_fired(FAIL_MALLOC) > 0;
                fail_inject_reset();
                wire_writer_done(&w);
                if (!injected) {
                        ASSERT_OK(k);
                        free(text);
                        break;
                }
                ASSERT_ERR(k, ENOMEM);
        }
        release_held();
}

/* ---- the decoder ---- */

/* Decode @text as @t with @flags into @ret; returns the result, the failure in @d (done by the caller). */
static int decode(const char *text, const WireType *t, unsigned flags, void *ret, WireDecode *d) {
        json_t *v = json_loads(text, 0, NULL);
        int k;

        ASSERT_TRUE(v && n_held_json < ELEMENTSOF(held_json));
        held_json[n_held_json++] = v;   /* the result borrows its strings */
        *d = (WireDecode) { .flags = flags };
        k = wire_decode(v, t, ret, d);
        return k;
}

/* Decoding @text as @t fails with @failure at @path (strictly, or with @flags). */
static void expect_failure(const char *text, const WireType *t, unsigned flags, WireFailure failure,
                           const char *path) {
        void *obj = hold(calloc(1, t->size ?: 1));
        WireDecode d;
        int k = decode(text, t, flags, obj, &d);

        if (k >= 0 || d.failure != failure || !streq(d.path, path))
                TEST_FAIL("%s as %s: %d, failure %d at \"%s\", not %d at \"%s\"", text, t->name, k, d.failure, d.path,
                          failure, path);
        ASSERT_ERR(k, failure == WIRE_FAIL_KIND ? ENOMSG : EINVAL);
        for (size_t i = 0; i < (t->size ?: 1); i++)
                ASSERT_EQ(((const char *) obj)[i], 0);
        wire_decode_done(&d);
}

static void test_decode_failures(void) {
        const WireType *sub = &idl_subscribe_params_type;

        expect_failure("{\"bogus\":1}", sub, 0, WIRE_FAIL_UNKNOWN, "bogus");
        expect_failure("{\"level\":5,\"bogus\":1}", sub, 0, WIRE_FAIL_TYPE, "level");
        expect_failure("{\"level\":5,\"bogus\":1}", sub, WIRE_DECODE_UNKNOWN_FIRST, WIRE_FAIL_UNKNOWN, "bogus");
        expect_failure("{\"level\":\"extreme\"}", sub, 0, WIRE_FAIL_VALUE, "level");
        expect_failure("{\"psi\":5}", sub, 0, WIRE_FAIL_TYPE, "psi");
        expect_failure("{\"psi\":{\"stall\":\"most\",\"threshold_us\":1,\"window_us\":2}}", sub, 0, WIRE_FAIL_VALUE,
                       "psi.stall");
        expect_failure("{\"psi\":{\"stall\":\"some\",\"threshold_us\":-1,\"window_us\":2}}", sub, 0, WIRE_FAIL_RANGE,
                       "psi.threshold_us");
        expect_failure("{\"psi\":{\"stall\":\"some\",\"threshold_us\":1.5,\"window_us\":2}}", sub, 0, WIRE_FAIL_TYPE,
                       "psi.threshold_us");
        expect_failure("{\"psi\":{\"stall\":\"some\",\"threshold_us\":1}}", sub, 0, WIRE_FAIL_MISSING, "psi.window_us");
        expect_failure("{\"psi\":{\"stall\":\"some\",\"threshold_us\":1,\"window_us\":null}}", sub, 0,
                       WIRE_FAIL_MISSING, "psi.window_us");
        expect_failure("{\"psi\":{\"stall\":\"some\",\"threshold_us\":1,\"window_us\":2,\"x\":0}}", sub, 0,
                       WIRE_FAIL_UNKNOWN, "psi.x");
        expect_failure("{\"cgroup\":\"/a/../b\"}", sub, 0, WIRE_FAIL_CGROUP, "cgroup");
        expect_failure("{\"cgroup\":7}", sub, 0, WIRE_FAIL_TYPE, "cgroup");
        expect_failure("{\"kills\":\"yes\"}", sub, 0, WIRE_FAIL_TYPE, "kills");
        expect_failure("[]", sub, 0, WIRE_FAIL_TYPE, "");
        /* Inject's level is required. */
        expect_failure("{\"cgroup\":\"/\"}", &idl_inject_params_type, 0, WIRE_FAIL_MISSING, "level");
        /* An event of a kind Subscribe's reply does not name, one of another kind's members, none at all. */
        expect_failure("{\"event\":{\"kind\":\"exploded\"}}", &idl_subscribe_reply_type, WIRE_DECODE_LENIENT,
                       WIRE_FAIL_KIND, "event.kind");
        expect_failure("{\"event\":{\"cgroup\":\"/\"}}", &idl_subscribe_reply_type, 0, WIRE_FAIL_MISSING, "event.kind");
        expect_failure("{\"event\":{\"kind\":\"removed\",\"cgroup\":\"/\",\"by\":\"x\"}}", &idl_subscribe_reply_type, 0,
                       WIRE_FAIL_UNKNOWN, "event.by");
        /* In a list: its index. */
        expect_failure("{\"nodes\":[{\"cgroup\":\"/\",\"usage\":1,\"min_usage\":0,\"low_usage\":0,"
                       "\"children_min_usage\":0,\"children_low_usage\":0,\"state\":\"min\"},{\"cgroup\":1}]}",
                       &idl_get_protection_reply_type, 0, WIRE_FAIL_TYPE, "nodes[1].cgroup");
        /* A constant is a constant even to a lenient reader. */
        expect_failure("{\"kind\":\"pressure\",\"cgroup\":\"/\",\"by\":\"k\",\"reason\":\"r\",\"seq\":1,\"count\":1,"
                       "\"missed\":0,\"time_us\":1,\"monotonic_us\":1}", &idl_killed_event_type, WIRE_DECODE_LENIENT,
                       WIRE_FAIL_VALUE, "kind");
        release_held();
}

static void test_decode_values(void) {
        IdlSubscribeParams p;
        IdlSubscribeReply r;
        IdlMetricsListReply m;
        WireDecode d;
        json_t *nul;

        /* Paths normalized, as the peer named them; null as absent for an optional member. */
        ASSERT_OK(decode("{\"cgroup\":\"//a//b/\",\"psi\":{\"window_us\":2,\"stall\":\"full\",\"threshold_us\":1},"
                         "\"min_interval_ms\":null,\"resource\":\"io\"}", &idl_subscribe_params_type, 0, &p, &d));
        ASSERT_STREQ(p.cgroup.path, "/a/b");
        ASSERT_TRUE(p.cgroup.named && !p.cgroup.v1);
        ASSERT_TRUE(p.psi && p.psi->stall == IDL_PSI_STALL_FULL && p.psi->threshold_us == 1 && p.psi->window_us == 2);
        ASSERT_EQ(p.min_interval_ms.is, WIRE_NULL);
        ASSERT_EQ(p.resource.is, WIRE_SET);
        ASSERT_EQ(p.resource.v, IDL_RESOURCE_IO);
        ASSERT_EQ(p.level.is, WIRE_ABSENT);
        ASSERT_TRUE(!p.vmpressure);
        wire_decode_done(&d);

        /* Lenient: unknown members skipped, unknown names kept as -1, reals truncated for integers. */
        ASSERT_OK(decode("{\"event\":{\"kind\":\"level\",\"cgroup\":\"/\",\"level\":\"extreme\",\"new\":1,"
                         "\"headroom_bytes\":2.9,\"seq\":1,\"missed\":0,\"time_us\":1e3,\"monotonic_us\":1e40}}",
                         &idl_subscribe_reply_type, WIRE_DECODE_LENIENT, &r, &d));
        ASSERT_EQ(r.event.kind, IDL_EVENT_KIND_LEVEL);
        ASSERT_EQ(r.event.level.level, -1);
        ASSERT_TRUE(r.event.level.headroom_bytes.is == WIRE_SET && r.event.level.headroom_bytes.v == 2);
        ASSERT_EQ(r.event.level.reclaim_target_bytes.is, WIRE_ABSENT);
        ASSERT_U64_EQ(r.event.level.time_us, 1000);
        ASSERT_U64_EQ(r.event.level.monotonic_us, INT64_MAX);
        ASSERT_TRUE(idl_event_cgroup(&r.event) && streq(idl_event_cgroup(&r.event)->path, "/"));
        wire_decode_done(&d);
        expect_failure("{\"event\":{\"kind\":\"level\",\"cgroup\":\"/\",\"level\":\"extreme\",\"seq\":1,\"missed\":0,"
                       "\"time_us\":1,\"monotonic_us\":1}}", &idl_subscribe_reply_type, 0, WIRE_FAIL_VALUE,
                       "event.level");

        /* "any" and untagged objects: the JSON value, borrowed. */
        ASSERT_OK(decode("{\"name\":\"io.pressured.Memory.Events\",\"fields\":{\"type\":\"low\"},\"value\":[1]}",
                         &idl_metrics_list_reply_type, 0, &m, &d));
        ASSERT_TRUE(json_is_object(m.fields.value) && json_is_array(m.value.value) && !m.object);
        wire_decode_done(&d);

        /* A string jansson holds with a NUL in it is no string here. */
        nul = json_pack("{s:s#}", "interface", "a\0b", (size_t) 3);
        {
                IdlVarlinkGetInterfaceDescriptionParams q;

                d = (WireDecode) {};
                ASSERT_ERR(wire_decode(nul, &idl_varlink_get_interface_description_params_type, &q, &d), EINVAL);
                ASSERT_EQ(d.failure, WIRE_FAIL_TYPE);
                ASSERT_STREQ(d.path, "interface");
                wire_decode_done(&d);
        }
        json_decref(nul);
        release_held();
}

/* Every allocation of decoding failing in turn: -ENOMEM, nothing leaked (valgrind, ASan). */
static void test_decode_out_of_memory(void) {
        static const struct {
                const WireType *type;
                const char *text;
                unsigned allocations;
        } cases[] = {
                { &idl_get_protection_reply_type,
                  "{\"nodes\":[{\"cgroup\":\"/a//b\",\"usage\":1,\"min\":null,\"min_usage\":0,\"low_usage\":0,"
                  "\"children_min_usage\":0,\"children_low_usage\":0,\"state\":\"min\"},{\"cgroup\":\"/\",\"usage\":1,"
                  "\"min_usage\":0,\"low_usage\":0,\"children_min_usage\":0,\"children_low_usage\":0,"
                  "\"state\":\"low\"}]}",
                  5 },
                { &idl_subscribe_params_type,
                  "{\"cgroup\":\"/x\",\"psi\":{\"stall\":\"some\",\"threshold_us\":1,\"window_us\":2}}", 3 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *v = json_loads(cases[i].text, 0, NULL);
                void *obj = calloc(1, cases[i].type->size);

                ASSERT_TRUE(v && obj);
                for (unsigned n = 1;; n++) {
                        WireDecode d = {};
                        bool injected;
                        int k;

                        fail_inject_reset();
                        fail_inject_after(FAIL_MALLOC, n);
                        k = wire_decode(v, cases[i].type, obj, &d);
                        injected = fail_inject_fired(FAIL_MALLOC) > 0;
                        fail_inject_reset();
                        wire_decode_done(&d);
                        if (!injected) {
                                ASSERT_EQ(n, cases[i].allocations + 1);
                                ASSERT_OK(k);
                                break;
                        }
                        ASSERT_ERR(k, ENOMEM);
                }
                free(obj);
                json_decref(v);
        }
}

/* A table walk finds every record the tables name, and each named once. */
static void test_tables(void) {
        ASSERT_TRUE(idl_n_types > 60);
        for (size_t i = 0; i < idl_n_types; i++)
                for (size_t j = 0; j < i; j++)
                        if (streq(idl_types[i]->name, idl_types[j]->name))
                                TEST_FAIL("%s twice", idl_types[i]->name);
        ASSERT_TRUE(idl_event_types[IDL_EVENT_KIND_KILLED] == &idl_killed_event_type);
        ASSERT_EQ(idl_n_errors, _IDL_ERROR_MAX + 1);    /* io.pressured's and org.varlink.service's, and Metrics' */
        ASSERT_STREQ(IDL_KEY_cgroup, "\"cgroup\":");
        ASSERT_STREQ(IDL_NAME_monotonic_us, "monotonic_us");
}

int main(int argc, char **argv) {
        if (argc != 2) {
                fprintf(stderr, "usage: %s GOLDEN-DIR\n", argv[0]);
                return 2;
        }
        test_tables();
        test_random_bytes();
        test_reals();
        test_golden(argv[1]);
        test_required_and_values();
        test_views();
        test_members_and_envelopes();
        test_writer();
        test_decode_failures();
        test_decode_values();
        test_decode_out_of_memory();
        return 0;
}
