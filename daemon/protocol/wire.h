/* SPDX-License-Identifier: MIT */
/*
 * The wire format by table: one encoder and one decoder that walk the
 * field tables gen-wire.py makes from the varlink interfaces (idl-types.h),
 * so that each message's shape is written down once, in the IDL.
 *
 * The encoder writes JSON text itself, straight into a WireWriter (on the
 * stack, then the heap), byte for byte what jansson writes with the
 * daemon's flags (VARLINK_JSON_FLAGS: compact, reals with 6 significant
 * digits, every non-ASCII character escaped): members in the interface's
 * order, optional ones only when set, @cgroup paths as the receiving peer's
 * cgroup namespace names them. The decoder reads a json_t (jansson) into
 * the struct, strictly for the daemon (unknown members, wrong types,
 * missing ones and unknown names are errors) or leniently for clients
 * (unknown members are skipped, unknown names kept as invalid values).
 * This header needs no JSON library.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup-ns.h"

struct json_t;

/* What a member is; the C member each kind is read from is in the comment. */
typedef enum WireKind {
        WIRE_BOOL,              /* bool; optional: WireOptBool */
        WIRE_INT,               /* uint64_t (above INT64_MAX written as INT64_MAX); optional: WireOptU64 */
        WIRE_FLOAT,             /* double (finite); optional: WireOptF64 */
        WIRE_STRING,            /* const char * (UTF-8); optional: NULL absent, WIRE_NULL_STR null (also decoded) */
        WIRE_CGROUP,            /* IdlCgroup; optional like a string, by its path */
        WIRE_ENUM,              /* an Idl* enum (an int); optional: WireOptEnum */
        WIRE_CONST,             /* none: the one value of a one-valued enum, from the table */
        WIRE_OBJECT,            /* the struct by value; optional: a pointer to it, NULL absent */
        WIRE_ARRAY,             /* WireArray of the struct, or IdlStringArray */
        WIRE_ONEOF,             /* a union struct: its discriminating enum, then the member */
        WIRE_ANY,               /* WireAny */
        _WIRE_KIND_MAX,
} WireKind;

/* WireField.flags */
enum {
        WIRE_OPTIONAL = 1 << 0,         /* ?T */
        WIRE_SUBSCRIBER = 1 << 1,       /* @subscriber: the receiving subscription's own value */
        WIRE_HOST_PATH = 1 << 2,        /* @host-path: a path of the daemon's file system */
};

/* The names of an enum, by value. */
typedef struct WireEnum {
        const char *const *names;
        size_t n;
} WireEnum;

typedef struct WireType WireType;

/* One member of a record. */
typedef struct WireField {
        const char *name;
        const char *key;        /* "\"name\":" */
        uint8_t key_len;
        uint8_t kind;           /* WireKind */
        uint8_t flags;
        uint16_t offset;        /* of the C member (CONST: none) */
        uint32_t values;        /* ENUM: the values this member may have, bit (1 << value) each */
        const void *sub;        /* OBJECT, ARRAY: const WireType * (NULL: an array of strings);
                                 * ENUM: const WireEnum *; ONEOF: const WireOneof *; CONST: the name */
} WireField;

/* A record: a type, a method's parameters or reply, an error's parameters. */
struct WireType {
        const char *name;       /* as in Python: KilledEvent, GetStatusReply, PrekillNotifyParams */
        size_t size;            /* of its C struct; 0 for a record with no members */
        const WireField *fields;
        size_t n_fields;
};

/* An "@oneof" member: a struct of the discriminating enum and a union of the types. */
typedef struct WireOneof {
        const char *name;       /* the discriminating member, e.g. "kind" */
        const char *key;
        uint8_t key_len;
        const WireEnum *values;
        const WireType *const *types;   /* by value; NULL: not one of them */
        size_t kind_offset, offset;     /* of the enum and of the union */
} WireOneof;

/* A table row's name, key and key length. */
#define WIRE_KEY(name) name, "\"" name "\":", (uint8_t) (sizeof(name) + 2)

/* Whether an optional member is there, and whether it is null. Zero: absent. */
typedef enum WirePresence {
        WIRE_ABSENT,
        WIRE_NULL,
        WIRE_SET,
} WirePresence;

typedef struct WireOptU64 {
        uint64_t v;
        WirePresence is;
} WireOptU64;

typedef struct WireOptF64 {
        double v;
        WirePresence is;
} WireOptF64;

typedef struct WireOptBool {
        bool v;
        WirePresence is;
} WireOptBool;

/* How wire.c reads every Idl*Opt of an enum. */
typedef struct WireOptEnum {
        int v;
        WirePresence is;
} WireOptEnum;

/* How wire.c reads every Idl*Array; a required array is written whatever its "is". */
typedef struct WireArray {
        const void *items;
        size_t n;
        WirePresence is;
} WireArray;

typedef struct IdlStringArray {
        const char *const *items;
        size_t n;
        WirePresence is;
} IdlStringArray;

/*
 * An untagged object or "any": @json, text written as it is, or else @value,
 * written as jansson writes it; the decoder sets @value (borrowed).
 */
typedef struct WireAny {
        const char *json;
        const struct json_t *value;
} WireAny;

/*
 * A @cgroup value. @path is a real path, which the encoder names as the
 * receiving peer does, in the hierarchy of @v1 (the cgroup v1 memory one)
 * or cgroup2: beneath the peer's root it loses the root, the root itself
 * or a cgroup above it is "/", any other path fails the message with
 * -EXDEV. A @named path is one the peer gave (or the decoder read): it is
 * written as it is.
 */
typedef struct IdlCgroup {
        const char *path;
        bool v1;
        bool named;
} IdlCgroup;

/* The address that stands for null as the value of an optional string or cgroup. */
extern const char wire_null_str[];
#define WIRE_NULL_STR wire_null_str

#define WIRE_U64(x) ((WireOptU64) { .v = (x), .is = WIRE_SET })
#define WIRE_NULL_U64 ((WireOptU64) { .is = WIRE_NULL })
#define WIRE_F64(x) ((WireOptF64) { .v = (x), .is = WIRE_SET })
#define WIRE_NULL_F64 ((WireOptF64) { .is = WIRE_NULL })
#define WIRE_BOOLEAN(x) ((WireOptBool) { .v = (x), .is = WIRE_SET })
#define IDL_CGROUP(p) ((IdlCgroup) { .path = (p) })
#define IDL_CGROUP_V1(p) ((IdlCgroup) { .path = (p), .v1 = true })
#define IDL_CGROUP_NAMED(p) ((IdlCgroup) { .path = (p), .named = true })
#define IDL_CGROUP_NULL ((IdlCgroup) { .path = WIRE_NULL_STR })

/* ---- encoding ---- */

#define WIRE_WRITER_STACK 2048

/* WireWriter.flags */
enum {
        WIRE_WRITE_DECIMAL = 1 << 0,    /* reals with 15 significant digits (VARLINK_JSON_FLAGS_DECIMAL) */
};

/* Text being written: in @stack until it outgrows it, then on the heap. Not to be copied. */
typedef struct WireWriter {
        char *buf;
        size_t size, allocated;
        unsigned flags;
        char stack[WIRE_WRITER_STACK];
} WireWriter;

/* wire_writer_init - an empty writer with @flags (WIRE_WRITE_*). */
void wire_writer_init(WireWriter *w, unsigned flags);

/* wire_writer_done - free what @w holds; it is empty again. */
void wire_writer_done(WireWriter *w);

/*
 * wire_writer_take - the text written, NUL-terminated, malloc'ed; @ret_size
 * counts the NUL (as varlink's messages do). @w is empty again. Returns 0 or -ENOMEM.
 */
int wire_writer_take(WireWriter *w, char **ret, size_t *ret_size);

/*
 * wire_write_object - @obj (a struct of @t) as a JSON object.
 * @view: the receiving peer's cgroup namespace for @cgroup members (NULL: the daemon's own)
 *
 * Returns 0, or on the first value that cannot be written (the writer's
 * text is then unusable): -EINVAL for a required member unset, a value
 * out of its enum's allowed values, a NaN or infinite real; -EILSEQ for a
 * string that is not UTF-8; -EXDEV for a cgroup outside the peer's view;
 * -ENOMEM.
 */
int wire_write_object(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view);

/*
 * wire_write_members - @obj's members without the braces ("a":1,"b":2),
 * leaving out those with a flag of @skip_flags (WIRE_SUBSCRIBER: the body
 * of an event every subscriber shares). Returns the number written, or
 * an error as wire_write_object().
 */
int wire_write_members(WireWriter *w, const WireType *t, const void *obj, const CgroupView *view,
                       unsigned skip_flags);

/*
 * wire_write_reply - a varlink reply: {"parameters":{...}}, with
 * ,"continues":true if @continues (varlink_reply_new()'s bytes). Errors as
 * wire_write_object().
 */
int wire_write_reply(WireWriter *w, const WireType *t, const void *params, const CgroupView *view, bool continues);

/* wire_write_error - a varlink error: {"error":"@error","parameters":{...}} (varlink_error_new()'s bytes). */
int wire_write_error(WireWriter *w, const char *error, const WireType *t, const void *params,
                     const CgroupView *view);

/* wire_put_u64 - @v in decimal at @p (room for 20 digits); returns the end. */
char *wire_put_u64(char *p, uint64_t v);

/* ---- decoding ---- */

/* Why a value could not be decoded. */
typedef enum WireFailure {
        WIRE_FAIL_NONE,
        WIRE_FAIL_UNKNOWN,      /* a member the type does not declare (strict) */
        WIRE_FAIL_TYPE,         /* a value of another JSON type */
        WIRE_FAIL_RANGE,        /* a negative integer */
        WIRE_FAIL_MISSING,      /* a required member absent or null */
        WIRE_FAIL_VALUE,        /* a name the member's enum does not allow (strict), another constant */
        WIRE_FAIL_CGROUP,       /* a cgroup path cgroup_path_normalize() refuses */
        WIRE_FAIL_KIND,         /* a "@oneof" value of no type it names */
} WireFailure;

/* WireDecode.flags */
enum {
        WIRE_DECODE_LENIENT = 1 << 0,           /* a client's: skip unknown members, keep unknown names as -1,
                                                 * truncate reals given for integers, take cgroup paths as
                                                 * they are (strict: normalized, or WIRE_FAIL_CGROUP) */
        WIRE_DECODE_UNKNOWN_FIRST = 1 << 1,     /* an unknown member is reported before any other failure */
};

#define WIRE_PATH_MAX 128

typedef struct WireChunk WireChunk;

/* How to decode, and what decoding left: the memory the result points to, or the failure. */
typedef struct WireDecode {
        unsigned flags;
        WireChunk *arena;           /* arrays, optional objects, normalized cgroup paths */
        WireFailure failure;
        char path[WIRE_PATH_MAX];   /* of the failure: "psi.stall", "registrations[2].cgroup" */
        const char *given;          /* WIRE_FAIL_CGROUP: the path as given (borrowed) */
} WireDecode;

/*
 * wire_decode - the JSON object @v as a struct of @t, into @ret (of
 * t->size bytes). Strings are borrowed from @v, which must outlive @ret;
 * what else @ret points to is held by @d until wire_decode_done(). Members
 * are read in the order of @v, so the first failure is that of the first
 * bad member as the peer wrote them (with WIRE_DECODE_UNKNOWN_FIRST, of
 * the first unknown one if any), then the first missing one.
 *
 * Returns 0; -EINVAL with @d's failure and path; -ENOMSG for a "@oneof"
 * value of an unknown type (WIRE_FAIL_KIND); -ENOMEM. On failure @ret is
 * zeroed.
 */
int wire_decode(const struct json_t *v, const WireType *t, void *ret, WireDecode *d);

/* wire_decode_done - free what decoding with @d allocated; @d's flags stay. */
void wire_decode_done(WireDecode *d);
