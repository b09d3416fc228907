/* SPDX-License-Identifier: MIT */
/*
 * source_choose() over hand-made hierarchy facts: which source serves
 * each selector on cgroup2-only, v1-only and hybrid systems, and which
 * declared error answers when none can.
 */
#include "source-choice.h"
#include "tests.h"
#include "util.h"
#include "varlink-error.h"

/* A cgroup present in both hierarchies of a hybrid system, with every file. */
static const CgroupFacts hybrid = {
        .has_v2 = true, .has_v1 = true, .psi_system = true,
        .in_v2 = 0, .in_v1 = 0,
        .v2_pressure = true, .v2_current = true, .v2_events = true,
};

static void expect_source(Selector sel, const CgroupFacts *f, SourceType want) {
        SourceFailure e = {};
        SourceType t = _SOURCE_INVALID;

        ASSERT_OK(source_choose(sel, f, &t, &e));
        ASSERT_STREQ(source_type_to_string(t), source_type_to_string(want));
        ASSERT_EQ(e.kind, SOURCE_FAILURE_NONE);
}

static void expect_error(Selector sel, const CgroupFacts *f, const char *name, const char *source) {
        _cleanup_(varlink_error_done) VarlinkError e = {};
        SourceFailure failure = {};
        SourceType t = _SOURCE_INVALID;
        int k;

        k = source_choose(sel, f, &t, &failure);
        ASSERT_TRUE(k < 0);
        ASSERT_EQ(failure.error, k);
        ASSERT_EQ(t, _SOURCE_INVALID);
        /* What the server answers: the failure named for the wire. */
        varlink_error_from_failure(&e, &failure, "/a");
        ASSERT_STREQ(e.name, name);
        if (source)
                ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "source")), source);
}

static void test_level(void) {
        CgroupFacts f = hybrid;

        expect_source(SELECTOR_LEVEL, &f, SOURCE_PSI);
        /* No memory.pressure in cgroup2 (PSI off): vmpressure in v1. */
        f.v2_pressure = false;
        expect_source(SELECTOR_LEVEL, &f, SOURCE_VMPRESSURE);
        /* ... and not in v1 either. */
        f.in_v1 = -ENOENT;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
        /* ... and no v1 hierarchy. */
        f.has_v1 = false;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
        /* Nowhere at all. */
        f.in_v2 = -ENOENT;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.NoSuchCgroup", NULL);
        /* Only in v1: vmpressure. */
        f = hybrid;
        f.in_v2 = -ENOENT;
        expect_source(SELECTOR_LEVEL, &f, SOURCE_VMPRESSURE);
        /* A symlink escape in cgroup2 is refused even if v1 has the path. */
        f.in_v2 = -EXDEV;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.InvalidCgroupPath", NULL);
        f.in_v2 = -ELOOP;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.InvalidCgroupPath", NULL);
        /* Out of fds opening the v1 directory. */
        f.in_v2 = -ENOENT;
        f.in_v1 = -EMFILE;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.LimitExceeded", NULL);

        /* The whole system. */
        f = (CgroupFacts) { .system = true, .psi_system = true };
        expect_source(SELECTOR_LEVEL, &f, SOURCE_PSI);
        f.psi_system = false;
        f.has_v1 = true;
        expect_source(SELECTOR_LEVEL, &f, SOURCE_VMPRESSURE);
        f.has_v1 = false;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
}

static void test_explicit(void) {
        CgroupFacts f = hybrid;

        expect_source(SELECTOR_PSI, &f, SOURCE_PSI);
        expect_source(SELECTOR_VMPRESSURE, &f, SOURCE_VMPRESSURE);
        /* Only in v1: told so. */
        f.in_v2 = -ENOENT;
        expect_error(SELECTOR_PSI, &f, "io.pressured.SourceUnavailable", "psi");
        f.in_v1 = -ENOENT;
        expect_error(SELECTOR_PSI, &f, "io.pressured.NoSuchCgroup", NULL);
        f.has_v2 = false;
        expect_error(SELECTOR_PSI, &f, "io.pressured.SourceUnavailable", "psi");
        /* "/" needs no cgroup2 hierarchy for PSI. */
        f.system = true;
        expect_source(SELECTOR_PSI, &f, SOURCE_PSI);

        f = hybrid;
        f.in_v1 = -ENOENT;
        /* Only in cgroup2: told so. */
        expect_error(SELECTOR_VMPRESSURE, &f, "io.pressured.SourceUnavailable", "vmpressure");
        f.in_v2 = -ENOENT;
        expect_error(SELECTOR_VMPRESSURE, &f, "io.pressured.NoSuchCgroup", NULL);
        f.has_v1 = false;
        expect_error(SELECTOR_VMPRESSURE, &f, "io.pressured.SourceUnavailable", "vmpressure");
}

static void test_v2_only(void) {
        CgroupFacts f = hybrid;

        expect_source(SELECTOR_MEMORY_EVENTS, &f, SOURCE_MEMORY_EVENTS);
        expect_source(SELECTOR_PROTECTION, &f, SOURCE_PROTECTION);
        f.v2_events = false;
        expect_error(SELECTOR_MEMORY_EVENTS, &f, "io.pressured.SourceUnavailable", "memory_events");
        expect_source(SELECTOR_PROTECTION, &f, SOURCE_PROTECTION);
        f.v2_current = false;
        expect_error(SELECTOR_PROTECTION, &f, "io.pressured.SourceUnavailable", "protection");
        /* Only in v1: the source needs cgroup2. */
        f = hybrid;
        f.in_v2 = -ENOENT;
        expect_error(SELECTOR_MEMORY_EVENTS, &f, "io.pressured.SourceUnavailable", "memory_events");
        /* Nowhere. */
        f.in_v1 = -ENOENT;
        expect_error(SELECTOR_MEMORY_EVENTS, &f, "io.pressured.NoSuchCgroup", NULL);
        f.has_v2 = false;
        expect_error(SELECTOR_PROTECTION, &f, "io.pressured.SourceUnavailable", "protection");
}

/* kills: "/" always, a cgroup in cgroup2 with or without memory.events. */
static void test_kills(void) {
        CgroupFacts f = hybrid;

        expect_source(SELECTOR_KILLS, &f, SOURCE_KILLS);
        f.v2_events = false;
        f.v2_current = false;
        expect_source(SELECTOR_KILLS, &f, SOURCE_KILLS);
        f.in_v2 = -ENOENT;
        expect_error(SELECTOR_KILLS, &f, "io.pressured.SourceUnavailable", "kills");
        f.in_v1 = -ENOENT;
        expect_error(SELECTOR_KILLS, &f, "io.pressured.NoSuchCgroup", NULL);
        f.has_v2 = false;
        expect_error(SELECTOR_KILLS, &f, "io.pressured.SourceUnavailable", "kills");
        f = (CgroupFacts) { .system = true };
        expect_source(SELECTOR_KILLS, &f, SOURCE_KILLS);
}

/* cpu and io: PSI or SourceUnavailable, never vmpressure. */
static void test_level_cpu_io(void) {
        CgroupFacts f = hybrid;

        f.resource = RESOURCE_CPU;
        expect_source(SELECTOR_LEVEL, &f, SOURCE_PSI);
        expect_source(SELECTOR_PSI, &f, SOURCE_PSI);
        /* No cpu.pressure: no fallback to vmpressure. */
        f.v2_pressure = false;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
        /* Only in the v1 hierarchy. */
        f = hybrid;
        f.resource = RESOURCE_IO;
        f.in_v2 = -ENOENT;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
        /* In neither. */
        f.in_v1 = -ENOENT;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.NoSuchCgroup", NULL);
        /* A v1-only host. */
        f = (CgroupFacts) { .resource = RESOURCE_CPU, .has_v1 = true, .in_v2 = -ENOENT, .in_v1 = 0 };
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
        /* A path escaping the hierarchy. */
        f = hybrid;
        f.resource = RESOURCE_IO;
        f.in_v2 = -EXDEV;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.InvalidCgroupPath", NULL);
        /* Other failures to open it, as varlink_error_from_errno() maps them. */
        f.in_v2 = -ENOTDIR;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.InvalidCgroupPath", NULL);
        f.in_v2 = -EMFILE;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.LimitExceeded", NULL);
        f.in_v2 = -EACCES;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
        /* The whole system: /proc/pressure/cpu, or nothing (v1 is no help). */
        f = (CgroupFacts) { .resource = RESOURCE_CPU, .system = true, .psi_system = true, .has_v1 = true };
        expect_source(SELECTOR_LEVEL, &f, SOURCE_PSI);
        f.psi_system = false;
        expect_error(SELECTOR_LEVEL, &f, "io.pressured.SourceUnavailable", "psi");
}

/*
 * A cgroup only in the v1 memory hierarchy gets the same sentence from every
 * selector that needs cgroup2, naming both hierarchies; a path naming a
 * file is InvalidCgroupPath for every selector.
 */
static void test_v1_only_and_files(void) {
        static const struct {
                Selector selector;
                Resource resource;
                const char *source;
        } cases[] = {
                { SELECTOR_PSI, RESOURCE_MEMORY, "psi" },
                { SELECTOR_LEVEL, RESOURCE_CPU, "psi" },
                { SELECTOR_MEMORY_EVENTS, RESOURCE_MEMORY, "memory_events" },
                { SELECTOR_PROTECTION, RESOURCE_MEMORY, "protection" },
                { SELECTOR_KILLS, RESOURCE_MEMORY, "kills" },
        };
        static const Selector all[] = { SELECTOR_LEVEL, SELECTOR_PSI, SELECTOR_VMPRESSURE, SELECTOR_MEMORY_EVENTS,
                                        SELECTOR_PROTECTION, SELECTOR_KILLS };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                CgroupFacts f = hybrid;
                VarlinkError e = {};
                SourceFailure failure = {};
                SourceType t;
                char want[256];

                f.v2_root = "/sys/fs/cgroup/unified";
                f.v1_root = "/sys/fs/cgroup/memory";
                f.resource = cases[i].resource;
                f.in_v2 = -ENOENT;
                ASSERT_TRUE(source_choose(cases[i].selector, &f, &t, &failure) < 0);
                varlink_error_from_failure(&e, &failure, "/a");
                ASSERT_STREQ(e.name, "io.pressured.SourceUnavailable");
                ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "source")), cases[i].source);
                snprintf(want, sizeof(want),
                         "the cgroup exists only in the cgroup v1 memory hierarchy (/sys/fs/cgroup/memory), and %s "
                         "needs it in the cgroup2 hierarchy (/sys/fs/cgroup/unified)", cases[i].source);
                ASSERT_STREQ(json_string_value(json_object_get(e.parameters, "reason")), want);
                varlink_error_done(&e);
        }
        for (size_t i = 0; i < ELEMENTSOF(all); i++) {
                CgroupFacts f = hybrid;

                /* /x/memory.pressure: a file in both hierarchies' terms, or in one of them
                 * and nothing in the other. */
                f.in_v2 = f.in_v1 = -ENOTDIR;
                expect_error(all[i], &f, "io.pressured.InvalidCgroupPath", NULL);
                f.in_v1 = -ENOENT;
                expect_error(all[i], &f, "io.pressured.InvalidCgroupPath", NULL);
                f.in_v2 = -ENOENT;
                f.in_v1 = -ENOTDIR;
                expect_error(all[i], &f, "io.pressured.InvalidCgroupPath", NULL);
        }
}

int main(void) {
        test_level_cpu_io();
        test_level();
        test_explicit();
        test_v2_only();
        test_kills();
        test_v1_only_and_files();
        return 0;
}
