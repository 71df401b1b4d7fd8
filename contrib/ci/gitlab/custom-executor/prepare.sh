#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# prepare_exec of the sealrun custom executor: checks that this job names an admission and its
# SHA-256 (job variables SEALRUN_ADMISSION and SEALRUN_ADMISSION_SHA256), that the admission's
# pins hold (`sealrun admit check` with the executor's state directory, whose digest cache
# re-verifies unchanged pinned trees by a stat walk: nothing is run), and makes the job's
# directories. Any problem is a system failure: the job's own code has not run.
set -euo pipefail
# shellcheck source=base.sh
source "$(dirname "${BASH_SOURCE[0]}")/base.sh"
admission=${CUSTOM_ENV_SEALRUN_ADMISSION:-}
sha256=${CUSTOM_ENV_SEALRUN_ADMISSION_SHA256:-}
[ -n "$admission" ] || system_failure "the job sets no SEALRUN_ADMISSION variable"
[ -n "$sha256" ] || system_failure "the job sets no SEALRUN_ADMISSION_SHA256 variable"
mkdir -p "$(job_dir)"  # the state directory is sealrun's to create (run as root)
echo "sealrun executor: $(sealrun_cmd --version); checking the admission $admission"
sealrun_cmd admit check "$admission" --sha256 "$sha256" --state-dir "$SEALRUN_STATE_DIR" ||
  system_failure "the admission $admission does not check (exit $?): nothing will run"
