/* SPDX-License-Identifier: MIT */
/*
 * The counter table: every counter has a unique name, which is what
 * GetStatus and /metrics (pressured_NAME_total) export, and a help text;
 * the names GetStatus declares in io.pressured.varlink are all there.
 */
#include "counters.h"
#include "tests.h"
#include "util.h"

int main(void) {
        static const char *const declared[] = {
                "events_read", "events_delivered", "events_dropped", "propagations_applied",
                "propagations_skipped", "registrations_created", "registrations_removed",
                "events_injected", "protection_refreshes", "proxy_connections", "proxy_events_sent",
                "proxy_events_dropped", "proxy_invalid_requests", "kills_kernel", "kills_systemd_oomd",
        };

        ASSERT_EQ(_COUNTER_MAX, ELEMENTSOF(declared));
        for (Counter c = 0; c < _COUNTER_MAX; c++) {
                const CounterInfo *i = counter_info(c);
                bool found = false;

                ASSERT_TRUE(i && i->name && i->help && i->help[0]);
                for (Counter d = 0; d < c; d++)
                        if (streq(counter_info(d)->name, i->name))
                                TEST_FAIL("counter name %s used twice", i->name);
                for (size_t k = 0; k < ELEMENTSOF(declared); k++)
                        if (streq(declared[k], i->name))
                                found = true;
                if (!found)
                        TEST_FAIL("counter %s is not declared in io.pressured.varlink", i->name);
        }
        /* A labelled family's counters are adjacent and share their help text. */
        for (Counter c = 1; c < _COUNTER_MAX; c++) {
                const CounterInfo *i = counter_info(c), *p = counter_info(c - 1);

                ASSERT_TRUE(!i->family == !i->by);
                if (i->family && p->family && streq(i->family, p->family))
                        ASSERT_STREQ(i->help, p->help);
                for (Counter d = 0; i->family && d + 1 < c; d++)
                        if (counter_info(d)->family && streq(counter_info(d)->family, i->family))
                                ASSERT_TRUE(streq_ptr(p->family, i->family));
        }
        ASSERT_STREQ(counter_info(COUNTER_KILLS_KERNEL)->by, "kernel");
        ASSERT_STREQ(counter_info(COUNTER_KILLS_SYSTEMD_OOMD)->by, "systemd-oomd");
        ASSERT_TRUE(!counter_info(_COUNTER_MAX));
        return 0;
}
