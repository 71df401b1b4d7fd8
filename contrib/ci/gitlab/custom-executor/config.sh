#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# config_exec of the sealrun custom executor: tells GitLab Runner where this job's build directory
# is (one per job, under SEALRUN_CI_ROOT/builds) and which driver it talks to.
set -euo pipefail
# shellcheck source=base.sh
source "$(dirname "${BASH_SOURCE[0]}")/base.sh"
version=$(sealrun_cmd --version 2>/dev/null) || system_failure "cannot run $SEALRUN --version"
dir=$(job_dir)
cat <<JSON
{
  "builds_dir": "$dir/builds",
  "cache_dir": "$dir/cache",
  "builds_dir_is_shared": false,
  "driver": {"name": "sealrun", "version": "${version#sealrun }"}
}
JSON
