#!/bin/sh
# SPDX-License-Identifier: MIT
# Test wrapper for `meson test --setup=valgrind`: C test programs run under
# valgrind memcheck directly; for Python tests, the daemon they start is
# wrapped instead (the harness reads PRESSURED_TEST_WRAPPER), so that
# valgrind checks pressured and not the Python interpreter. A daemon that
# executes itself anew (Reexecute) stays under valgrind (--trace-children).
VG="valgrind --trace-children=yes --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite --track-fds=no --quiet"
case "$1" in
*python3*)
        PRESSURED_TEST_WRAPPER="$VG"
        PRESSURED_TEST_STRICT_EXIT=1
        export PRESSURED_TEST_WRAPPER PRESSURED_TEST_STRICT_EXIT
        exec "$@"
        ;;
*.sh|*.py)
        exec "$@"
        ;;
*)
        exec $VG "$@"
        ;;
esac
