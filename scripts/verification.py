#!/usr/bin/env python3
"""Writes a GPU check's results into docs/verification.md (run by scripts/gpu-check.sh).

    scripts/verification.py OUT_DIR [DOC]

OUT_DIR is what scripts/gpu-check.sh left (its results.json; also inside OUT_DIR.tgz, so a run
brought back from a GPU machine can be applied here). DOC (default docs/verification.md) holds
one generated section per kind of GPU machine, between `<!-- gpu-check KIND -->` and
`<!-- gpu-check end -->`; everything outside those markers is kept as written. In the section
of the machine the run was on, the rows of every group the run checked (`--only`) are replaced
by the run's rows and the other groups' rows stay, so the table holds the latest result of each
check; earlier results live in git.
"""

import json
import os
import re
import sys

BEGIN = re.compile(r"<!-- gpu-check (.+?) -->\n")
END = "<!-- gpu-check end -->"
HEADER = ("| group | check | expected (oracle) | measured (gmemhook) | result | note | run |\n"
          "|---|---|---|---|---|---|---|\n")
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def cell(text):
    """One table cell: on one line, its pipes escaped so the row keeps its columns."""
    return " ".join(str(text).split()).replace("|", "\\|")


def parse_rows(section):
    """The rows of a section's table as lists of cells (escaped, as written)."""
    rows = []
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith(("| group |", "|---")):
            continue
        cells = [c.strip() for c in UNESCAPED_PIPE.split(line.strip())[1:-1]]
        if len(cells) == 7:
            rows.append(cells)
    return rows


def section(kind, results, old_rows):
    """The section of one machine kind: the run's rows replace those of the groups it checked."""
    run = "%s %s" % (results["date"], results["build"])
    checked = set(results["groups"])
    rows = [r for r in old_rows if r[0] not in checked]
    rows += [[cell(g), cell(c), cell(e), cell(m), cell(res), cell(n), cell(run)]
             for g, c, e, m, res, n in results["rows"]]
    order = {g: i for i, g in enumerate(results.get("all_groups", []))}
    rows.sort(key=lambda r: order.get(r[0], len(order)))  # stable: a group's rows keep their order
    failed = sum(1 for r in rows if r[4] != "PASS")
    run_failed = sum(1 for r in results["rows"] if r[4] != "PASS")
    text = "<!-- gpu-check %s -->\n## %s\n\n" % (kind, kind)
    text += ("Written by `scripts/gpu-check.sh`; the rows of each group come from the latest run "
             "that checked it (column *run*: UTC date and the commit of the checkout that ran "
             "it).\n\n")
    text += "Last run: %s, commit %s, `--only %s`: %d rows, %d FAIL. Software: %s.\n\n" % (
        results["date"], results["build"], ",".join(results["groups"]), len(results["rows"]),
        run_failed, results.get("software") or "not recorded")
    text += "%d rows, %d FAIL.\n\n" % (len(rows), failed)
    text += HEADER + "".join("| " + " | ".join(r) + " |\n" for r in rows)
    return text + END


def update(doc_text, results):
    kind = results["kind"]
    for m in BEGIN.finditer(doc_text):
        end = doc_text.find(END, m.end())
        if m.group(1) == kind and end >= 0:
            new = section(kind, results, parse_rows(doc_text[m.end():end]))
            return doc_text[:m.start()] + new + doc_text[end + len(END):]
    if not doc_text:
        doc_text = ("# Verified on GPUs\n\n`scripts/gpu-check.sh` runs real workloads under the "
                    "hook on a GPU machine and compares gmemhook's numbers with the frameworks' "
                    "and NVIDIA's own; it writes one section per kind of machine here.\n")
    return doc_text.rstrip("\n") + "\n\n" + section(kind, results, []) + "\n"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    doc = sys.argv[2] if len(sys.argv) == 3 else os.path.join(root, "docs", "verification.md")
    with open(os.path.join(sys.argv[1], "results.json")) as f:
        results = json.load(f)
    text = open(doc).read() if os.path.exists(doc) else ""
    with open(doc, "w") as f:
        f.write(update(text, results))
    print("verification: %s, section %r" % (doc, results["kind"]))


if __name__ == "__main__":
    main()
