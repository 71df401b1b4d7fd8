#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_exec of the sealrun custom executor: `run.sh SCRIPT STAGE`. The stages GitLab Runner uses
# to fetch sources, caches and artifacts run as its generated scripts, on this host. The job's own
# step (`step_script`, `build_script` on older runners) is NOT the job's `before_script:` and
# `script:` lines: it is `sealrun run` of the admission the job names, so only what was admitted
# runs. The other stages that carry the job's own commands (`after_script`, further `step_*`) are
# not run at all: on this host they would run uncontained. Everything of the run is copied into
# the project directory (sealrun-receipt/: receipt.json, receipt.dsse.json when signed,
# outputs.jsonl, logs/, out/, report.html, admission.json) for `artifacts:` to keep.
# sealrun's exit codes map onto GitLab's: 0 success; 5 (the job failed) and 6 (a growth guard
# stopped it) a build failure; 2, 3, 4, 7 and anything else a system failure.
set -uo pipefail
# shellcheck source=base.sh
source "$(dirname "${BASH_SOURCE[0]}")/base.sh"
script=${1:?usage: run.sh SCRIPT STAGE}
stage=${2:?usage: run.sh SCRIPT STAGE}

case $stage in
  step_script | build_script) ;;
  after_script)
    echo "sealrun executor: after_script is not run (only the admission runs)" >&2
    exit 0 ;;
  step_*) system_failure "stage $stage carries the job's own commands; only the admission runs" ;;
  *) exec bash "$script" ;;
esac

admission=${CUSTOM_ENV_SEALRUN_ADMISSION:?}
sha256=${CUSTOM_ENV_SEALRUN_ADMISSION_SHA256:?}
id=$(run_id)
stdout=$(mktemp)
trap 'rm -f "$stdout"' EXIT
sealrun_cmd run "$admission" --sha256 "$sha256" --id "$id" --state-dir "$SEALRUN_STATE_DIR" |
  tee "$stdout"
rc=${PIPESTATUS[0]}
# sealrun prints the path of the receipt it wrote as the last line of stdout (none if it wrote none).
receipt=$(tail -n 1 "$stdout")
if [[ -n ${CUSTOM_ENV_CI_PROJECT_DIR:-} ]]; then
  keep_artifacts "$receipt" "$CUSTOM_ENV_CI_PROJECT_DIR/sealrun-receipt" "$admission"
fi
case $rc in
  0) exit 0 ;;
  5 | 6)
    echo "sealrun executor: the job failed (sealrun exit $rc); see the receipt" >&2
    exit "${BUILD_FAILURE_EXIT_CODE:-1}" ;;
  *) system_failure "sealrun run refused or lost track of the job (exit $rc); see the receipt" ;;
esac
