/* SPDX-License-Identifier: MIT */
/*
 * The daemon objects under the server layer that several unit tests build
 * alike: an event base, the default configuration, the counters, the two
 * hierarchies (closed until the test opens one), the sources' environment
 * and the registry. A test's fixture lists REGISTRY_FIXTURE_FIELDS among
 * its members and calls registry_fixture_init() and registry_fixture_done()
 * on it; what else it builds (a tree, a server, a bus) stays in the test.
 */
#pragma once

#include <event2/event.h>

#include "config.h"
#include "counters.h"
#include "registration.h"
#include "source.h"
#include "tests.h"

#define REGISTRY_FIXTURE_FIELDS         \
        struct event_base *base;        \
        Config *config;                 \
        Counters counters;              \
        Hierarchy v2, v1;               \
        SourceEnv env;                  \
        Registry reg

/* Zeroes the fields (and only them), then builds them. Before the hierarchies are opened. */
#define registry_fixture_init(f)                                                                          \
        do {                                                                                              \
                memset(&(f)->counters, 0, sizeof((f)->counters));                                         \
                (f)->v2 = (Hierarchy) { .fd = -1 };                                                       \
                (f)->v1 = (Hierarchy) { .fd = -1 };                                                       \
                (f)->base = event_base_new();                                                             \
                ASSERT_TRUE((f)->base);                                                                   \
                (f)->config = config_new_default();                                                       \
                ASSERT_TRUE((f)->config);                                                                 \
                (f)->env = (SourceEnv) { .base = (f)->base, .v2 = &(f)->v2, .v1 = &(f)->v1,               \
                                         .counters = &(f)->counters };                                    \
                registry_init(&(f)->reg, &(f)->env, (f)->config, &(f)->counters, event_data_body);                         \
        } while (0)

/* Every registration must be gone by now. Closes the hierarchies. */
#define registry_fixture_done(f)                                                                          \
        do {                                                                                              \
                ASSERT_EQ((f)->reg.n_registrations, 0);                                                   \
                registry_done(&(f)->reg);                                                                 \
                hierarchy_close(&(f)->v2);                                                                \
                hierarchy_close(&(f)->v1);                                                                \
                config_free((f)->config);                                                                 \
                (f)->config = NULL;                                                                       \
                event_base_free((f)->base);                                                               \
                (f)->base = NULL;                                                                         \
        } while (0)
