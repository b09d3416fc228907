/* SPDX-License-Identifier: MIT */
/* pressured: command line and start-up. */
#include "config-build.h"
#include "log.h"

int main(int argc, char **argv) {
        log_setup();
        if (argc > 1 && streq(argv[1], "--version")) {
                printf("pressured %s\n", PACKAGE_VERSION);
                return 0;
        }
        return 1;
}
