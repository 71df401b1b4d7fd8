#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file of the project says its licence (LICENSE, Apache-2.0) in its first lines, so a
# file copied out of the repository still carries it: C and C++ files, shell and Python scripts,
# CMake files and the CI scripts. The vendored protocol files (remote/proto/pkg) keep their own
# upstream headers and are not checked.
#
# Usage: spdx_test.sh [SOURCE_DIR]. Exit 0 when every file has the line, 1 otherwise (each file
# without it is printed), 77 (CTest's skip code) when SOURCE_DIR is not a git work tree.
set -eu

root=${1:-$(dirname "$0")/../..}
# shellcheck source=tests/repo/checkout.sh
. "$(dirname "$0")/checkout.sh"
enter_checkout spdx_test "$root"

tag='SPDX-License-Identifier: Apache-2.0'
missing=$(git ls-files |
  grep -E '\.(h|cc|c|sh|py|cmake)$|(^|/)CMakeLists\.txt$|^\.ci/(setup|test|run|tidy|lib\.sh)$' |
  grep -v '^remote/proto/pkg/' |
  while IFS= read -r f; do
    # The first line, or the second after a "#!" line.
    head -n 2 -- "$f" | grep -qF "$tag" || printf '%s\n' "$f"
  done)
if [ -n "$missing" ]; then
  printf '%s\n' "$missing"
  echo "spdx_test: $(printf '%s\n' "$missing" | wc -l) file(s) lack the line '$tag'" \
    "(first line; after the #! line in a script)" >&2
  exit 1
fi
echo "spdx_test: every source file names its licence"
