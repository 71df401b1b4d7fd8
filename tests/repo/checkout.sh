# SPDX-License-Identifier: Apache-2.0
# What the repository checks share, sourced by each (sh): enter_checkout NAME ROOT moves into ROOT
# and makes `git` work there, or exits 77 (CTest's skip code) when ROOT is not a git work tree (a
# release tarball has no file list to check). Tests run as root over a checkout that may belong to
# another user: git must not refuse it as "dubious ownership", or the check would be skipped where
# it matters.
git() { command git -c safe.directory='*' "$@"; }

enter_checkout() {
  cd "$2" || exit 1
  if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "$1: $2 is not a git work tree; nothing to check" >&2
    exit 77
  fi
}
