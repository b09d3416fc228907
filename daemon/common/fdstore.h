/* SPDX-License-Identifier: MIT */
/*
 * What outlives the process: systemd's file descriptor store
 * (FileDescriptorStoreMax= in the unit), the named fds a new process is
 * started with (by the service manager, or by the old process at
 * Reexecute), sealed memfds for the state, and the live page, a small
 * shared mapping the daemon updates as it runs so that a process taking
 * over after a crash knows what every connection was last told.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The environment variable naming the fds a re-executed daemon inherits: "NAME=FD NAME=FD ...". */
#define FDSTORE_REEXEC_ENV "PRESSURED_TAKEOVER_FDS"
#define FDSTORE_NAME_MAX 64

/* One inherited fd and its name. */
typedef struct NamedFd {
        char name[FDSTORE_NAME_MAX];
        int fd;
} NamedFd;

typedef struct NamedFds {
        NamedFd *fds;
        size_t n;
} NamedFds;

/*
 * fdstore_enabled - whether the service manager keeps fds for the daemon:
 * $NOTIFY_SOCKET is set, and $FDSTORE (set by systemd 254 and later to the
 * unit's FileDescriptorStoreMax=) is absent or not 0.
 */
bool fdstore_enabled(void);

/*
 * fdstore_add - hand a copy of @fd to the store under @name.
 * @poll: let the service manager drop the fd when it reports a hang-up or
 *        an error (a connection); false for fds whose poll has side effects
 *        (PSI triggers) or means nothing.
 * Returns 0 or a negative errno.
 */
int fdstore_add(int fd, const char *name, bool poll);

/* fdstore_remove - drop every fd stored under @name. Returns 0 or a negative errno. */
int fdstore_remove(const char *name);

/*
 * named_fds_inherit - the fds this process was started with and their
 * names: those a re-executing daemon listed in FDSTORE_REEXEC_ENV, else
 * those of the service manager's $LISTEN_FDS protocol (socket units
 * first, then the fd store). Both variables are unset; every fd is made
 * close-on-exec. Returns the number of fds, or a negative errno (-EBADMSG
 * for a malformed list).
 */
int named_fds_inherit(NamedFds *ret);

/* named_fds_add - append @fd named @name to @fds. Returns 0, -EINVAL for a bad name, or -ENOMEM. */
int named_fds_add(NamedFds *fds, const char *name, int fd);

/* named_fds_take - the fd named @name, removed from @fds (-1 if none). */
int named_fds_take(NamedFds *fds, const char *name);

/* named_fds_done - close every fd left in @fds and free it. */
void named_fds_done(NamedFds *fds);

/*
 * memfd_new_sealed - a sealed memfd (no write, no resize) holding @size
 * bytes of @data, named @name for /proc. Returns the fd or a negative errno.
 */
int memfd_new_sealed(const char *name, const void *data, size_t size);

/*
 * memfd_read_all - the contents of the memfd (or any regular file) @fd,
 * at most @max bytes: -E2BIG beyond. Returns 0 with @ret and @ret_size, or
 * a negative errno.
 */
int memfd_read_all(int fd, uint64_t max, char **ret, size_t *ret_size);

/* ---- the live page ---- */

/* What one connection's slot says. */
#define LIVE_SLOT_PARTIAL (1u << 0)   /* a message is partly written to the socket, or a reply is owed */
#define LIVE_SLOT_INPUT   (1u << 1)   /* input was read and is not handled yet */
#define LIVE_SLOT_HELD    (1u << 2)   /* a coalesced event waits for its interval */

typedef struct LiveSlot {
        uint64_t id;                  /* the client's id; 0: free */
        uint64_t seq;                 /* events of its stream generated */
        uint64_t written_seq;         /* the last one wholly written to the socket */
        uint32_t flags;
        uint32_t reserved;
} LiveSlot;

typedef struct LivePage {
        int fd;
        void *map;
        size_t size;
        LiveSlot *slots;
        uint32_t n_slots;
        uint32_t next_free;           /* a hint */
} LivePage;

/*
 * live_page_new - a live page with room for @n_slots connections, in a
 * memfd the daemon keeps mapped. Returns 0 or a negative errno.
 */
int live_page_new(uint32_t n_slots, LivePage *ret);

/*
 * live_page_adopt - map the live page of a previous process (@fd, taken
 * over). Returns 0, -EBADMSG if @fd holds no valid page, or a negative errno.
 */
int live_page_adopt(int fd, LivePage *ret);

/*
 * live_page_set_clean / live_page_clean - the serial of the complete
 * snapshot a process wrote as it stopped (0: none, or a successor runs
 * and the snapshot is stale). A successor trusts a complete snapshot only
 * when the page names it.
 */
void live_page_set_clean(LivePage *p, uint64_t serial);
uint64_t live_page_clean(const LivePage *p);

/*
 * live_page_set_mark / live_page_mark - the last pre-kill warning id the
 * process gave (0: none, or a page of a version that did not keep it),
 * noted before the warning goes out: a successor after a crash numbers on
 * above it even if no checkpoint had the warning yet.
 */
void live_page_set_mark(LivePage *p, uint64_t id);
uint64_t live_page_mark(const LivePage *p);

/* live_page_done - unmap and close @p. */
void live_page_done(LivePage *p);

/*
 * live_page_claim - a free slot for client @id, growing the page when
 * full (the fd stays the same; the mapping may move, so slots are held by
 * index). Returns the index, or -ENOMEM.
 */
int live_page_claim(LivePage *p, uint64_t id);

/* live_page_slot - slot @i of @p, or NULL for no page or a negative @i. */
static inline LiveSlot *live_page_slot(LivePage *p, int i) {
        return p && p->map && i >= 0 && (uint32_t) i < p->n_slots ? &p->slots[i] : NULL;
}

/* live_page_release - free slot @i (nothing for no page or a negative @i). */
void live_page_release(LivePage *p, int i);
