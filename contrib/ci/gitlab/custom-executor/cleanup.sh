#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cleanup_exec of the sealrun custom executor: removes what a killed run of this executor's state
# directory may have left (resource groups, containers, grant records: `sealrun sweep
# --state-only`, which leaves alone what another state directory's runs left), then this job's
# build directory. Receipts
# stay in SEALRUN_CI_ROOT/state/ (results/, refusals/). GitLab Runner ignores this stage's exit
# code, so problems are reported on stderr only.
set -uo pipefail
# shellcheck source=base.sh
source "$(dirname "${BASH_SOURCE[0]}")/base.sh"
if [ -d "$SEALRUN_STATE_DIR" ]; then
  sealrun_cmd sweep --state-dir "$SEALRUN_STATE_DIR" --state-only >&2 ||
    echo "sealrun executor: sweep reported a problem (exit $?)" >&2
fi
rm -rf -- "$(job_dir)"
