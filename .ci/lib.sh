#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What .ci/setup and .ci/test share (sourced by both, as root, from the repository's top).

# install_packages LIST: installs the Debian packages named in LIST (one per line, '#' comments)
# that are not installed yet; nothing when all are.
install_packages() {
  local list=$1 p
  local -a wanted missing=()
  mapfile -t wanted < <(grep -v '^\s*#' "$list" | sed '/^\s*$/d')
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$(basename "$0"): installing ${#missing[@]} packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

# configure_build [CMAKE_ARGS...]: configures ./build. Warnings are errors here (CI and
# development), not in packagers' builds (SEALRUN_WERROR); ccache keeps a re-run cheap (so does the
# packaging test for its Release build). Callers pass SEALRUN_UNITY and SEALRUN_RUNNER explicitly:
# CMake would keep the previous run's values otherwise.
configure_build() {
  local -a launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    export CCACHE_BASEDIR="$PWD"
  fi
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEALRUN_WERROR=ON "${launcher[@]}" "$@" \
    >/dev/null
}
