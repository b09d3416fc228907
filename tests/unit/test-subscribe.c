/* SPDX-License-Identifier: MIT */
/* Subscribe parameter validation: every selector and modifier, every error. */
#include "subscribe.h"
#include "tests.h"
#include "util.h"

static int parse(const char *json, SubscribeRequest *req, VarlinkError *e) {
        json_t *p = json_loads(json, 0, NULL);
        int k;

        ASSERT_TRUE(p);
        *e = (VarlinkError) {};
        k = subscribe_request_parse(p, req, e);
        json_decref(p);
        return k;
}

static void expect_error(const char *json, const char *error, const char *key, const char *value) {
        SubscribeRequest req = {};
        VarlinkError e;

        ASSERT_TRUE(parse(json, &req, &e) < 0);
        ASSERT_STREQ(e.name, error);
        if (key)
                ASSERT_STREQ(json_string_value(json_object_get(e.parameters, key)), value);
        ASSERT_TRUE(req.cgroup == NULL);
        varlink_error_done(&e);
}

static void test_valid(void) {
        SubscribeRequest req = {};
        VarlinkError e;

        ASSERT_OK(parse("{\"level\":\"medium\"}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_LEVEL);
        ASSERT_EQ(req.level, LEVEL_MEDIUM);
        ASSERT_STREQ(req.cgroup, "/");
        ASSERT_U64_EQ(req.min_interval_usec, 0);
        subscribe_request_done(&req);

        ASSERT_OK(parse("{\"cgroup\":\"/a//b/\",\"psi\":{\"stall\":\"full\",\"threshold_us\":150000,"
                        "\"window_us\":2000000},\"min_interval_ms\":250}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_PSI);
        ASSERT_STREQ(req.cgroup, "/a/b");
        ASSERT_EQ(req.psi.stall, PSI_STALL_FULL);
        ASSERT_U64_EQ(req.psi.threshold_us, 150000);
        ASSERT_U64_EQ(req.psi.window_us, 2000000);
        ASSERT_U64_EQ(req.min_interval_usec, 250000);
        subscribe_request_done(&req);

        ASSERT_OK(parse("{\"cgroup\":\"/x\",\"vmpressure\":{\"level\":\"critical\",\"mode\":\"local\"}}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_VMPRESSURE);
        ASSERT_EQ(req.vm_level, LEVEL_CRITICAL);
        ASSERT_EQ(req.vm_mode, VMPRESSURE_MODE_LOCAL);
        subscribe_request_done(&req);

        ASSERT_OK(parse("{\"vmpressure\":{\"level\":\"low\"}}", &req, &e));
        ASSERT_EQ(req.vm_mode, VMPRESSURE_MODE_DEFAULT);
        subscribe_request_done(&req);

        ASSERT_OK(parse("{\"memory_events\":true,\"protection\":false,\"cgroup\":null}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_MEMORY_EVENTS);
        subscribe_request_done(&req);

        ASSERT_OK(parse("{\"protection\":true,\"cgroup\":\"/p\"}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_PROTECTION);
        subscribe_request_done(&req);

        ASSERT_OK(parse("{\"kills\":true,\"cgroup\":\"/system.slice\",\"min_interval_ms\":500}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_KILLS);
        ASSERT_STREQ(req.cgroup, "/system.slice");
        ASSERT_EQ(req.min_interval_usec, 500000);
        subscribe_request_done(&req);
        /* Absent cgroup: the whole system; kills: false selects nothing beside another selector. */
        ASSERT_OK(parse("{\"kills\":true,\"resource\":\"memory\"}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_KILLS);
        ASSERT_STREQ(req.cgroup, "/");
        subscribe_request_done(&req);
        ASSERT_OK(parse("{\"kills\":false,\"memory_events\":true}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_MEMORY_EVENTS);
        subscribe_request_done(&req);
        /* The level stream; min_interval_ms 0 is no interval. */
        ASSERT_OK(parse("{\"levels\":true,\"cgroup\":\"/app\",\"resource\":\"memory\",\"min_interval_ms\":0}",
                        &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_LEVELS);
        ASSERT_STREQ(req.cgroup, "/app");
        subscribe_request_done(&req);
}

static void test_invalid(void) {
        const char *ip = "org.varlink.service.InvalidParameter";

        expect_error("{}", ip, "parameter", "level");
        expect_error("{\"cgroup\":\"/a\"}", ip, "parameter", "level");
        expect_error("{\"level\":\"huge\"}", ip, "parameter", "level");
        expect_error("{\"level\":5}", ip, "parameter", "level");
        expect_error("{\"level\":\"low\",\"bogus\":1}", ip, "parameter", "bogus");
        expect_error("{\"level\":\"low\",\"memory_events\":true}", ip, "parameter", "memory_events");
        expect_error("{\"level\":\"low\",\"cgroup\":7}", ip, "parameter", "cgroup");
        expect_error("{\"level\":\"low\",\"min_interval_ms\":-1}", ip, "parameter", "min_interval_ms");
        expect_error("{\"level\":\"low\",\"min_interval_ms\":1.5}", ip, "parameter", "min_interval_ms");
        expect_error("{\"level\":\"low\",\"min_interval_ms\":3600001}", ip, "parameter", "min_interval_ms");
        expect_error("{\"memory_events\":\"yes\"}", ip, "parameter", "memory_events");
        expect_error("{\"kills\":1}", ip, "parameter", "kills");
        expect_error("{\"levels\":\"yes\"}", ip, "parameter", "levels");
        expect_error("{\"levels\":false}", ip, "parameter", "level");
        expect_error("{\"levels\":true,\"kills\":true}", ip, "parameter", "kills");
        expect_error("{\"levels\":true,\"min_interval_ms\":10}", ip, "parameter", "min_interval_ms");
        expect_error("{\"levels\":true,\"resource\":\"io\"}", ip, "parameter", "resource");
        expect_error("{\"kills\":false}", ip, "parameter", "level");
        expect_error("{\"kills\":true,\"protection\":true}", ip, "parameter", "protection");
        expect_error("{\"level\":\"low\",\"kills\":true}", ip, "parameter", "kills");
        expect_error("{\"psi\":\"some 1s 2s\"}", ip, "parameter", "psi");
        expect_error("{\"psi\":{\"stall\":\"most\",\"threshold_us\":1,\"window_us\":2000000}}", ip, "parameter", "psi.stall");
        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":\"x\",\"window_us\":2000000}}", ip, "parameter", "psi.threshold_us");
        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":-5,\"window_us\":2000000}}", ip, "parameter", "psi.threshold_us");
        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":100000}}", ip, "parameter", "psi.window_us");
        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":1,\"window_us\":2000000,\"x\":1}}", ip, "parameter", "psi");
        expect_error("{\"vmpressure\":{\"mode\":\"local\"}}", ip, "parameter", "vmpressure.level");
        expect_error("{\"vmpressure\":{\"level\":\"low\",\"mode\":\"nearby\"}}", ip, "parameter", "vmpressure.mode");

        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":0,\"window_us\":2000000}}",
                     "io.pressured.InvalidTrigger", NULL, NULL);
        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":3000000,\"window_us\":2000000}}",
                     "io.pressured.InvalidTrigger", NULL, NULL);
        expect_error("{\"psi\":{\"stall\":\"some\",\"threshold_us\":1000,\"window_us\":20000000}}",
                     "io.pressured.InvalidTrigger", NULL, NULL);

        expect_error("{\"level\":\"low\",\"cgroup\":\"/../etc\"}", "io.pressured.InvalidCgroupPath", "cgroup", "/../etc");
        expect_error("{\"level\":\"low\",\"cgroup\":\"relative\"}", "io.pressured.InvalidCgroupPath", "cgroup", "relative");
        expect_error("{\"level\":\"low\",\"cgroup\":\"/a\\u0001b\"}", "io.pressured.InvalidCgroupPath", NULL, NULL);
}

/* "resource": memory by default, cpu and io with level and psi only. */
static void test_resource(void) {
        const char *ip = "org.varlink.service.InvalidParameter";
        SubscribeRequest req = {};
        VarlinkError e;

        ASSERT_OK(parse("{\"level\":\"low\"}", &req, &e));
        ASSERT_EQ(req.resource, RESOURCE_MEMORY);
        subscribe_request_done(&req);
        ASSERT_OK(parse("{\"level\":\"low\",\"resource\":\"cpu\"}", &req, &e));
        ASSERT_EQ(req.resource, RESOURCE_CPU);
        subscribe_request_done(&req);
        ASSERT_OK(parse("{\"resource\":\"io\",\"cgroup\":\"/a\",\"psi\":{\"stall\":\"full\","
                        "\"threshold_us\":100000,\"window_us\":2000000}}", &req, &e));
        ASSERT_EQ(req.resource, RESOURCE_IO);
        ASSERT_EQ(req.selector, SELECTOR_PSI);
        subscribe_request_done(&req);
        /* null is absent; "memory" goes with every selector. */
        ASSERT_OK(parse("{\"level\":\"low\",\"resource\":null}", &req, &e));
        ASSERT_EQ(req.resource, RESOURCE_MEMORY);
        subscribe_request_done(&req);
        ASSERT_OK(parse("{\"memory_events\":true,\"resource\":\"memory\",\"cgroup\":\"/a\"}", &req, &e));
        ASSERT_EQ(req.selector, SELECTOR_MEMORY_EVENTS);
        subscribe_request_done(&req);

        expect_error("{\"level\":\"low\",\"resource\":\"disk\"}", ip, "parameter", "resource");
        expect_error("{\"level\":\"low\",\"resource\":\"CPU\"}", ip, "parameter", "resource");
        expect_error("{\"level\":\"low\",\"resource\":1}", ip, "parameter", "resource");
        expect_error("{\"level\":\"low\",\"resource\":[\"cpu\"]}", ip, "parameter", "resource");
        expect_error("{\"vmpressure\":{\"level\":\"low\"},\"resource\":\"cpu\"}", ip, "parameter", "resource");
        expect_error("{\"memory_events\":true,\"resource\":\"io\"}", ip, "parameter", "resource");
        expect_error("{\"resource\":\"io\",\"protection\":true}", ip, "parameter", "resource");
        expect_error("{\"kills\":true,\"resource\":\"cpu\"}", ip, "parameter", "resource");
        /* Alone it selects nothing. */
        expect_error("{\"resource\":\"cpu\"}", ip, "parameter", "level");
}

int main(void) {
        test_valid();
        test_invalid();
        test_resource();
        return 0;
}
