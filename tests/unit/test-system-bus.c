/* SPDX-License-Identifier: MIT */
/*
 * Tests for the system bus connection (sources/system-bus.h): no
 * connection and no timer without users; a bus that is not there is
 * retried while a user remains and forgotten when it leaves; with a
 * private dbus-daemon (a part left out where dbus-daemon is not installed,
 * a failure where it is or CI=true): connected() from the loop,
 * also for a user added later, a message round trip, disconnected() to
 * every told user when the bus dies, the reconnect to a new bus at the
 * same address, a user leaving inside its own callback, and nothing left
 * once the last user is gone. Out of memory and a refused event_add()
 * (fail-inject.h): errors without leaks, a connection that cannot be
 * watched is retried.
 */
#include <event2/event.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fail-inject.h"
#include "system-bus.h"
#include "test-capture.h"
#include "tests.h"
#include "util.h"

typedef struct Probe {
        int connected, disconnected;
        sd_bus *bus;
        BusUser **self_free;        /* freed from inside connected(), when set */
} Probe;

static void probe_connected(void *userdata, sd_bus *bus) {
        Probe *p = userdata;

        p->connected++;
        p->bus = bus;
        if (p->self_free)
                *p->self_free = bus_user_free(*p->self_free);
}

static void probe_disconnected(void *userdata) {
        Probe *p = userdata;

        p->disconnected++;
        p->bus = NULL;
}

static const BusUserOps probe_ops = {
        .connected = probe_connected,
        .disconnected = probe_disconnected,
};

static int count_events(struct event_base *base) {
        return event_base_get_num_events(base, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE);
}

/* Run the loop until *@counter reaches @want; fail after 20 s. */
static void loop_until(struct event_base *base, const int *counter, int want) {
        uint64_t deadline = now_usec(CLOCK_MONOTONIC) + 20 * USEC_PER_SEC;
        struct timeval tick = { .tv_usec = 20000 };

        while (*counter < want) {
                if (now_usec(CLOCK_MONOTONIC) > deadline)
                        TEST_FAIL("waited 20 s for a count of %d, have %d", want, *counter);
                event_base_loopexit(base, &tick);
                event_base_dispatch(base);
        }
}

static void test_no_users(void) {
        struct event_base *base = event_base_new();
        SystemBus *b = NULL;

        ASSERT_OK(system_bus_new(&b, base, "unix:path=/nonexistent/bus"));
        ASSERT_TRUE(!system_bus_is_connected(b));
        ASSERT_TRUE(system_bus_get(b) == NULL);
        ASSERT_EQ(count_events(base), 0);
        system_bus_kick(b);
        ASSERT_EQ(count_events(base), 0);
        ASSERT_TRUE(system_bus_free(b) == NULL);
        ASSERT_TRUE(system_bus_free(NULL) == NULL);
        ASSERT_TRUE(bus_user_free(NULL) == NULL);
        event_base_free(base);
}

/* A bus that is not there: a retry timer while the user stays, then nothing. */
static void test_unreachable(void) {
        struct event_base *base = event_base_new();
        struct timeval half = { .tv_usec = 500000 };
        SystemBus *b = NULL;
        BusUser *u = NULL;
        Probe p = {};

        ASSERT_OK(system_bus_new(&b, base, "unix:path=/nonexistent/bus"));
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p, &u));
        ASSERT_TRUE(!system_bus_is_connected(b));
        ASSERT_EQ(count_events(base), 1); /* the retry timer */
        event_base_loopexit(base, &half);
        event_base_dispatch(base);
        ASSERT_EQ(p.connected, 0);
        ASSERT_EQ(p.disconnected, 0);
        ASSERT_EQ(count_events(base), 1); /* retried, still waiting */
        u = bus_user_free(u);
        ASSERT_EQ(count_events(base), 0);
        system_bus_free(b);
        event_base_free(base);
}

static void test_out_of_memory(void) {
        struct event_base *base = event_base_new();
        SystemBus *b = NULL;
        BusUser *u = NULL;
        Probe p = {};
        char path[64];
        const char *log;
        int saved;

        /* Every allocation of system_bus_new(). */
        for (unsigned n = 1;; n++) {
                int r;
                bool injected;

                fail_inject_reset();
                fail_inject_after(FAIL_MALLOC, n);
                r = system_bus_new(&b, base, "unix:path=/nonexistent/bus");
                injected = fail_inject_fired(FAIL_MALLOC) > 0;
                fail_inject_reset();
                if (!injected) {
                        ASSERT_OK(r);
                        break;
                }
                ASSERT_ERR(r, ENOMEM);
        }

        /* The user itself. */
        fail_inject_after(FAIL_MALLOC, 1);
        ASSERT_ERR(system_bus_add_user(b, &probe_ops, &p, &u), ENOMEM);
        fail_inject_reset();
        ASSERT_TRUE(u == NULL);
        ASSERT_EQ(count_events(base), 0);

        /* No retry timer: said loudly; the user is added, nothing is left when it goes. */
        saved = stderr_capture(path);
        fail_inject_after(FAIL_EVENT_ADD, 1);
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p, &u));
        fail_inject_reset();
        log = stderr_restore(saved, path);
        ASSERT_TRUE(strstr(log, "Failed to connect to the system bus at unix:path=/nonexistent/bus, retrying"));
        ASSERT_TRUE(strstr(log, "Failed to arm the system bus retry timer; the bus stays disconnected."));
        ASSERT_EQ(count_events(base), 0);
        u = bus_user_free(u);
        system_bus_free(b);
        event_base_free(base);
}

typedef struct Daemon {
        pid_t pid;
        char dir[64], conf[96], sock[96], address[128];
} Daemon;

static bool daemon_start(Daemon *d) {
        FILE *f;

        snprintf(d->conf, sizeof(d->conf), "%s/bus.conf", d->dir);
        snprintf(d->sock, sizeof(d->sock), "%s/bus", d->dir);
        snprintf(d->address, sizeof(d->address), "unix:path=%s", d->sock);
        f = fopen(d->conf, "we");
        ASSERT_TRUE(f);
        fprintf(f, "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                   " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                   "<busconfig><type>system</type><listen>%s</listen><auth>EXTERNAL</auth>\n"
                   "<policy context=\"default\"><allow send_destination=\"*\" eavesdrop=\"true\"/>"
                   "<allow eavesdrop=\"true\"/><allow own=\"*\"/></policy></busconfig>\n",
                d->address);
        fclose(f);
        d->pid = fork();
        ASSERT_TRUE(d->pid >= 0);
        if (d->pid == 0) {
                char arg[128];

                snprintf(arg, sizeof(arg), "--config-file=%s", d->conf);
                execlp("dbus-daemon", "dbus-daemon", "--nofork", "--nopidfile", arg, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 1000; i++) {
                struct stat st;
                int status;

                if (stat(d->sock, &st) == 0)
                        return true;
                if (waitpid(d->pid, &status, WNOHANG) == d->pid)
                        return false;
                usleep(10000);
        }
        return false;
}

static void daemon_stop(Daemon *d) {
        int status;

        kill(d->pid, SIGTERM);
        ASSERT_EQ(waitpid(d->pid, &status, 0), d->pid);
        (void) unlink(d->sock);
}

/* A call to the bus driver, answered through the loop. */
static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        int *replies = userdata;

        if (!sd_bus_message_is_method_error(m, NULL))
                (*replies)++;
        return 0;
}

/* A connection whose fd cannot be watched is dropped and retried. */
static void test_private_bus_refused(Daemon *d) {
        struct event_base *base = event_base_new();
        SystemBus *b = NULL;
        BusUser *u = NULL;
        Probe p = {};

        ASSERT_OK(system_bus_new(&b, base, d->address));
        fail_inject_reset();
        fail_inject_after(FAIL_EVENT_ADD, 1);
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p, &u));
        ASSERT_EQ(fail_inject_fired(FAIL_EVENT_ADD), 1);
        fail_inject_reset();
        ASSERT_TRUE(system_bus_get(b) == NULL);
        loop_until(base, &p.connected, 1);
        ASSERT_TRUE(system_bus_is_connected(b));
        u = bus_user_free(u);
        ASSERT_EQ(count_events(base), 0);
        system_bus_free(b);
        event_base_free(base);
}

static void test_private_bus(Daemon *d) {
        struct event_base *base = event_base_new();
        BusUser *u1 = NULL, *u2 = NULL, *u3 = NULL;
        Probe p1 = {}, p2 = {}, p3 = { .self_free = &u3 };
        SystemBus *b = NULL;
        int replies = 0;

        ASSERT_OK(system_bus_new(&b, base, d->address));
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p1, &u1));
        ASSERT_EQ(p1.connected, 0); /* never from inside add_user */
        loop_until(base, &p1.connected, 1);
        ASSERT_TRUE(system_bus_is_connected(b));
        ASSERT_TRUE(system_bus_get(b) == p1.bus);

        /* A round trip driven by the loop alone. */
        ASSERT_OK(sd_bus_call_method_async(p1.bus, NULL, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                           "org.freedesktop.DBus", "GetId", on_reply, &replies, ""));
        system_bus_kick(b);
        loop_until(base, &replies, 1);

        /* A later user learns it from the loop; one leaving inside connected() is fine. */
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p2, &u2));
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p3, &u3));
        ASSERT_EQ(p2.connected, 0);
        loop_until(base, &p2.connected, 1);
        loop_until(base, &p3.connected, 1);
        ASSERT_TRUE(u3 == NULL);
        ASSERT_EQ(p1.connected, 1);

        /* The bus dies: every told user hears it, then a new bus at the same address. */
        daemon_stop(d);
        loop_until(base, &p1.disconnected, 1);
        ASSERT_EQ(p2.disconnected, 1);
        ASSERT_EQ(p3.disconnected, 0);
        ASSERT_TRUE(!system_bus_is_connected(b));
        ASSERT_TRUE(system_bus_get(b) == NULL);
        ASSERT_TRUE(daemon_start(d));
        loop_until(base, &p1.connected, 2);
        loop_until(base, &p2.connected, 2);
        ASSERT_TRUE(system_bus_is_connected(b));

        /* The last user leaving closes it all. */
        u1 = bus_user_free(u1);
        ASSERT_TRUE(system_bus_is_connected(b));
        u2 = bus_user_free(u2);
        ASSERT_TRUE(!system_bus_is_connected(b));
        ASSERT_EQ(count_events(base), 0);
        ASSERT_EQ(p1.disconnected, 1); /* leaving is not a disconnection */

        /* And a new user connects again. */
        ASSERT_OK(system_bus_add_user(b, &probe_ops, &p1, &u1));
        loop_until(base, &p1.connected, 3);
        u1 = bus_user_free(u1);
        ASSERT_EQ(count_events(base), 0);
        system_bus_free(b);
        event_base_free(base);
}

/* Whether dbus-daemon is an executable on $PATH. */
static bool have_dbus_daemon(void) {
        const char *path = getenv("PATH") ?: "/usr/bin:/bin";
        char dir[PATH_MAX + 16];

        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ":");

                snprintf(dir, sizeof(dir), "%.*s/dbus-daemon", (int) n, p);
                if (n > 0 && n < PATH_MAX && access(dir, X_OK) == 0)
                        return true;
                p += n + (p[n] == ':');
        }
        return false;
}

int main(void) {
        const char *ci = getenv("CI");
        Daemon d = {};

        test_no_users();
        test_unreachable();
        test_out_of_memory();

        /* The private bus groups are left out only where dbus-daemon is not installed, and never
         * under CI (CI=true, as CI services set it), which installs it: there it must start. */
        if (!have_dbus_daemon() && !(ci && streq(ci, "true"))) {
                test_skip_part("dbus-daemon is not installed (Debian's dbus-daemon package): the private bus "
                               "groups (connected, disconnected, reconnect; a refused name) did not run");
                return test_finish();
        }
        snprintf(d.dir, sizeof(d.dir), "/tmp/test-system-bus-XXXXXX");
        ASSERT_TRUE(mkdtemp(d.dir));
        if (!daemon_start(&d))
                TEST_FAIL("%s", "dbus-daemon is installed (or CI=true) but did not start a private bus");
        test_private_bus(&d);
        test_private_bus_refused(&d);
        daemon_stop(&d);
        (void) unlink(d.conf);
        (void) rmdir(d.dir);
        return test_finish();
}
