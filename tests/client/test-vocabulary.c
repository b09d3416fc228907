/* SPDX-License-Identifier: MIT */
/*
 * libpressure's names are the interface's: every name io.pressured.varlink
 * declares (generated into vocabulary-idl.h) and every name of the shared
 * table (vocabulary.c) has a value of libpressure's public enum, and the
 * public *_to_string() and *_from_string() functions read it back to
 * that value. The public enums keep their numbers (ABI).
 */
#include <errno.h>
#include <string.h>

#include "pressure.h"
#include "pressure-event.h"
#include "tests.h"
#include "util.h"
#include "vocabulary.h"

/* The public enums' numbers are ABI: released values never change. */
_Static_assert(PRESSURE_LEVEL_LOW == 1 && PRESSURE_LEVEL_CRITICAL == 3, "pressure_level");
_Static_assert(PRESSURE_STALL_SOME == 0 && PRESSURE_STALL_FULL == 1, "pressure_stall");
_Static_assert(PRESSURE_VMPRESSURE_MODE_DEFAULT == 1 && PRESSURE_VMPRESSURE_MODE_LOCAL == 3, "vmpressure mode");
_Static_assert(PRESSURE_SOURCE_PSI == 1 && PRESSURE_SOURCE_INJECT == 5 && PRESSURE_SOURCE_KILLS == 6, "pressure_source");
_Static_assert(PRESSURE_RESOURCE_MEMORY == 1 && PRESSURE_RESOURCE_IO == 3, "pressure_resource");
_Static_assert(PRESSURE_PROTECTION_NONE == 1 && PRESSURE_PROTECTION_MIN == 3, "pressure_protection_state");
_Static_assert(PRESSURE_RECLAIM_PROBING == 1 && PRESSURE_RECLAIM_UNSUPPORTED == 4, "pressure_reclaim_state");
_Static_assert(PRESSURE_EVENT_SUBSCRIBED == 0 && PRESSURE_EVENT_REMOVED == 4 && PRESSURE_EVENT_RECONNECTED == 5 &&
               PRESSURE_EVENT_ERROR == 6 && PRESSURE_EVENT_CLEARED == 7 && PRESSURE_EVENT_KILLED == 8 &&
               PRESSURE_EVENT_TRIGGER_CHANGED == 9 && PRESSURE_EVENT_LEVEL == 10, "pressure_event_kind");
_Static_assert(PRESSURE_LEVEL_NORMAL == PRESSURE_LEVEL_NONE, "a level stream's normal is no pressure");

/* Values 0..LAST of a public enum are named by @to_string. */
typedef const char *(*ToString)(int v);

static const char *level_name(int v) { return pressure_level_to_string((pressure_level) v); }
static const char *source_name(int v) { return pressure_source_to_string((pressure_source) v); }
static const char *resource_name(int v) { return pressure_resource_to_string((pressure_resource) v); }
static const char *kind_name(int v) { return pressure_event_kind_to_string((pressure_event_kind) v); }
static const char *state_name(int v) { return pressure_protection_state_to_string((pressure_protection_state) v); }
static const char *reclaim_name(int v) { return pressure_reclaim_state_to_string((pressure_reclaim_state) v); }
static const char *stall(int v) { return stall_name((pressure_stall) v); }
static const char *mode(int v) { return vmpressure_mode_name((pressure_vmpressure_mode) v); }

/* The public value named @name among 0..@last, or -1; fails if two are. */
static int value_of(ToString to_string, int last, const char *name) {
        int found = -1;

        for (int v = 0; v <= last; v++) {
                const char *s = to_string(v);

                if (s && streq(s, name)) {
                        if (found >= 0)
                                TEST_FAIL("\"%s\" names both %d and %d", name, found, v);
                        found = v;
                }
        }
        return found;
}

/*
 * Every name of @table has a public value among 0..@last, and every public
 * value that has a name is in @table or @extra.
 */
static void check_enum(const char *what, const char *const *table, size_t n, const char *const *extra, size_t n_extra,
                       ToString to_string, int last) {
        for (size_t i = 0; i < n; i++)
                if (value_of(to_string, last, table[i]) < 0)
                        TEST_FAIL("%s: the interface's \"%s\" has no public value", what, table[i]);
        for (int v = 0; v <= last + 8; v++) {
                const char *s = to_string(v);
                bool known = false;

                if (!s)
                        continue;
                if (v > last)
                        TEST_FAIL("%s: %d, beyond the enum, is named \"%s\"", what, v, s);
                for (size_t i = 0; i < n; i++)
                        known = known || streq(table[i], s);
                for (size_t i = 0; i < n_extra; i++)
                        known = known || streq(extra[i], s);
                if (!known)
                        TEST_FAIL("%s: %d is named \"%s\", which the interface does not declare", what, v, s);
        }
        ASSERT_TRUE(to_string(-1) == NULL);
}

#define CHECK_ENUM(what, table, to_string, last) \
        check_enum((what), (table), ELEMENTSOF(table), NULL, 0, (to_string), (last))

static void test_enums(void) {
        CHECK_ENUM("level", idl_level_table, level_name, PRESSURE_LEVEL_CRITICAL);
        CHECK_ENUM("stall", idl_psi_stall_table, stall, PRESSURE_STALL_FULL);
        CHECK_ENUM("vmpressure mode", idl_vmpressure_mode_table, mode, PRESSURE_VMPRESSURE_MODE_LOCAL);
        CHECK_ENUM("source", idl_source_table, source_name, PRESSURE_SOURCE_KILLS);
        CHECK_ENUM("resource", idl_resource_table, resource_name, PRESSURE_RESOURCE_IO);
        CHECK_ENUM("protection state", idl_protection_state_table, state_name, PRESSURE_PROTECTION_MIN);
        CHECK_ENUM("reclaim state", voc_reclaim_state_table, reclaim_name, PRESSURE_RECLAIM_UNSUPPORTED);
        check_enum("event kind", idl_event_kind_table, ELEMENTSOF(idl_event_kind_table), voc_local_event_kind_table,
                   ELEMENTSOF(voc_local_event_kind_table), kind_name, PRESSURE_EVENT_PREKILL);
}

/*
 * A level event reads every level of the interface's LevelEvent: "normal"
 * as NORMAL, the others as the portable level of that name.
 */
static void test_stream_levels(void) {
        for (size_t i = 0; i < ELEMENTSOF(idl_stream_level_table); i++) {
                json_t *v = json_pack("{s:s, s:s, s:s}", "kind", IDL_EVENT_KIND_NAME(LEVEL), "cgroup", "/",
                                      "level", idl_stream_level_table[i]);
                pressure_event e;

                ASSERT_TRUE(v != NULL);
                ASSERT_OK(event_parse(v, &e));
                if (i == IDL_STREAM_LEVEL_NORMAL)
                        ASSERT_TRUE(pressure_event_get_level(&e) == PRESSURE_LEVEL_NORMAL);
                else
                        ASSERT_STREQ(pressure_level_to_string(pressure_event_get_level(&e)), idl_stream_level_table[i]);
                json_decref(v);
        }
        ASSERT_TRUE(pressure_level_to_string(PRESSURE_LEVEL_NORMAL) == NULL);
}

/* The two public parsers read every name back to its value, and refuse others. */
static void test_from_string(void) {
        for (size_t i = 0; i < ELEMENTSOF(idl_level_table); i++) {
                int v = pressure_level_from_string(idl_level_table[i]);

                ASSERT_TRUE(v > PRESSURE_LEVEL_NONE);
                ASSERT_STREQ(pressure_level_to_string((pressure_level) v), idl_level_table[i]);
        }
        for (size_t i = 0; i < ELEMENTSOF(idl_resource_table); i++) {
                int v = pressure_resource_from_string(idl_resource_table[i]);

                ASSERT_TRUE(v > PRESSURE_RESOURCE_NONE);
                ASSERT_STREQ(pressure_resource_to_string((pressure_resource) v), idl_resource_table[i]);
        }
        ASSERT_ERR(pressure_level_from_string("Low"), EINVAL);
        ASSERT_ERR(pressure_level_from_string(NULL), EINVAL);
        ASSERT_ERR(pressure_resource_from_string("memory "), EINVAL);
        ASSERT_ERR(pressure_resource_from_string(""), EINVAL);
}

/* Every error of the interfaces maps to its own errno but the two libpressure never expects. */
static void test_errors(void) {
        for (size_t i = 0; i < ELEMENTSOF(idl_error_table); i++) {
                int r = error_name_to_errno(idl_error_table[i]);

                if (i == IDL_ERROR_VARLINK_METHOD_NOT_IMPLEMENTED || i == IDL_ERROR_VARLINK_PERMISSION_DENIED)
                        ASSERT_ERR(r, EREMOTEIO);
                else if (r == -EREMOTEIO)
                        TEST_FAIL("%s has no errno of its own", idl_error_table[i]);
                for (size_t j = 0; j < i; j++)
                        if (r != -EREMOTEIO && r == error_name_to_errno(idl_error_table[j]))
                                TEST_FAIL("%s and %s have the same errno", idl_error_table[i], idl_error_table[j]);
        }
        ASSERT_ERR(error_name_to_errno("io.pressured.NoSuchThing"), EREMOTEIO);
        ASSERT_ERR(error_name_to_errno(NULL), EREMOTEIO);
        ASSERT_STREQ(IDL_ERROR_NAME(NO_SUCH_CGROUP), "io.pressured.NoSuchCgroup");
        ASSERT_STREQ(IDL_ERROR_NAME(VARLINK_EXPECTED_MORE), "org.varlink.service.ExpectedMore");
}

int main(void) {
        test_enums();
        test_stream_levels();
        test_from_string();
        test_errors();
        return 0;
}
