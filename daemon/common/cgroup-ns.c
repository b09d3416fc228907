/* SPDX-License-Identifier: MIT */
/* Cgroup namespace roots of peers and the translation of their cgroup paths. */
#include "cgroup-ns.h"
#include "cgroup.h"
#include "kernfile.h"
#include "util.h"

void cgroup_view_done(CgroupView *v) {
        if (!v)
                return;
        free(v->v2_root);
        free(v->v1_root);
        *v = (CgroupView) {};
}

const char *cgroup_view_root(const CgroupView *v, bool v1) {
        if (!v)
                return NULL;
        return v1 ? v->v1_root : v->v2_root;
}

static bool root_is_slash(const char *root) {
        return !root || streq(root, "/");
}

int cgroup_view_choose_root(CgroupNsRelation rel, const char *mountinfo, bool v1_memory, const char *own,
                            char **ret) {
        _cleanup_free_ char *cg = NULL, *root = NULL;
        int k;

        /* Same namespace; the peer in no cgroup of that hierarchy; or in one
         * outside the daemon's own namespace, which /proc shows as "/..":
         * such a peer (the daemon runs in a container, the peer does not)
         * shares the daemon's view, it can name nothing above it anyway. */
        if (rel == CGROUP_NS_SAME || !own || streq(own, "/..") || strncmp(own, "/../", 4) == 0) {
                *ret = NULL;
                return 0;
        }
        k = cgroup_path_normalize(own, &cg);
        if (k < 0)
                return k == -ENOMEM ? k : -EBADMSG;
        k = mountinfo_cgroup_ns_root(mountinfo, v1_memory, cg, &root);
        if (k < 0)
                return k;
        if (!root && rel == CGROUP_NS_OTHER)
                root = TAKE_PTR(cg);
        if (root && streq(root, "/")) {
                free(root);
                root = NULL;
        }
        *ret = TAKE_PTR(root);
        return 0;
}

int cgroup_view_to_real(const char *root, const char *path, char **ret) {
        _cleanup_free_ char *norm = NULL, *joined = NULL;
        size_t n;
        int k;

        k = cgroup_path_normalize(path, &norm);
        if (k < 0)
                return k;
        if (root_is_slash(root) || streq(norm, "/")) {
                if (root_is_slash(root)) {
                        *ret = TAKE_PTR(norm);
                        return 0;
                }
                joined = strdup(root);
        } else {
                n = strlen(root) + strlen(norm);
                if (n > CGROUP_PATH_MAX)
                        return -EINVAL;
                joined = malloc(n + 1);
                if (joined) {
                        memcpy(joined, root, strlen(root));
                        memcpy(joined + strlen(root), norm, strlen(norm) + 1);
                }
        }
        if (!joined)
                return -ENOMEM;
        *ret = TAKE_PTR(joined);
        return 0;
}

const char *cgroup_view_from_real(const char *root, const char *real) {
        size_t n;

        if (!real)
                return NULL;
        if (root_is_slash(root))
                return real;
        n = strlen(root);
        if (strncmp(real, root, n) != 0)
                return NULL;
        if (real[n] == 0)
                return "/";
        return real[n] == '/' ? real + n : NULL;
}
