#!/usr/bin/env bash
# The browser checks of the html page for any run directory, e.g. a GPT-2 run brought
# back from the GPU machine: makes OUT_DIR/page.html, checks it in headless Chromium against
# `gmemhook summary|leaks --json` and leaves screenshots in OUT_DIR (scripts/check_page.py).
#   scripts/check-page.sh RUN_DIR [OUT_DIR] [--max-processes N]
# Needs build/bin/gmemhook (scripts/build.sh) and chromium (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,6p' "$0"; exit 2; }
run=$1
out=${2:-$(basename "$run").page-check}
shift $(($# < 2 ? $# : 2))
exec python3 "$here/check_page.py" --gmemhook "${GMEMHOOK:-$here/../build/bin/gmemhook}" "$@" "$run" "$out"
