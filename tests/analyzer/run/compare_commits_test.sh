#!/usr/bin/env bash
# scripts/compare-commits.sh on a throwaway repository: two commits of a script that allocates 3
# then 7 times on the simulated device must give two run directories with 6 and 14 events.
# Usage: compare_commits_test.sh SOURCE_DIR BUILD_DIR SCENARIO FAKECUDA_DIR (ctest passes them).
set -euo pipefail
ROOT=$1 BUILD=$2 SCENARIO=$3 FAKECUDA=$4
GMEMHOOK=$BUILD/bin/gmemhook
COMPARE=$ROOT/scripts/compare-commits.sh
has_subcommand() { grep -qE "^  $1( |\$)" <<<"$("$GMEMHOOK" --help 2>/dev/null)"; }
has_subcommand run || { echo "FAIL: $GMEMHOOK has no run subcommand"; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/gmemhook-compare-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() {
  echo "FAIL: $*"
  [ -f "$T/log" ] && sed 's/^/  | /' "$T/log"
  exit 1
}

git init -q "$T/repo"
cd "$T/repo"
git config user.email test@example.com
git config user.name test
mkdir sub
# One thread, N cudaMalloc/cudaFree pairs: 2N events. $SCENARIO is expanded when it runs.
# shellcheck disable=SC2016
echo 'exec "$SCENARIO" threads 1 3' >sub/work.sh
git add sub/work.sh
git commit -qm three
# shellcheck disable=SC2016
echo 'exec "$SCENARIO" threads 1 7' >sub/work.sh
git commit -qam seven
cd sub  # the command runs from the same subdirectory of each checkout

export SCENARIO LD_LIBRARY_PATH=$FAKECUDA GMEMHOOK_BUILD=$BUILD

# Usage errors.
for args in "" "HEAD" "HEAD~1 HEAD sh work.sh" "HEAD~1 HEAD --" "no-such-rev HEAD -- sh work.sh"; do
  status=0
  # shellcheck disable=SC2086  # the words are meant to split
  "$COMPARE" $args >"$T/log" 2>&1 || status=$?
  [ $status -eq 2 ] || fail "'compare-commits.sh $args' exited $status, expected 2"
  grep -q '^usage:' "$T/log" || fail "no usage text for '$args'"
done

status=0
"$COMPARE" -o "$T/out" HEAD~1 HEAD -- sh work.sh >"$T/log" 2>&1 || status=$?
[ -f "$T/out/HEAD_1/run.json" ] || fail "no run directory for HEAD~1"
[ -f "$T/out/HEAD/run.json" ] || fail "no run directory for HEAD"
events() { "$GMEMHOOK" dump "$1" | grep -c '^seq='; }
[ "$(events "$T/out/HEAD_1")" -eq 6 ] || fail "HEAD~1: $(events "$T/out/HEAD_1") events, expected 6"
[ "$(events "$T/out/HEAD")" -eq 14 ] || fail "HEAD: $(events "$T/out/HEAD") events, expected 14"
grep -q '"exit_code": 0' "$T/out/HEAD/run.json" || fail "HEAD's run.json: $(cat "$T/out/HEAD/run.json")"
[ "$(git worktree list | wc -l)" -eq 1 ] || fail "worktrees left behind: $(git worktree list)"
[ -z "$(git status --porcelain)" ] || fail "the repository was changed: $(git status --porcelain)"

if has_subcommand diff; then
  [ $status -eq 0 ] || fail "compare-commits.sh exited $status"
else
  echo "NOTE: gmemhook has no diff subcommand yet: the diff step was not checked"
  grep -q 'no diff subcommand' "$T/log" || fail "no note about the missing diff subcommand"
  [ $status -eq 0 ] || fail "compare-commits.sh exited $status"
fi

# A failing command at one revision: still both runs, exit status 1.
cd ..
echo 'exit 3' >fail.sh
git add fail.sh
git commit -qm fail
status=0
"$COMPARE" -o "$T/out2" HEAD~1 HEAD -- sh -c 'if [ -f fail.sh ]; then sh fail.sh; fi' >"$T/log" 2>&1 ||
  status=$?
[ $status -eq 1 ] || fail "a failing command: exited $status, expected 1"
for d in HEAD_1 HEAD; do [ -f "$T/out2/$d/run.json" ] || fail "no run directory for $d"; done
grep -q '"exit_code": 3' "$T/out2/HEAD/run.json" || fail "HEAD's run.json does not say 3"
echo "PASS"
