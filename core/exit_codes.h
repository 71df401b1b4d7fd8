// SPDX-License-Identifier: Apache-2.0
// The exit codes of `sealrun run` and every other command (docs/contract.md). They are a contract
// with callers (CI scripts, the runner protocol, Slurm), so they live here once: the controller
// decides them, remote/ maps them onto the runner protocol, the tests check them.
#pragma once

namespace sealrun {

enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,                 // a command other than `run` failed (message on stderr)
  kExitUsage = 2,                   // bad command line
  kExitAdmissionRefused = 3,        // admission refused, nothing executed
  kExitContainmentUnavailable = 4,  // a required dimension cannot be enforced, nothing executed
  kExitJobFailed = 5,               // non-zero exit, signal, timeout, OOM
  kExitGuardTripped = 6,            // a growth guard tripped and the job was stopped
  kExitStopUnconfirmed = 7,         // stop or cleanup could not be confirmed
};

}  // namespace sealrun
