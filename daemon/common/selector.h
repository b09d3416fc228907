/* SPDX-License-Identifier: MIT */
/*
 * What a Subscribe call asks for, apart from the wire: the protocol parses
 * it (subscribe.h), the source choice decides with it (source-choice.h),
 * and libpressure's pressure_selector says which one it will send. Here,
 * in the layer both programs link, so that there is one list.
 */
#pragma once

/* What a Subscribe call asked for. */
typedef enum Selector {
        SELECTOR_LEVEL,
        SELECTOR_PSI,
        SELECTOR_VMPRESSURE,
        SELECTOR_MEMORY_EVENTS,
        SELECTOR_PROTECTION,
        SELECTOR_KILLS,
        SELECTOR_LEVELS,        /* the level stream: the three [Levels] registrations */
} Selector;
