#!/usr/bin/env python3
"""Checks that a tree's stages include only from the stages before them, with no include cycle.

Usage: check_stages.py [--parts] ROOT TREE STAGE... (ROOT: the repository root, the include root;
TREE: a folder under it, e.g. interposer; STAGE: its stage folders, first to last, siblings that
may not include each other joined by commas, e.g. `reports,run,live`). Files directly in TREE come
after every stage. Reads each source's `#include "..."` lines; an include is resolved against the
including file's folder first, then ROOT, as the compiler does. Exits 1 and names each upward or
sideways include, each include of TREE's that names no file, each file outside the stages, and
each cycle; prints a one-line summary either way, so a failing build log says what to move.
A cycle is one among files; with --parts, among parts, a part being a header with its source
(x.h and x.cpp): a.h that includes b.h while b.cpp includes a.h is then one, though no file
includes itself, since a and b each need the other (move what both need into a header of its own).
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
SOURCES = ('.h', '.hpp', '.cpp', '.cc', '.c', '.S')


def main(argv):
    parts = argv[1:2] == ['--parts']
    argv = argv[:1] + argv[1 + parts:]
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    root, tree, stage_args = os.path.abspath(argv[1]), argv[2].strip('/'), argv[3:]
    level = {}  # stage folder -> its position
    for i, group in enumerate(stage_args):
        for stage in group.split(','):
            level[stage] = i
    top = len(stage_args)  # files directly in TREE
    tree_dir = os.path.join(root, tree)

    def stage_of(path):
        """The stage folder of a file under TREE ('' for TREE itself), or None outside TREE."""
        rel = os.path.relpath(path, tree_dir)
        if rel.startswith('..'):
            return None
        parts = rel.split(os.sep)
        return parts[0] if len(parts) > 1 else ''

    def rank(stage):
        return top if stage == '' else level.get(stage)

    files = []
    for folder, _, names in os.walk(tree_dir):
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(SOURCES)]
    problems = []
    graph = {}  # file, or part (a path less its extension), -> those it includes

    def part(path):
        return os.path.splitext(path)[0] if parts else path

    for path in files:
        stage = stage_of(path)
        here = os.path.relpath(path, root)
        if rank(stage) is None:
            problems.append(f'{here}: in {stage}/, which is not a stage of {tree}/')
            continue
        graph.setdefault(part(path), [])
        with open(path, encoding='utf-8', errors='replace') as f:
            text = f.read()
        for line_no, name in ((text.count('\n', 0, m.start()) + 1, m.group(1))
                              for m in INCLUDE.finditer(text)):
            candidates = [os.path.normpath(os.path.join(os.path.dirname(path), name)),
                          os.path.normpath(os.path.join(root, name))]
            target = next((c for c in candidates if os.path.isfile(c)), None)
            if target is None and name.startswith(tree + '/'):
                problems.append(f'{here}:{line_no}: includes "{name}", which does not exist')
                continue
            if target is None or stage_of(target) is None:
                continue  # outside TREE (include/gmemhook, system headers): not a stage's
            if part(target) != part(path):
                graph[part(path)].append(part(target))
            to = stage_of(target)
            if rank(to) is None:
                continue  # reported as a file outside the stages
            if rank(to) > rank(stage) or (rank(to) == rank(stage) and to != stage):
                problems.append(f'{here}:{line_no}: {stage or tree + "/"} includes "{name}" '
                                f'from {to or tree + "/"}, '
                                + ('a later stage' if rank(to) > rank(stage) else 'a sibling'))
    # Cycles (a stage's own files or parts may not include each other round either).
    state = {}  # 1: on the current path, 2: done
    for start in graph:
        if state.get(start):
            continue
        path, stack = [start], [iter(graph[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                problems.append('include cycle: ' +
                                ' -> '.join(os.path.relpath(p, root) + '.*' * parts
                                            for p in cycle))
            elif not state.get(nxt) and nxt in graph:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(graph[nxt]))
    for p in problems:
        print(p)
    order = ' < '.join(s.replace(',', ' | ') for s in stage_args)
    if problems:
        print(f'{tree}/: {len(problems)} problem(s) with the stage order {order} < {tree}/')
        return 1
    print(f'{tree}/: {len(files)} files, every include follows {order} < {tree}/, no cycle')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
