#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pressurectl's shell completions, for bash, zsh and fish, from one table.

The table below is every command and option of pressurectl and what their
values complete to; the build writes the three scripts from it
(meson.build next to this file), and test-completion checks that each
command and option `pressurectl --help` and `pressurectl COMMAND --help`
name is completed by all three shells. Change an option here and in its
command's --help together.

Cgroups are completed from the hierarchies the daemon uses, found as it
finds them (the first cgroup2 mount and the first cgroup v1 mount with
the memory controller in /proc/self/mountinfo): paths relative to them.
Where a command accepts a cgroup only the v1 memory hierarchy has (levels,
headroom, history, inject, top, and watch unless a selector needs
cgroup2), those are offered too.

usage: gen-completion.py bash|zsh|fish OUTPUT
"""
import sys

# What a value completes to: None (an option without a value), TEXT (a value
# nothing can be offered for), FILE, DIR, COMMAND (the rest of the line is a
# command line of its own), CGROUP_V2 (cgroups of the cgroup2 hierarchy),
# CGROUP (those and the ones only in the v1 memory hierarchy), or a list of
# the words it can be.
TEXT, FILE, DIR, COMMAND, CGROUP_V2, CGROUP = 'text', 'file', 'dir', 'command', 'cgroup-v2', 'cgroup'
LEVELS = ['low', 'medium', 'critical']
RESOURCES = ['memory', 'cpu', 'io']
VMPRESSURE = LEVELS + [f'{level},{mode}' for mode in ('default', 'hierarchy', 'local') for level in LEVELS]
PSI = ['some 150ms 2s', 'full 100ms 1s']


class Option:
    def __init__(self, short, long, value, description, v2_only=False):
        self.short, self.long, self.value, self.description = short, long, value, description
        # watch: with this selector, the cgroup must be in the cgroup2 hierarchy.
        self.v2_only = v2_only

    def names(self):
        return [n for n in (self.short, self.long) if n]


COMMON = [
    Option('-h', '--help', None, 'show the help of the command'),
    Option(None, '--json', None, 'machine-readable output'),
    Option(None, '--socket', FILE, "the daemon's socket"),
    Option(None, '--user', None, "the per-user daemon's socket"),
]

GLOBAL = [
    Option('-h', '--help', None, 'show the help'),
    Option('-V', '--version', None, 'show the version'),
    Option(None, '--socket', FILE, "the daemon's socket"),
    Option(None, '--user', None, "the per-user daemon's socket in $XDG_RUNTIME_DIR"),
    Option(None, '--json', None, 'machine-readable output'),
]


class Command:
    def __init__(self, name, cgroup, description, options=()):
        # cgroup: what its CGROUP argument completes to (None: it takes none).
        self.name, self.cgroup, self.description = name, cgroup, description
        self.options = COMMON + list(options)


COMMANDS = [
    Command('status', None, 'daemon status'),
    Command('history', CGROUP, 'recent pressure episodes'),
    Command('watch', CGROUP, 'subscribe and print events', [
        Option('-l', '--level', LEVELS, 'a level; the daemon picks the source'),
        Option(None, '--psi', PSI, 'an explicit PSI trigger', v2_only=True),
        Option(None, '--vmpressure', VMPRESSURE, 'cgroup v1 vmpressure'),
        Option(None, '--memory-events', None, 'changes of memory.events', v2_only=True),
        Option(None, '--protection', None, 'changes of the effective protection', v2_only=True),
        Option(None, '--kills', None, 'processes killed for lack of memory', v2_only=True),
        Option(None, '--levels', None, 'the memory level and headroom'),
        Option('-r', '--resource', RESOURCES, 'what --level and --psi watch'),
        Option('-n', '--count', TEXT, 'exit after N events'),
        Option(None, '--until-cleared', None, 'exit when the episode is over'),
        Option('-t', '--timeout', TEXT, 'exit 124 after SEC seconds'),
        Option(None, '--min-interval', TEXT, 'at most one event per interval'),
        Option(None, '--wait', None, 'wait for the daemon'),
        Option(None, '--exec-timeout', TEXT, 'stop a run of the hook after SEC seconds'),
        Option(None, '--exec', COMMAND, 'run a command for each event'),
    ]),
    Command('protection', CGROUP_V2, 'protection tree'),
    Command('reclaim', CGROUP_V2, 'the proactive reclaim controller'),
    Command('headroom', CGROUP, 'memory usage, nearest limit and headroom'),
    Command('inject', CGROUP, 'send a synthetic event', [
        Option('-l', '--level', LEVELS, 'the level to inject'),
        Option(None, '--resource', RESOURCES, 'the subscriptions of this resource'),
    ]),
    Command('reload', None, "reload the daemon's configuration"),
    Command('reexec', None, 'execute the daemon anew'),
    Command('top', CGROUP, 'live view of pressure, limits and protection', [
        Option('-d', '--delay', TEXT, 'refresh every SEC seconds'),
        Option('-b', '--batch', None, 'plain text at every refresh'),
        Option('-n', '--iterations', TEXT, 'exit after N refreshes'),
        Option(None, '--no-protection', None, 'start without the EMIN/ELOW columns'),
        Option(None, '--cgroup-root', DIR, 'the cgroup2 hierarchy to read'),
        Option(None, '--cgroup-v1-root', DIR, 'the cgroup v1 memory hierarchy to read'),
    ]),
    Command('notify', None, 'desktop notifications of pressure', [
        Option(None, '--cgroup', CGROUP_V2, "watch this cgroup instead of the session's"),
        Option(None, '--level', LEVELS, 'the level subscribed to'),
        Option(None, '--on-cleared', ['close', 'replace'], 'when an episode ends'),
        Option(None, '--min-interval', TEXT, 'update at most once per SEC seconds'),
        Option(None, '--no-kills', None, 'do not show kills'),
        Option(None, '--dry-run', None, 'print the notifications instead'),
        Option(None, '--cgroup-root', DIR, 'the cgroup2 hierarchy to read'),
        Option(None, '--cgroup-v1-root', DIR, 'the cgroup v1 memory hierarchy to read'),
    ]),
    Command('memory-pressure-env', None, 'drop-in lines for sd-event programs', [
        Option(None, '--psi', PSI, 'the trigger to ask for'),
        Option(None, '--resource', RESOURCES, 'which variables and socket'),
    ]),
]

HEADER = '''{comment} SPDX-License-Identifier: MIT
{comment} {shell} completion for pressurectl(1). Generated by
{comment} client/pressurectl/completion/gen-completion.py from its table: change it there.
'''

# The roots of the hierarchies (mountinfo: the mount point, field 5, of the first
# cgroup2 mount of a hierarchy's root, and with $1 = any, of the first cgroup v1
# one with the memory controller). awk, for all three shells alike.
AWK_ROOTS = (r'''awk -v want="$1" '{ for (i = 7; i <= NF && $i != "-"; i++) ; '''
             r'''if ($4 != "/") next; '''
             r'''if ($(i + 1) == "cgroup2" && !v2++) print $5; '''
             r'''else if (want == "any" && $(i + 1) == "cgroup" && ("," $(i + 3) ",") ~ /,memory,/ && !v1++) print $5 }' '''
             r'''/proc/self/mountinfo 2>/dev/null''')


def values_of(value):
    return value if isinstance(value, list) else []


def sh_words(words):
    return ' '.join(words)


# ---- bash ----

def bash(out):
    w = out.write
    w(HEADER.format(comment='#', shell='bash'))
    w(f'''
# The mount points of the cgroup hierarchies: $1 = v2 (cgroup2) or any (and v1 memory).
__pressurectl_roots() {{
        {AWK_ROOTS}
}}

# Cgroups below the roots of $1 whose path starts with $2, relative to the roots, each once.
__pressurectl_cgroups() {{
        local base=${{2:-/}} root
        [[ $base == /* ]] || base=/$base
        COMPREPLY=($(for root in $(__pressurectl_roots "$1"); do
                (cd "$root" 2>/dev/null && compgen -d -- "${{base#/}}")
        done | sort -u | sed 's|^|/|'))
        compopt -o nospace 2>/dev/null
}}

_pressurectl() {{
        local cur prev words cword
        _init_completion || return

        local cmd= i v2only=
        for ((i = 1; i < cword; i++)); do
                case ${{words[i]}} in
                        --socket) ((i++)) ;;
                        -*) ;;
                        *) cmd=${{words[i]}}; break ;;
                esac
        done

        if [[ -z $cmd ]]; then
                case $prev in
                        --socket) _filedir; return ;;
                esac
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "{sh_words(n for o in GLOBAL for n in o.names())}" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "{sh_words(c.name for c in COMMANDS)}" -- "$cur"))
                fi
                return
        fi

        case $cmd in
''')
    for c in COMMANDS:
        bash_command(w, c)
    w('''        esac
}

complete -F _pressurectl pressurectl
''')


def bash_command(w, c):
    w(f'                {c.name})\n')
    for o in c.options:
        if o.value == COMMAND:
            w(f'''                        for ((i = 2; i < cword; i++)); do
                                if [[ ${{words[i]}} == {o.long} ]]; then
                                        _command_offset $((i + 1))
                                        return
                                fi
                        done
''')
    v2 = [n for o in c.options if o.v2_only for n in o.names()]
    if v2:
        w(f'''                        for ((i = 2; i < cword; i++)); do
                                case ${{words[i]}} in {'|'.join(v2)}) v2only=v2 ;; esac
                        done
''')
    w('                        case $prev in\n')
    for o in c.options:
        if o.value is None or o.value == COMMAND:
            continue
        pattern = '|'.join(o.names())
        if o.value == FILE:
            action = '_filedir'
        elif o.value == DIR:
            action = '_filedir -d'
        elif o.value in (CGROUP, CGROUP_V2):
            action = f'__pressurectl_cgroups {"any" if o.value == CGROUP else "v2"} "$cur"'
        elif o.value == TEXT:
            action = ':'
        elif any(' ' in v for v in o.value):
            # Values with blanks: one a line, inserted quoted.
            lines = '\\n'.join(o.value)
            action = (f"local IFS=$'\\n'; COMPREPLY=($(compgen -W $'{lines}' -- \"$cur\")); "
                      'COMPREPLY=("${COMPREPLY[@]@Q}")')
        else:
            action = f'COMPREPLY=($(compgen -W "{sh_words(o.value)}" -- "$cur"))'
        w(f'                                {pattern}) {action}; return ;;\n')
    w('                        esac\n')
    w(f'''                        if [[ $cur == -* ]]; then
                                COMPREPLY=($(compgen -W "{sh_words(n for o in c.options for n in o.names())}" -- "$cur"))
''')
    if c.cgroup:
        kind = 'v2' if c.cgroup == CGROUP_V2 else '${v2only:-any}'
        w(f'''                        else
                                __pressurectl_cgroups "{kind}" "$cur"
''')
    w('                        fi ;;\n')


# ---- zsh ----

def zsh_describe(name, options):
    """An array of "NAME:DESCRIPTION" for _describe."""
    items = []
    for o in options:
        for n in o.names():
            items.append("'%s:%s'" % (n, o.description.replace("'", "'\\''").replace(':', '\\:')))
    return f'{name}=(' + ' '.join(items) + ')'


def zsh(out):
    w = out.write
    commands = ' '.join("'%s:%s'" % (c.name, c.description.replace("'", "'\\''")) for c in COMMANDS)
    w('#compdef pressurectl\n')
    w(HEADER.format(comment='#', shell='zsh'))
    w(f'''
# The mount points of the cgroup hierarchies: $1 = v2 (cgroup2) or any (and v1 memory).
_pressurectl_roots() {{
        {AWK_ROOTS}
}}

# Cgroups below the roots of $1 in the directory of the word, relative to the roots, each once.
_pressurectl_cgroups() {{
        local -a roots found
        local root base=${{PREFIX:-/}} dir
        [[ $base == /* ]] || base=/$base
        dir=${{base%/*}}
        roots=(${{(f)"$(_pressurectl_roots $1)"}})
        for root in $roots; do
                found+=($root$dir/*(N/:t))
        done
        found=(${{(u)found}})
        compadd -S '' -- ${{found/#/$dir/}}
}}

_pressurectl() {{
        local cmd i v2only
        local -a opts
        for ((i = 2; i < CURRENT; i++)); do
                case $words[i] in
                        --socket) (( i++ )) ;;
                        -*) ;;
                        *) cmd=$words[i]; break ;;
                esac
        done

        if [[ -z $cmd ]]; then
                if [[ $words[CURRENT-1] == --socket ]]; then
                        _files
                elif [[ $PREFIX == -* ]]; then
                        {zsh_describe('opts', GLOBAL)}
                        _describe -t options 'option' opts
                else
                        opts=({commands})
                        _describe -t commands 'command' opts
                fi
                return
        fi

        case $cmd in
''')
    for c in COMMANDS:
        zsh_command(w, c)
    w('''        esac
}

_pressurectl "$@"
''')


def zsh_command(w, c):
    w(f'                {c.name})\n')
    for o in c.options:
        if o.value == COMMAND:
            w(f'''                        for ((i = 2; i < CURRENT; i++)); do
                                if [[ $words[i] == {o.long} ]]; then
                                        shift $i words
                                        (( CURRENT -= i ))
                                        _normal
                                        return
                                fi
                        done
''')
    v2 = [n for o in c.options if o.v2_only for n in o.names()]
    if v2:
        w(f'''                        for ((i = 2; i < CURRENT; i++)); do
                                case $words[i] in {'|'.join(v2)}) v2only=v2 ;; esac
                        done
''')
    w('                        case $words[CURRENT-1] in\n')
    for o in c.options:
        if o.value is None or o.value == COMMAND:
            continue
        pattern = '|'.join(o.names())
        if o.value == FILE:
            action = '_files'
        elif o.value == DIR:
            action = '_files -/'
        elif o.value in (CGROUP, CGROUP_V2):
            action = f'_pressurectl_cgroups {"any" if o.value == CGROUP else "v2"}'
        elif o.value == TEXT:
            action = ':'
        else:
            action = 'compadd -- ' + ' '.join("'%s'" % v for v in o.value)
        w(f'                                {pattern}) {action}; return ;;\n')
    w('                        esac\n')
    w(f'''                        if [[ $PREFIX == -* ]]; then
                                {zsh_describe('opts', c.options)}
                                _describe -t options 'option' opts
''')
    if c.cgroup:
        kind = 'v2' if c.cgroup == CGROUP_V2 else '${v2only:-any}'
        w(f'''                        else
                                _pressurectl_cgroups "{kind}"
''')
    w('                        fi ;;\n')


# ---- fish ----

def fish_quote(s):
    return "'" + s.replace('\\', '\\\\').replace("'", "\\'") + "'"


def fish(out):
    w = out.write
    w(HEADER.format(comment='#', shell='fish'))
    w(f'''
# The command given so far, or nothing.
function __pressurectl_command
        set -l words (commandline -opc)
        set -e words[1]
        while set -q words[1]
                switch $words[1]
                        case --socket
                                set -e words[1]
                        case '-*'
                        case '*'
                                echo $words[1]
                                return 0
                end
                set -e words[1]
        end
        return 1
end

# Whether the command is $argv[1] and no --exec came yet (after it, the rest is a command line).
function __pressurectl_using
        __pressurectl_command | string match -q -- $argv[1]; and not contains -- --exec (commandline -opc)
end

# How many words before --exec are no options: what __fish_complete_subcommand skips to its command.
function __pressurectl_exec_skip
        set -l n 0
        for word in (commandline -opc)
                test "$word" = --exec; and break
                string match -q -- '-*' $word; or set n (math $n + 1)
        end
        echo $n
end

# The mount points of the cgroup hierarchies: $argv[1] = v2 (cgroup2) or any (and v1 memory).
function __pressurectl_roots
        {AWK_ROOTS.replace('"$1"', '"$argv[1]"')}
end

# Cgroups in the directory of the word being completed, relative to the roots of $argv[1], each once.
function __pressurectl_cgroups
        set -l kind $argv[1]
        if test "$kind" = cgroup
                set kind any
                for v2only in {' '.join(n for c in COMMANDS for o in c.options if o.v2_only for n in o.names())}
                        contains -- $v2only (commandline -opc); and set kind v2
                end
        end
        set -l base (commandline -ct)
        string match -q -- '/*' $base; or set base /$base
        set -l dir (string replace -r '/[^/]*$' '' -- $base)
        for root in (__pressurectl_roots $kind)
                for d in $root$dir/*/
                        echo $dir/(basename $d)
                end
        end | sort -u
end

complete -c pressurectl -f
''')
    for c in COMMANDS:
        w(f'complete -c pressurectl -n "not __pressurectl_command" -a {c.name} -d {fish_quote(c.description)}\n')
    for o in GLOBAL:
        w('complete -c pressurectl -n "not __pressurectl_command"' + fish_option(o) + '\n')
    for c in COMMANDS:
        cond = f'-n "__pressurectl_using {c.name}"'
        for o in c.options:
            if o.value == COMMAND:
                w(f'complete -c pressurectl {cond}{fish_option(o)}\n')
                w(f'complete -c pressurectl -n "__pressurectl_command | string match -q -- {c.name}; and contains -- {o.long} '
                  f'(commandline -opc)" -x -a "(__fish_complete_subcommand --fcs-skip=(__pressurectl_exec_skip))"\n')
            else:
                w(f'complete -c pressurectl {cond}{fish_option(o)}\n')
        if c.cgroup:
            w(f'complete -c pressurectl {cond} -a "(__pressurectl_cgroups {"v2" if c.cgroup == CGROUP_V2 else "cgroup"})"\n')


def fish_option(o):
    s = ''
    if o.short:
        s += f' -s {o.short[1:]}'
    s += f' -l {o.long[2:]}'
    if o.value == FILE:
        s += ' -r -F'
    elif o.value == DIR:
        s += ' -x -a "(__fish_complete_directories)"'
    elif o.value in (CGROUP, CGROUP_V2):
        s += f' -x -a "(__pressurectl_cgroups {"v2" if o.value == CGROUP_V2 else "cgroup"})"'
    elif o.value == TEXT:
        s += ' -x'
    elif isinstance(o.value, list):
        s += ' -x -a ' + fish_quote(' '.join(v.replace(' ', '\\ ') for v in o.value))
    return s + f' -d {fish_quote(o.description)}'


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ('bash', 'zsh', 'fish'):
        sys.exit('usage: gen-completion.py bash|zsh|fish OUTPUT')
    with open(sys.argv[2], 'w') as out:
        {'bash': bash, 'zsh': zsh, 'fish': fish}[sys.argv[1]](out)


if __name__ == '__main__':
    main()
