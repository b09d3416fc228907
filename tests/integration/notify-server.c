/* SPDX-License-Identifier: MIT */
/*
 * A notification server for the tests of pressurectl notify: owns
 * org.freedesktop.Notifications on the session bus ($DBUS_SESSION_BUS_ADDRESS)
 * and appends every call it gets to a file, one JSON object per line:
 *
 *   {"method": "Notify", "app_name", "replaces_id", "app_icon", "summary",
 *    "body", "actions": [...], "hints": {"urgency": N, ...}, "expire_timeout", "id"}
 *   {"method": "CloseNotification", "id", "known"}
 *   {"method": "GetCapabilities"} / {"method": "GetServerInformation"}
 *
 * Notify answers with increasing ids and keeps the id of an open
 * notification it is asked to replace, as the specification says;
 * CloseNotification emits NotificationClosed (reason 3). It reads markup in
 * the body, as GetCapabilities says ("body-markup"). Prints "ready" on
 * stdout once the name is owned; exits on SIGTERM.
 *
 * Usage: notify-server LOGFILE
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define MAX_OPEN 4096

static FILE *log_file;
static uint32_t next_id = 1;
static uint32_t open_ids[MAX_OPEN];
static size_t n_open;

static bool is_open(uint32_t id) {
        for (size_t i = 0; i < n_open; i++)
                if (open_ids[i] == id)
                        return true;
        return false;
}

static void forget(uint32_t id) {
        for (size_t i = 0; i < n_open; i++)
                if (open_ids[i] == id) {
                        open_ids[i] = open_ids[--n_open];
                        return;
                }
}

static int record(json_t *o) {
        char *text = json_dumps(o, JSON_COMPACT);

        json_decref(o);
        if (!text)
                return -ENOMEM;
        fprintf(log_file, "%s\n", text);
        fflush(log_file);
        free(text);
        return 0;
}

static int read_hints(sd_bus_message *m, json_t *hints) {
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");

        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key;
                char type;
                const char *contents;

                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0)
                        return r;
                if (contents && strcmp(contents, "y") == 0) {
                        uint8_t y;

                        r = sd_bus_message_read(m, "v", "y", &y);
                        if (r < 0)
                                return r;
                        json_object_set_new(hints, key, json_integer(y));
                } else if (contents && strcmp(contents, "s") == 0) {
                        const char *s;

                        r = sd_bus_message_read(m, "v", "s", &s);
                        if (r < 0)
                                return r;
                        json_object_set_new(hints, key, json_string(s));
                } else {
                        r = sd_bus_message_skip(m, "v");
                        if (r < 0)
                                return r;
                        json_object_set_new(hints, key, json_string(contents ? contents : "?"));
                }
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int method_notify(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const char *app, *icon, *summary, *body, *action;
        uint32_t replaces, id;
        int32_t expire;
        json_t *o, *actions = json_array(), *hints = json_object();
        int r;

        r = sd_bus_message_read(m, "susss", &app, &replaces, &icon, &summary, &body);
        if (r < 0)
                goto fail;
        r = sd_bus_message_enter_container(m, 'a', "s");
        if (r < 0)
                goto fail;
        while ((r = sd_bus_message_read(m, "s", &action)) > 0)
                json_array_append_new(actions, json_string(action));
        if (r < 0 || (r = sd_bus_message_exit_container(m)) < 0)
                goto fail;
        r = read_hints(m, hints);
        if (r < 0)
                goto fail;
        r = sd_bus_message_read(m, "i", &expire);
        if (r < 0)
                goto fail;

        if (replaces != 0 && is_open(replaces))
                id = replaces;
        else {
                id = next_id++;
                if (n_open < MAX_OPEN)
                        open_ids[n_open++] = id;
        }
        o = json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:o, s:o, s:i, s:I}", "method", "Notify", "app_name", app,
                      "replaces_id", (json_int_t) replaces, "app_icon", icon, "summary", summary, "body", body,
                      "actions", actions, "hints", hints, "expire_timeout", (int) expire, "id", (json_int_t) id);
        r = record(o);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "u", id);
fail:
        json_decref(actions);
        json_decref(hints);
        return r;
}

static int method_close(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        sd_bus *bus = sd_bus_message_get_bus(m);
        uint32_t id;
        bool known;
        int r;

        r = sd_bus_message_read(m, "u", &id);
        if (r < 0)
                return r;
        known = is_open(id);
        r = record(json_pack("{s:s, s:I, s:b}", "method", "CloseNotification", "id", (json_int_t) id, "known", known));
        if (r < 0)
                return r;
        if (known) {
                forget(id);
                r = sd_bus_emit_signal(bus, "/org/freedesktop/Notifications", "org.freedesktop.Notifications",
                                       "NotificationClosed", "uu", id, (uint32_t) 3);
                if (r < 0)
                        return r;
        }
        return sd_bus_reply_method_return(m, NULL);
}

static int method_caps(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        int r = record(json_pack("{s:s}", "method", "GetCapabilities"));

        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "as", 3, "body", "body-markup", "persistence");
}

static int method_info(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        int r = record(json_pack("{s:s}", "method", "GetServerInformation"));

        if (r < 0)
                return r;
        return sd_bus_reply_method_return(m, "ssss", "notify-server", "pressured tests", "1", "1.2");
}

static const sd_bus_vtable vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("Notify", "susssasa{sv}i", "u", method_notify, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("CloseNotification", "u", "", method_close, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("GetCapabilities", "", "as", method_caps, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("GetServerInformation", "", "ssss", method_info, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL("NotificationClosed", "uu", 0),
        SD_BUS_VTABLE_END
};

int main(int argc, char **argv) {
        sd_event *event = NULL;
        sd_bus *bus = NULL;
        sigset_t mask;
        int r;

        if (argc != 2) {
                fprintf(stderr, "usage: notify-server LOGFILE\n");
                return 2;
        }
        log_file = fopen(argv[1], "ae");
        if (!log_file) {
                perror(argv[1]);
                return 1;
        }
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, NULL);

        r = sd_event_default(&event);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGTERM, NULL, NULL);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, NULL, NULL);
        if (r >= 0)
                r = sd_bus_open_user(&bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/Notifications",
                                             "org.freedesktop.Notifications", vtable, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.Notifications", 0);
        if (r >= 0)
                r = sd_bus_attach_event(bus, event, 0);
        if (r < 0) {
                fprintf(stderr, "notify-server: %s\n", strerror(-r));
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        r = sd_event_loop(event);
        sd_bus_flush_close_unref(bus);
        sd_event_unref(event);
        fclose(log_file);
        return r < 0 ? 1 : 0;
}
