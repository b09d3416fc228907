/* SPDX-License-Identifier: MIT */
/*
 * test-header.c compiled as C++ with every warning an error: pressure.h
 * must be usable from C++ as it is from C99.
 */
#include "test-header.c"
