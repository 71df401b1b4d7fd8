#!/bin/sh
# The repository stands alone: no tracked file may cite a document that lives outside it. The
# contract, the acceptance cases, the test bed and the house style are the project's own pages
# (docs/contract.md, docs/acceptance.md, docs/testbed.md, docs/style.md, docs/architecture.md);
# a comment or page that names an outside file instead (the upper-case names of the documents the
# project started from, or a path into the shared folder beside the checkout) fails this test,
# which prints every such line.
#
# Usage: standalone_test.sh [SOURCE_DIR]. Exit 0 clean, 1 when a citation was found, 77 (CTest's
# skip code) when SOURCE_DIR is not a git work tree (a release tarball has no file list to check).
set -eu

root=${1:-$(dirname "$0")/../..}
cd "$root"
# Tests run as root over a checkout that may belong to another user: git must not refuse it as
# "dubious ownership", or the check would be skipped where it matters.
git() { command git -c safe.directory='*' "$@"; }
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "standalone_test: $root is not a git work tree; nothing to check" >&2
  exit 77
fi

# The forbidden spellings are put together from pieces, so that this file does not contain them.
md=.md
up=..
self=tests/repo/standalone_test.sh

set -- -e "$up/shared"
for name in CONTRACT TESTBED ACCEPTANCE DESIGN STYLE; do
  set -- "$@" -e "$name$md"
done

found=$(git ls-files -z | grep -zvx "$self" | xargs -0 -r grep -nIsF "$@" -- || true)

if [ -n "$found" ]; then
  printf '%s\n' "$found"
  count=$(printf '%s\n' "$found" | wc -l)
  echo "standalone_test: $count line(s) cite a document outside the repository; point them at" \
    "docs/contract.md, docs/acceptance.md, docs/testbed.md or docs/style.md instead" >&2
  exit 1
fi
echo "standalone_test: no tracked file cites a document outside the repository"
