#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl's completions for bash, zsh and fish (generated at build time
from one table, client/pressurectl/completion/gen-completion.py), each run
by its real shell:

- every command of `pressurectl --help` and every global option it names
  are completed, and so is every option each `pressurectl COMMAND --help`
  names;
- option values: levels, resources, --on-cleared, --psi triggers;
- cgroups: a uniquely named cgroup of the cgroup2 hierarchy and one only in
  the cgroup v1 memory hierarchy (removed afterwards) are offered where the
  command accepts them: headroom and watch --levels take both, protection
  and watch --kills only the cgroup2 one;
- watch --exec completes a command line of its own.

bash runs the completion function as bash-completion does; zsh runs in a
pseudo-terminal with compinit, its compadd wrapped to record the matches;
fish answers `complete -C`. A shell that is not installed is a part left
out, and so are the cgroups without root or without both hierarchies."""
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.environ.get('PRESSURED_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')), 'tests'))
import pressured_test as pt  # noqa: E402

check = pt.check
GENERATED = os.path.join(pt.BUILD_ROOT, 'client', 'pressurectl', 'completion')
TIMEOUT = 30
END = '--end-of-matches--'


# ---- what --help names ----

def help_options(text):
    """The options an option list of a --help names: the words starting with "-" that begin its lines."""
    found = []
    for line in text.splitlines():
        m = re.match(r'^\s+((?:-\w|--[\w-]+)(?:\s+(?:-\w|--[\w-]+))*)(?=\s|$)', line)
        if m:
            found += m.group(1).split()
    return found


def what_help_names():
    """(commands, global options, {command: its options}) as pressurectl's --help texts say."""
    text = pt.run_ctl('--help').stdout
    commands_part = text.split('Commands:', 1)[1].split('Options:', 1)[0]
    commands = [line.split()[0] for line in commands_part.splitlines() if line.strip()]
    global_options = help_options(text.split('Options:', 1)[1])
    options = {}
    for c in commands:
        res = pt.run_ctl(c, '--help')
        check(res.returncode == 0, f'pressurectl {c} --help', res.returncode, res.stderr)
        options[c] = help_options(res.stdout)
    check(len(commands) >= 12 and '--socket' in global_options and '--levels' in options['watch'],
          'the help texts were read', commands, global_options, options.get('watch'))
    return commands, global_options, options


# ---- the three shells ----

def bash_complete(lines):
    """{line: matches} from the bash completion, every line in one bash."""
    script = [f'source {pt.BASH_COMPLETION}', f'source {os.path.join(GENERATED, "pressurectl")}']
    for line in lines:
        words = shlex.split(line) + ([''] if line.endswith(' ') else [])
        script.append(f'COMP_WORDS=({" ".join(shlex.quote(w) for w in words)}); COMP_CWORD={len(words) - 1}; '
                      f'COMP_LINE={shlex.quote(line)}; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); '
                      f'_pressurectl 2>/dev/null; printf "%s\\n" "${{COMPREPLY[@]}}"; echo {END}')
    return split_answers(lines, run_shell(['bash', '-c', '\n'.join(script)]))


def fish_complete(lines):
    """{line: matches} of `complete -C` in one fish."""
    script = [f'source {os.path.join(GENERATED, "pressurectl.fish")}']
    for line in lines:
        script.append(f'complete -C{fish_string(line)}; echo {END}')
    out = run_shell(['fish', '--no-config', '-c', '\n'.join(script)])
    return {k: [m.split('\t')[0] for m in v] for k, v in split_answers(lines, out).items()}


def fish_string(s):
    return "'" + s.replace('\\', '\\\\').replace("'", "\\'") + "'"


def run_shell(cmd):
    env = dict(os.environ, PATH=os.path.dirname(pt.PRESSURECTL) + ':' + os.environ.get('PATH', ''))
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT * 4, env=env)
    check(res.returncode == 0, f'{cmd[0]} ran the completions', res.returncode, res.stderr[-2000:])
    return res.stdout


def split_answers(lines, out):
    parts = out.split(END + '\n')
    check(len(parts) == len(lines) + 1, 'one answer per line asked', len(parts), out[-2000:])
    return {line: [m for m in part.splitlines() if m] for line, part in zip(lines, parts)}


ZSHRC = r'''
fpath=({fpath} $fpath)
autoload -Uz compinit && compinit -u -D
unsetopt autolist listambiguous beep
PS1='> '
# Every match the completion adds goes to the file as well.
compadd () {{
        if [[ ${{@[1,(i)(-|--)]}} == *-(O|A|D)\ * ]]; then
                builtin compadd "$@"
                return
        fi
        local -a __matches
        builtin compadd -O __matches "$@"
        (( $#__matches )) && print -rl -- $__matches >> {out}
        builtin compadd "$@"
}}
__complete_and_mark() {{
        zle complete-word
        print -r -- {end} >> {out}
        BUFFER=''
        CURSOR=0
}}
zle -N __complete_and_mark
bindkey '^I' __complete_and_mark
'''


def zsh_complete(lines):
    """{line: matches}: each line typed into an interactive zsh, then Tab."""
    answers = {}
    with tempfile.TemporaryDirectory(prefix='pressured-zsh-') as home:
        out = os.path.join(home, 'matches')
        with open(os.path.join(home, '.zshrc'), 'w') as f:
            f.write(ZSHRC.format(fpath=GENERATED, out=out, end=END))
        env = dict(os.environ, ZDOTDIR=home, HOME=home, TERM='xterm',
                   PATH=os.path.dirname(pt.PRESSURECTL) + ':' + os.environ.get('PATH', ''))
        pid, fd = pty.fork()
        if pid == 0:
            os.execve(shutil.which('zsh'), ['zsh', '-i'], env)
        try:
            for line in lines:
                open(out, 'w').close()
                os.write(fd, line.encode() + b'\t')
                text = wait_file(fd, out)
                answers[line] = [m for m in text.splitlines() if m != END]
        finally:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(fd)
    return answers


def wait_file(fd, path):
    """Read the terminal (so that zsh never blocks writing to it) until @path holds the end mark."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                os.read(fd, 65536)
            except OSError:
                break
        with open(path) as f:
            text = f.read()
        if END in text:
            return text
    raise AssertionError(f'zsh did not complete within {TIMEOUT} s')


SHELLS = {'bash': bash_complete, 'zsh': zsh_complete, 'fish': fish_complete}


def available_shells():
    shells = []
    for name in SHELLS:
        if not shutil.which(name):
            pt.skip_part(f'the {name} completion: {name} is not installed')
        elif name == 'bash' and not pt.have_bash_completion('the bash completion'):
            pass
        else:
            shells.append(name)
    return shells


# ---- the checks ----

def check_commands_and_options(shells, commands, global_options, options):
    lines = ['pressurectl ', 'pressurectl -'] + [f'pressurectl {c} -' for c in commands]
    for shell in shells:
        got = SHELLS[shell](lines)
        missing = sorted(set(commands) - set(got['pressurectl ']))
        check(not missing, f'{shell}: completes every command of pressurectl --help', missing, got['pressurectl '])
        missing = sorted(set(global_options) - set(got['pressurectl -']))
        check(not missing, f'{shell}: completes every option of pressurectl --help', missing, got['pressurectl -'])
        for c in commands:
            missing = sorted(set(options[c]) - set(got[f'pressurectl {c} -']))
            check(not missing, f'{shell}: completes every option of pressurectl {c} --help', missing,
                  got[f'pressurectl {c} -'])
        print(f'{shell}: {len(commands)} commands, {len(global_options)} global options, '
              f'{sum(len(o) for o in options.values())} options of commands completed', flush=True)


VALUES = {
    'pressurectl watch --level ': ['critical', 'low', 'medium'],
    'pressurectl inject --resource ': ['cpu', 'io', 'memory'],
    'pressurectl notify --on-cleared ': ['close', 'replace'],
    'pressurectl memory-pressure-env --psi ': ['full 100ms 1s', 'some 150ms 2s'],
    'pressurectl watch --exec mkfif': ['mkfifo'],
}


def check_values(shells):
    for shell in shells:
        got = SHELLS[shell](list(VALUES))
        for line, want in VALUES.items():
            check(sorted(set(m.strip("'") for m in got[line])) == want, f'{shell}: {line!r}', got[line], want)


def check_cgroups(shells):
    if os.geteuid() != 0:
        pt.skip_part('the completion of cgroups: making cgroups needs root')
        return
    if not os.path.exists(os.path.join(pt.V2_ROOT, 'cgroup.procs')) or not pt.have_v1_memory():
        pt.skip_part('the completion of cgroups: needs both a cgroup2 and a cgroup v1 memory hierarchy')
        return
    prefix = f'pressured-comp-{uuid.uuid4().hex[:10]}'
    two, one = f'/{prefix}-two', f'/{prefix}-v1only'
    made = []
    try:
        for d in (pt.V2_ROOT + two, pt.V1_MEMORY_ROOT + one):
            os.mkdir(d)
            made.append(d)
        want = {f'pressurectl headroom /{prefix}': [two, one],
                f'pressurectl watch --levels /{prefix}': [two, one],
                f'pressurectl top /{prefix}': [two, one],
                f'pressurectl protection /{prefix}': [two],
                f'pressurectl watch --kills /{prefix}': [two],
                f'pressurectl notify --cgroup /{prefix}': [two]}
        for shell in shells:
            got = SHELLS[shell](list(want))
            for line, cgroups in want.items():
                check(sorted(m.rstrip('/') for m in got[line]) == sorted(cgroups),
                      f'{shell}: {line!r} offers the cgroups it accepts', got[line], cgroups)
    finally:
        for d in reversed(made):
            os.rmdir(d)


def main():
    if not os.path.isdir(GENERATED):
        pt.fail(f'{GENERATED}: the completions are not built')
    shells = available_shells()
    commands, global_options, options = what_help_names()
    check_commands_and_options(shells, commands, global_options, options)
    check_values(shells)
    check_cgroups(shells)
    pt.finish()


if __name__ == '__main__':
    main()
