/* SPDX-License-Identifier: MIT */
/*
 * Reading cgroupfs, for the daemon and pressurectl alike: small kernel
 * files read whole into the caller's (stack) buffer, the subdirectories of
 * a directory fd, and a depth-first walk of a cgroup tree relative to a
 * directory fd. Plain syscalls, no stdio, no event loop.
 *
 * Every name is opened relative to a directory fd with O_NOFOLLOW and
 * O_CLOEXEC. A listing yields directories only: regular files, symlinks
 * (to directories too) and "." and ".." are left out; an entry whose type
 * the file system does not say is looked at with fstatat() without
 * following it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * read_small_fd - read a small file whole, from its start, into @buf.
 * @fd: the file, open for reading; pread() from offset 0, so a kept fd
 *      reads the current contents each time. One that cannot be read at
 *      an offset (a FIFO or pipe: ESPIPE) is read() from where it is.
 * @buf: where to, NUL-terminated
 * @size: the size of @buf; the file may hold at most @size - 1 bytes
 *
 * A read shorter than asked ends the file, as on regular, proc, sysfs and
 * cgroup files: one pread() for a file that fits. Returns the length, -EFBIG
 * if the file holds more than @size - 1 bytes (@buf then holds its first
 * @size - 1), -EINVAL if @size < 2, or the errno of pread().
 */
ssize_t read_small_fd(int fd, char *buf, size_t size);

/**
 * read_small_at - read_small_fd() on the file @name below @dfd.
 * @dfd: a directory fd, or AT_FDCWD
 * @name: the file; a symlink is not followed (-ELOOP)
 * @buf: where to, NUL-terminated
 * @size: the size of @buf
 *
 * Returns the length or a negative errno, of openat() or read_small_fd().
 */
ssize_t read_small_at(int dfd, const char *name, char *buf, size_t size);

/* What listings cost, for callers that count their syscalls. */
typedef struct CgroupfsListStats {
        uint64_t getdents;      /* getdents64() calls */
        uint64_t fstats;        /* fstatat() calls for entries of unknown type */
} CgroupfsListStats;

/*
 * Called for each subdirectory @name (inode @ino) of the directory @dfd.
 * Return 0 to go on, a negative errno to stop the listing with it.
 */
typedef int (*CgroupfsEntryFn)(int dfd, const char *name, uint64_t ino, void *userdata);

/**
 * cgroupfs_list - call @fn for each subdirectory of @dfd, in directory order.
 * @dfd: the directory; read from its current offset (a fresh fd starts at
 *       0; a kept one needs lseek() first)
 * @buf: getdents64() buffer, aligned for struct dirent64
 * @size: its size; at least 1 KiB
 * @stats: optional; the syscalls made are added to it
 * @fn: called per subdirectory
 * @userdata: passed to @fn
 *
 * A directory removed before or while it is listed ends the listing
 * (ENOENT), which is no error. Returns 0, @fn's negative return, -EINVAL
 * for a @buf too small, or the errno of getdents64().
 */
int cgroupfs_list(int dfd, void *buf, size_t size, CgroupfsListStats *stats, CgroupfsEntryFn fn, void *userdata);

/* A visit's return value: visit this cgroup's children neither. */
#define CGROUPFS_WALK_PRUNE 1

/* The most levels a walk descends, whatever its caller asks. */
#define CGROUPFS_WALK_DEPTH_MAX 64

typedef struct CgroupfsWalk {
        /* Levels listed below the root: 1 lists only the root's children. At most CGROUPFS_WALK_DEPTH_MAX. */
        unsigned max_depth;
        /* Directories below the root the walk enters at most, counted before each is opened; 0: no bound. */
        size_t max_count;
        /*
         * Optional. Called for each subdirectory @name of the cgroup @parent
         * before it is opened; @depth is the child's. Returns 1 to enter
         * it, 0 to pass it by, a negative errno to stop the walk. The
         * caller's pruning: a child passed by costs no open and no count.
         */
        int (*enter)(const char *parent, unsigned depth, const char *name, void *userdata);
        /*
         * Called for each cgroup entered, the root first (@path "/", @depth
         * 0), then depth first, siblings sorted by strcmp() of their names;
         * @path is relative to the root ("/a/b") and @dfd its directory,
         * valid during the call. Returns 0 to list its children,
         * CGROUPFS_WALK_PRUNE not to, a negative errno to stop the walk.
         */
        int (*visit)(int dfd, const char *path, unsigned depth, void *userdata);
        /*
         * Optional. A failure that is not the cgroup's removal (ENOENT,
         * ENODEV): @name of @parent could not be opened, or @parent could
         * not be listed (@name "."). The walk goes on.
         */
        void (*error)(const char *parent, const char *name, int error, void *userdata);
        void *userdata;

        /* Filled by the walk. */
        size_t dirs_listed;     /* listings attempted */
        size_t entered;         /* directories entered below the root */
        bool truncated;         /* max_count left some out */
} CgroupfsWalk;

/**
 * cgroupfs_walk - walk the cgroup tree below @root_fd.
 * @root_fd: the root's directory; not closed, its offset not used (the
 *           walk lists a descriptor of its own)
 * @w: the limits and callbacks; its counters are reset and filled
 *
 * Returns 0, a callback's negative errno, -ENOMEM, -EINVAL for a
 * max_depth beyond CGROUPFS_WALK_DEPTH_MAX or no visit, or the errno of
 * opening the root again.
 */
int cgroupfs_walk(int root_fd, CgroupfsWalk *w);
