#!/usr/bin/env bash
# "Did my change grow GPU memory?": runs one command at two revisions of the git repository you
# are in, each under `gmemhook run`, then compares the runs with `gmemhook diff` (docs/run.md).
set -euo pipefail

usage() {
  cat >&2 <<'USAGE'
usage: scripts/compare-commits.sh [-o OUT] REV_A REV_B -- CMD [ARGS...]

Checks out REV_A and REV_B of the repository around the current directory (a git worktree, one
at a time, at the same path so both runs name the same files), runs CMD in it from the same
subdirectory under `gmemhook run -o OUT/<rev>`, then runs `gmemhook diff OUT/<A> OUT/<B>`.
CMD sees a clean checkout: untracked files (data, build outputs) are not there; build inside CMD
(sh -c 'make && ./prog') or name them by absolute path.

  -o OUT   where the two run directories go (new or empty);
           default ./gmemhook-compare.<YYYYMMDD-HHMMSS>
The gmemhook used is this checkout's build ($GMEMHOOK_BUILD, default build/), built first by
scripts/build.sh if it is missing.
Exit status: 2 usage; 1 when CMD failed at either revision; else that of gmemhook diff.
USAGE
  exit "${1:-2}"
}

OUT=
while [ $# -gt 0 ]; do
  case $1 in
    -o) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    -*) echo "compare-commits: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
if [ $# -lt 4 ] || [ "$3" != "--" ]; then usage; fi
REV_A=$1
REV_B=$2
shift 3

# The repository under test is the caller's, which may or may not be gmemhook's own.
REPO=$(git rev-parse --show-toplevel 2>/dev/null) || {
  echo "compare-commits: $PWD is not inside a git repository" >&2
  usage
}
SUBDIR=$(git rev-parse --show-prefix)
SHA_A=$(git rev-parse --verify --quiet "$REV_A^{commit}") || {
  echo "compare-commits: unknown revision $REV_A" >&2
  usage
}
SHA_B=$(git rev-parse --verify --quiet "$REV_B^{commit}") || {
  echo "compare-commits: unknown revision $REV_B" >&2
  usage
}

# gmemhook itself comes from this checkout's build.
GMEMHOOK_ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${GMEMHOOK_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$GMEMHOOK_ROOT/$BUILD ;; esac
GMEMHOOK=$BUILD/bin/gmemhook
if [ ! -x "$GMEMHOOK" ]; then
  echo "== $GMEMHOOK is missing: building it (scripts/build.sh)" >&2
  "$GMEMHOOK_ROOT/scripts/build.sh" >&2
fi
# `gmemhook NAME --help` succeeds even without NAME (the top-level --help answers): read the list.
has_subcommand() { grep -qE "^  $1( |\$)" <<<"$("$GMEMHOOK" --help 2>/dev/null)"; }
if ! has_subcommand run; then
  echo "compare-commits: $GMEMHOOK has no run subcommand; rebuild it (scripts/build.sh)" >&2
  exit 2
fi

OUT=${OUT:-$PWD/gmemhook-compare.$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
if [ -n "$(ls -A "$OUT")" ]; then
  echo "compare-commits: $OUT is not empty" >&2
  exit 2
fi

# Run directory names: the revisions as typed, made safe for a file name.
label() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_'; }
LABEL_A=$(label "$REV_A")
LABEL_B=$(label "$REV_B")
if [ "$LABEL_A" = "$LABEL_B" ]; then
  LABEL_A=$LABEL_A.a
  LABEL_B=$LABEL_B.b
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gmemhook-compare.XXXXXX")
TREE=$WORK/src
remove_tree() {
  if [ -d "$TREE" ]; then
    git -C "$REPO" worktree remove --force "$TREE" >/dev/null 2>&1 || rm -rf "$TREE"
  fi
  git -C "$REPO" worktree prune >/dev/null 2>&1 || true
}
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  remove_tree
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs CMD at one revision; prints nothing on stdout; returns CMD's status.
run_at() {
  local sha=$1 run_dir=$2
  shift 2
  git -C "$REPO" worktree add --detach --quiet "$TREE" "$sha" || return 2
  if [ ! -d "$TREE/$SUBDIR" ]; then
    echo "compare-commits: $SUBDIR does not exist at $sha" >&2
    remove_tree
    return 2
  fi
  local status=0
  (cd "$TREE/$SUBDIR" && "$GMEMHOOK" run -o "$run_dir" -- "$@") || status=$?
  remove_tree
  return $status
}

FAILED=0
for side in A B; do
  if [ $side = A ]; then
    rev=$REV_A sha=$SHA_A dir=$OUT/$LABEL_A
  else
    rev=$REV_B sha=$SHA_B dir=$OUT/$LABEL_B
  fi
  echo "== $rev ($(git rev-parse --short "$sha")): $* (run directory $dir)" >&2
  status=0
  run_at "$sha" "$dir" "$@" || status=$?
  if [ $status -ne 0 ]; then
    echo "compare-commits: the command exited with status $status at $rev" >&2
    FAILED=1
  fi
done

echo "== runs: $OUT/$LABEL_A $OUT/$LABEL_B" >&2
DIFF_STATUS=0
if has_subcommand diff; then
  "$GMEMHOOK" diff "$OUT/$LABEL_A" "$OUT/$LABEL_B" || DIFF_STATUS=$?
else
  echo "note: this gmemhook has no diff subcommand yet; compare the two runs with" >&2
  echo "  $GMEMHOOK summary $OUT/$LABEL_A" >&2
  echo "  $GMEMHOOK summary $OUT/$LABEL_B" >&2
fi
[ $FAILED -eq 0 ] || exit 1
exit $DIFF_STATUS
