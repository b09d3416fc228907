/* SPDX-License-Identifier: MIT */
/*
 * Shared by every fuzz target: the libFuzzer entry point and a helper that
 * turns the fuzzer's byte buffer into the NUL-terminated text the parsers
 * take, in a heap block of exactly that size so that AddressSanitizer sees
 * any read past the end.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Inputs above this size only slow the fuzzer down; kernel files are small. */
#define FUZZ_INPUT_MAX (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A malloc'ed NUL-terminated copy of @data, or NULL if too big or out of memory. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
        char *s;

        if (size > FUZZ_INPUT_MAX)
                return NULL;
        s = malloc(size + 1);
        if (!s)
                return NULL;
        memcpy(s, data, size);
        s[size] = 0;
        return s;
}
