#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""[Policy] InjectGroup= lets members of a group Inject besides root, named
by group name or numeric GID; everyone else gets PermissionDenied (exit 4)."""
import grp
import os
import pwd
import sys

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', '.'), 'tests'))
import pressured_test as pt  # noqa: E402


def inject_as_nobody(d):
    return pt.run_ctl('inject', '--level', 'low', socket=d.socket, user='nobody')


def main():
    pt.require_root('it calls Inject as other users and groups')
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        pt.skip('no user "nobody"')
    group = grp.getgrgid(nobody.pw_gid).gr_name

    with pt.Daemon() as d:
        r = inject_as_nobody(d)
        pt.check(r.returncode == 4, 'without InjectGroup= nobody may not inject', r.returncode, r.stderr)

    for value in (group, str(nobody.pw_gid)):
        with pt.Daemon(config_text=f'[Policy]\nInjectGroup={value}\n') as d:
            r = inject_as_nobody(d)
            pt.check(r.returncode == 0, f'InjectGroup={value} lets its member inject', r.returncode, r.stderr)

    with pt.Daemon(config_text='[Policy]\nInjectGroup=0\n') as d:
        r = inject_as_nobody(d)
        pt.check(r.returncode == 4, 'a non-member of InjectGroup= may not inject', r.returncode, r.stderr)
    pt.finish()


if __name__ == '__main__':
    main()
