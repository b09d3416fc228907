/* SPDX-License-Identifier: MIT */
/* The fd store, inherited named fds, sealed memfds and the live page: see fdstore.h. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "fdstore.h"
#include "util.h"

bool fdstore_enabled(void) {
        const char *n = getenv("NOTIFY_SOCKET"), *max = getenv("FDSTORE");

        if (!n || !n[0])
                return false;
        return !max || !streq(max, "0");
}

static bool name_valid(const char *name) {
        size_t n = strlen(name);

        if (n == 0 || n >= FDSTORE_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (name[i] <= ' ' || name[i] >= 0x7f || name[i] == ':' || name[i] == '=')
                        return false;
        return true;
}

int fdstore_add(int fd, const char *name, bool poll) {
        char msg[FDSTORE_NAME_MAX + 64];
        int k;

        if (!name_valid(name))
                return -EINVAL;
        snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s%s", name, poll ? "" : "\nFDPOLL=0");
        k = sd_pid_notify_with_fds(0, 0, msg, &fd, 1);
        if (k < 0)
                return k;
        return k == 0 ? -ENOTCONN : 0;
}

int fdstore_remove(const char *name) {
        char msg[FDSTORE_NAME_MAX + 32];
        int k;

        if (!name_valid(name))
                return -EINVAL;
        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
        k = sd_notify(0, msg);
        if (k < 0)
                return k;
        return k == 0 ? -ENOTCONN : 0;
}

static int named_fds_append(NamedFds *fds, const char *name, size_t name_len, int fd) {
        NamedFd *n;

        if (name_len == 0 || name_len >= FDSTORE_NAME_MAX)
                return -EBADMSG;
        n = realloc(fds->fds, (fds->n + 1) * sizeof(NamedFd));
        if (!n)
                return -ENOMEM;
        fds->fds = n;
        memcpy(n[fds->n].name, name, name_len);
        n[fds->n].name[name_len] = 0;
        n[fds->n].fd = fd;
        fds->n++;
        return 0;
}

/* Parse "NAME=FD NAME=FD ..." into @fds. */
static int named_fds_parse_reexec(const char *list, NamedFds *fds) {
        const char *p = list;
        size_t len;

        for (const char *w; (w = next_word(&p, &len));) {
                const char *eq = memchr(w, '=', len);
                char num[16];
                uint64_t fd;
                int k;

                if (!eq || (size_t) (w + len - eq - 1) >= sizeof(num))
                        return -EBADMSG;
                memcpy(num, eq + 1, (size_t) (w + len - eq - 1));
                num[w + len - eq - 1] = 0;
                if (safe_atou64(num, &fd) < 0 || fd < 3 || fd > INT_MAX || fcntl((int) fd, F_GETFD) < 0)
                        return -EBADMSG;
                k = named_fds_append(fds, w, (size_t) (eq - w), (int) fd);
                if (k < 0)
                        return k;
        }
        return 0;
}

static int named_fds_from_listen(NamedFds *fds) {
        char **names = NULL;
        int n, k = 0;

        n = sd_listen_fds_with_names(1, &names);
        if (n <= 0)
                return n;
        for (int i = 0; i < n; i++) {
                const char *name = names && names[i] ? names[i] : "unknown";

                if (k >= 0)
                        k = named_fds_append(fds, name, strlen(name), SD_LISTEN_FDS_START + i);
                if (k < 0)
                        (void) close(SD_LISTEN_FDS_START + i);
        }
        for (int i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);
        return k;
}

int named_fds_inherit(NamedFds *ret) {
        const char *list = getenv(FDSTORE_REEXEC_ENV);
        NamedFds fds = {};
        int k;

        if (list) {
                _cleanup_free_ char *copy = strdup(list);

                (void) unsetenv(FDSTORE_REEXEC_ENV);
                k = copy ? named_fds_parse_reexec(copy, &fds) : -ENOMEM;
        } else
                k = named_fds_from_listen(&fds);
        if (k < 0) {
                /* What was parsed is closed; what was not stays as it is, close-on-exec below. */
                named_fds_done(&fds);
                return k;
        }
        for (size_t i = 0; i < fds.n; i++)
                (void) fcntl(fds.fds[i].fd, F_SETFD, FD_CLOEXEC);
        *ret = fds;
        return (int) fds.n;
}

int named_fds_add(NamedFds *fds, const char *name, int fd) {
        if (!name_valid(name))
                return -EINVAL;
        return named_fds_append(fds, name, strlen(name), fd);
}

int named_fds_take(NamedFds *fds, const char *name) {
        for (size_t i = 0; i < fds->n; i++)
                if (streq(fds->fds[i].name, name)) {
                        int fd = fds->fds[i].fd;

                        fds->fds[i] = fds->fds[--fds->n];
                        return fd;
                }
        return -1;
}

void named_fds_done(NamedFds *fds) {
        for (size_t i = 0; i < fds->n; i++)
                safe_close(fds->fds[i].fd);
        free(fds->fds);
        *fds = (NamedFds) {};
}

int memfd_new_sealed(const char *name, const void *data, size_t size) {
        _cleanup_close_ int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        size_t done = 0;

        if (fd < 0)
                return -errno;
        while (done < size) {
                ssize_t n = write(fd, (const char *) data + done, size - done);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                done += (size_t) n;
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
                return -errno;
        return TAKE_FD(fd);
}

int memfd_read_all(int fd, uint64_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t done = 0;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADF;
        if ((uint64_t) st.st_size > max)
                return -E2BIG;
        buf = malloc((size_t) st.st_size + 1);
        if (!buf)
                return -ENOMEM;
        while (done < (size_t) st.st_size) {
                ssize_t n = pread(fd, buf + done, (size_t) st.st_size - done, (off_t) done);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                done += (size_t) n;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = done;
        return 0;
}

/* ---- the live page ---- */

static const char live_magic[8] = { 'P', 'R', 'S', 'D', 'L', 'I', 'V', 'E' };
#define LIVE_VERSION 1
#define LIVE_HEADER_SIZE 32
#define LIVE_SLOTS_MAX (1u << 22)

_Static_assert(sizeof(LiveSlot) == 32, "LiveSlot is 32 bytes");

static size_t live_size(uint32_t n_slots) {
        return LIVE_HEADER_SIZE + (size_t) n_slots * sizeof(LiveSlot);
}

static void live_page_set(LivePage *p, void *map, size_t size, uint32_t n_slots) {
        p->map = map;
        p->size = size;
        p->n_slots = n_slots;
        p->slots = (LiveSlot *) ((char *) map + LIVE_HEADER_SIZE);
}

int live_page_new(uint32_t n_slots, LivePage *ret) {
        _cleanup_close_ int fd = memfd_create("pressured-live", MFD_CLOEXEC);
        size_t size;
        void *map;

        if (fd < 0)
                return -errno;
        if (n_slots == 0 || n_slots > LIVE_SLOTS_MAX)
                return -EINVAL;
        size = live_size(n_slots);
        if (ftruncate(fd, (off_t) size) < 0)
                return -errno;
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        memcpy(map, live_magic, sizeof(live_magic));
        memcpy((char *) map + 8, &(uint32_t) { LIVE_VERSION }, 4);
        *ret = (LivePage) { .fd = TAKE_FD(fd) };
        live_page_set(ret, map, size, n_slots);
        return 0;
}

int live_page_adopt(int fd, LivePage *ret) {
        _cleanup_close_ int owned = fd;
        struct stat st;
        uint32_t version;
        size_t n_slots;
        void *map;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || st.st_size < LIVE_HEADER_SIZE + (off_t) sizeof(LiveSlot) ||
            (st.st_size - LIVE_HEADER_SIZE) % sizeof(LiveSlot) != 0)
                return -EBADMSG;
        n_slots = ((size_t) st.st_size - LIVE_HEADER_SIZE) / sizeof(LiveSlot);
        if (n_slots > LIVE_SLOTS_MAX)
                return -EBADMSG;
        map = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        memcpy(&version, (char *) map + 8, 4);
        if (memcmp(map, live_magic, sizeof(live_magic)) != 0 || version != LIVE_VERSION) {
                (void) munmap(map, (size_t) st.st_size);
                return -EBADMSG;
        }
        *ret = (LivePage) { .fd = TAKE_FD(owned) };
        live_page_set(ret, map, (size_t) st.st_size, (uint32_t) n_slots);
        return 0;
}

/*
 * The header: magic (8), version (4), reserved (4), clean serial (8), the
 * last pre-kill warning id (8; reserved, thus 0, in pages of 0.4).
 */
void live_page_set_clean(LivePage *p, uint64_t serial) {
        if (p && p->map)
                memcpy((char *) p->map + 16, &serial, sizeof(serial));
}

uint64_t live_page_clean(const LivePage *p) {
        uint64_t serial = 0;

        if (p && p->map)
                memcpy(&serial, (const char *) p->map + 16, sizeof(serial));
        return serial;
}

void live_page_set_mark(LivePage *p, uint64_t id) {
        if (p && p->map)
                memcpy((char *) p->map + 24, &id, sizeof(id));
}

uint64_t live_page_mark(const LivePage *p) {
        uint64_t id = 0;

        if (p && p->map)
                memcpy(&id, (const char *) p->map + 24, sizeof(id));
        return id;
}

void live_page_done(LivePage *p) {
        if (p->map)
                (void) munmap(p->map, p->size);
        safe_close(p->fd);
        *p = (LivePage) { .fd = -1 };
}

/* Twice the slots, same fd; the old mapping stays valid until the new one is in place. */
static int live_page_grow(LivePage *p) {
        uint32_t n = p->n_slots * 2;
        size_t size = live_size(n);
        void *map;

        if (n > LIVE_SLOTS_MAX || n <= p->n_slots)
                return -ENOMEM;
        if (ftruncate(p->fd, (off_t) size) < 0)
                return -errno;
        map = mremap(p->map, p->size, size, MREMAP_MAYMOVE);
        if (map == MAP_FAILED)
                return -errno;
        live_page_set(p, map, size, n);
        return 0;
}

int live_page_claim(LivePage *p, uint64_t id) {
        for (;;) {
                for (uint32_t k = 0; k < p->n_slots; k++) {
                        uint32_t i = (p->next_free + k) % p->n_slots;

                        if (p->slots[i].id == 0) {
                                p->slots[i] = (LiveSlot) { .id = id };
                                p->next_free = (i + 1) % p->n_slots;
                                return (int) i;
                        }
                }
                if (live_page_grow(p) < 0)
                        return -ENOMEM;
        }
}

void live_page_release(LivePage *p, int i) {
        LiveSlot *s = live_page_slot(p, i);

        if (s)
                *s = (LiveSlot) {};
}
