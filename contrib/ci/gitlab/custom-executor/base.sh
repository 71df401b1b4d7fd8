#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Settings shared by the sealrun custom executor's stages (sourced by config.sh, prepare.sh,
# run.sh and cleanup.sh). Each can be overridden in the runner's environment
# ([[runners]] environment = [...] in config.toml).
#   SEALRUN             the sealrun executable (default: sealrun on PATH)
#   SEALRUN_SUDO        non-empty: run sealrun through `sudo -n` (the runner itself runs as an
#                       unprivileged user; sudoers allows it exactly these sealrun commands)
#   SEALRUN_CI_ROOT     where builds and sealrun's state live (default /var/lib/sealrun-ci)
#   SEALRUN_STATE_DIR   sealrun's state directory (default SEALRUN_CI_ROOT/state): every stage
#                       passes it (admit check's digest cache, run, sweep of its records only)
# GitLab passes the job's variables prefixed with CUSTOM_ENV_ (CUSTOM_ENV_CI_JOB_ID, ...), and
# the exit codes that mean "the build failed" and "the system failed" as BUILD_FAILURE_EXIT_CODE
# and SYSTEM_FAILURE_EXIT_CODE.
SEALRUN=${SEALRUN:-sealrun}
SEALRUN_CI_ROOT=${SEALRUN_CI_ROOT:-/var/lib/sealrun-ci}
# Used by the scripts that source this file.
# shellcheck disable=SC2034
SEALRUN_STATE_DIR=${SEALRUN_STATE_DIR:-$SEALRUN_CI_ROOT/state}
SEALRUN_BUILDS_DIR=$SEALRUN_CI_ROOT/builds
sealrun_cmd() {
  if [ -n "${SEALRUN_SUDO:-}" ]; then sudo -n "$SEALRUN" "$@"; else "$SEALRUN" "$@"; fi
}
# One build directory per job: nothing of one job is visible to the next.
job_dir() { echo "$SEALRUN_BUILDS_DIR/job-${CUSTOM_ENV_CI_JOB_ID:?not run by GitLab Runner}"; }
# The sealrun run id of this job.
run_id() { echo "gitlab-${CUSTOM_ENV_CI_JOB_ID:?not run by GitLab Runner}"; }
# A failure of the machinery (not of the job): GitLab shows it as a system failure.
system_failure() {
  echo "sealrun executor: $*" >&2
  exit "${SYSTEM_FAILURE_EXIT_CODE:-1}"
}
# Keeps everything of a run in DEST (emptied first) for `artifacts:`: receipt.json and
# receipt.dsse.json (when signed); for a run that executed, its results/<id>/ directory whole
# (those two, outputs.jsonl, logs/, out/); the receipt's HTML report (report.html); the admission
# (admission.json, byte for byte). A refused run's receipt is refusals/<id>/<time>-<pid>.json
# (beside earlier refusals of the id): it and its envelope are kept under the same two names.
# With these and the signer's public key an auditor runs `sealrun receipt verify --key --outputs
# --strict` and `sealrun rebuild` (docs/ci.md).
keep_artifacts() {
  local receipt=$1 dest=$2 admission=$3
  rm -rf -- "$dest"
  mkdir -p -- "$dest"
  cp -- "$admission" "$dest/admission.json" ||
    echo "sealrun executor: could not keep the admission $admission" >&2
  [[ $receipt == *.json && -f $receipt ]] || return 0
  if [[ $(basename -- "$receipt") == receipt.json ]]; then
    cp -R --preserve=mode,timestamps -- "$(dirname -- "$receipt")/." "$dest/" ||
      echo "sealrun executor: could not keep all of $(dirname -- "$receipt")" >&2
  else
    cp -- "$receipt" "$dest/receipt.json"
    if [[ -f ${receipt%.json}.dsse.json ]]; then
      cp -- "${receipt%.json}.dsse.json" "$dest/receipt.dsse.json"
    fi
  fi
  sealrun_cmd receipt report "$receipt" --html "$dest/report.html" >/dev/null ||
    echo "sealrun executor: no HTML report of $receipt (exit $?)" >&2
}
