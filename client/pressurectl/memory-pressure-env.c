/* SPDX-License-Identifier: MIT */
/*
 * pressurectl memory-pressure-env: the [Service] lines that point an
 * sd-event program at pressured's pressure socket of a resource.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "error-text.h"
#include "pressure.h"
#include "trigger.h"
#include "util.h"

/* @data in base64, into @out of at least 4 * ((@n + 2) / 3) + 1 bytes. */
static char *base64_encode(const uint8_t *data, size_t n, char *out) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *o = out;

        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) data[i] << 16;
                size_t k = n - i;

                if (k > 1)
                        v |= (uint32_t) data[i + 1] << 8;
                if (k > 2)
                        v |= data[i + 2];
                *o++ = alphabet[(v >> 18) & 63];
                *o++ = alphabet[(v >> 12) & 63];
                *o++ = k > 1 ? alphabet[(v >> 6) & 63] : '=';
                *o++ = k > 2 ? alphabet[v & 63] : '=';
        }
        *o = 0;
        return out;
}

/* What memory-pressure-env prints for each resource: systemd's variables, its unit setting, the socket. */
static const struct {
        const char *watch, *write, *unit_setting, *socket;
} pressure_env[] = {
        [PRESSURE_RESOURCE_MEMORY] = { "MEMORY_PRESSURE_WATCH", "MEMORY_PRESSURE_WRITE", "MemoryPressureWatch",
                                       "memory-pressure" },
        [PRESSURE_RESOURCE_CPU] = { "CPU_PRESSURE_WATCH", "CPU_PRESSURE_WRITE", "CPUPressureWatch", "cpu-pressure" },
        [PRESSURE_RESOURCE_IO] = { "IO_PRESSURE_WATCH", "IO_PRESSURE_WRITE", "IOPressureWatch", "io-pressure" },
};

/*
 * Print memory-pressure-env's lines for resource @r, the socket @path and
 * the trigger @kernel (its kernel form, with its NUL in the encoding, as
 * systemd's); with --json one object of the two variables. Returns the
 * exit status.
 */
static int print_memory_pressure_env(pressure_resource r, const char *path, const char *kernel) {
        char encoded[4 * ((PSI_TRIGGER_FORMAT_MAX + 3) / 3) + 1];
        _cleanup_json_ json_t *o = NULL;
        _cleanup_free_ char *line = NULL;

        base64_encode((const uint8_t *) kernel, strlen(kernel) + 1, encoded);
        if (!arg_json) {
                printf("[Service]\n"
                       "%s=skip\n"
                       "Environment=%s=%s\n"
                       "Environment=%s=%s\n", pressure_env[r].unit_setting, pressure_env[r].watch, path,
                       pressure_env[r].write, encoded);
                return 0;
        }
        o = json_pack("{s:s, s:s}", pressure_env[r].watch, path, pressure_env[r].write, encoded);
        line = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (!line)
                return cli_fail("memory-pressure-env", -ENOMEM, "%s", strerror(ENOMEM));
        printf("%s\n", line);
        return 0;
}

int cmd_memory_pressure_env(int argc, char **argv) {
        static const struct option options[] = { COMMON_OPTIONS, { "psi", required_argument, NULL, 'p' },
                                                 { "resource", required_argument, NULL, 'R' }, {} };
        PsiTrigger t = { PSI_STALL_SOME, 200000, 2000000 };
        int resource = PRESSURE_RESOURCE_MEMORY;
        _cleanup_(pressure_client_freep) pressure_client *c = NULL;
        _cleanup_free_ char *path = NULL;
        char kernel[PSI_TRIGGER_FORMAT_MAX];
        const char *reason, *varlink, *slash;
        int opt, n;

        while ((opt = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                if (common_option(opt))
                        continue;
                switch (opt) {
                case 'h':
                        printf("pressurectl [OPTIONS] memory-pressure-env [--psi TRIGGER] [--resource R]\n\n"
                               "Print the [Service] lines of a drop-in that points an sd-event program\n"
                               "(sd_event_add_memory_pressure(), systemd >= 254; the cpu and io ones,\n"
                               "systemd >= 261) at pressured's pressure socket of that resource instead\n"
                               "of its own memory.pressure, cpu.pressure or io.pressure file.\n\n"
                               "  --psi 'STALL THR WIN'  the trigger to ask for (default 'some 200ms 2s')\n"
                               "  --resource R           memory (default), cpu or io: which variables and socket\n"
                               "  --user                 the per-user daemon's socket in $XDG_RUNTIME_DIR\n"
                               "  --socket PATH          the daemon's varlink socket (default $PRESSURED_SOCKET,\n"
                               "                         else the system's); the pressure socket is next to it\n"
                               "  --json                 print {\"MEMORY_PRESSURE_WATCH\": ..., \"MEMORY_PRESSURE_WRITE\": ...}\n"
                               "                         (CPU_ or IO_ with --resource)\n");
                        return 0;
                case 'p': {
                        pressure_stall stall;

                        if (parse_psi_option(optarg, &stall, &t.threshold_us, &t.window_us) < 0)
                                return usage_error("memory-pressure-env ", "invalid --psi '%s'", optarg);
                        t.stall = stall == PRESSURE_STALL_FULL ? PSI_STALL_FULL : PSI_STALL_SOME;
                        break;
                }
                case 'R':
                        resource = pressure_resource_from_string(optarg);
                        if (resource < 0)
                                return usage_error("memory-pressure-env ",
                                                   "invalid resource '%s', expected memory, cpu or io", optarg);
                        break;
                default:
                        return usage_error("memory-pressure-env ", NULL);
                }
        }
        if (optind < argc)
                return usage_error("memory-pressure-env ", "unexpected argument '%s'", argv[optind]);
        if (psi_trigger_check(&t, &reason) < 0)
                return usage_error("memory-pressure-env ", "invalid --psi: %s", reason);

        /* The daemon's varlink socket as every command finds it (--socket, --user, $PRESSURED_SOCKET,
         * the system's); the pressure socket is next to it. Nothing connects. */
        n = client_open("memory-pressure-env", &c);
        if (n != 0)
                return n;
        varlink = pressure_client_get_socket(c);
        slash = strrchr(varlink, '/');
        n = asprintf(&path, "%.*s/%s", slash ? (int) (slash - varlink) : 1, slash ? varlink : ".",
                     pressure_env[resource].socket);
        if (n < 0)
                return EXIT_DAEMON_ERROR;
        n = psi_trigger_format(&t, PSI_TRIGGER_FORMAT_KERNEL, kernel, sizeof(kernel));
        if (n < 0)
                return EXIT_DAEMON_ERROR;
        return print_memory_pressure_env((pressure_resource) resource, path, kernel);
}
