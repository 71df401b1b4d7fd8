// What one action's run amounts to for bb_worker: the receipt's facts (read back from the bytes
// the child wrote, bounded and strictly parsed) and the decision between a RunResponse (the job ran
// and its end is the action's exit code) and an error status (nothing ran, the admission was
// refused, containment was unavailable, the stop could not be confirmed, or the runner cancelled
// the action). Pure: unit tests feed it receipt bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace sealrun::remote {

struct ReceiptFacts {
  std::string id, state, reason, admission_sha256;
  std::string receipt_sha256;                   // of the exact bytes read
  int sealrun_exit = 0;                         // the receipt's `exit` (docs/contract.md codes)
  bool job_ran = false;                         // the receipt lists the job command
  std::optional<int> job_exit;                  // the job's exit code, when it exited
  int job_signal = 0;                           // the signal that ended the job, else 0
  uint64_t stdout_bytes = 0, stderr_bytes = 0;  // the job's whole streams
  bool stop_confirmed = false;
  std::optional<uint64_t> peak_bytes;  // the resource group's memory peak
};

Result<ReceiptFacts> read_receipt_facts(std::string_view bytes);

// Where `sealrun run --json` says it wrote the receipt (its stdout: one JSON document with
// "receipt_path"; a run that executed nothing files it under refusals/, not results/<id>/).
std::optional<std::string> receipt_path_from_run_json(std::string_view run_stdout);

// How the runner answers one Run.
enum class Answer {
  kResponse,            // RunResponse with exit_code
  kInvalidArgument,     // the request itself is broken; nothing ran
  kFailedPrecondition,  // refused before running (admission), or ran but cannot be vouched for
  kUnavailable,         // containment cannot be granted here now
  kInternal,            // the run itself broke (no receipt, stop unconfirmed)
  kCancelled,           // bb_worker cancelled the call (or its deadline passed)
};

struct Decision {
  Answer answer = Answer::kInternal;
  int64_t exit_code = 0;           // kResponse: the job's exit code, -1 when a signal ended it
  std::string termination_signal;  // "KILL", "SEGV", ... (no "SIG"), when a signal ended it
  std::string message;             // for a status, and for the note appended to stderr
};

// `facts` is empty when no receipt could be read; `sealrun_status` is how `sealrun run` ended.
Decision decide(const std::optional<ReceiptFacts>& facts, int sealrun_code, int sealrun_signal,
                bool cancelled, const std::string& stderr_tail);

// "KILL" for SIGKILL; "" for 0; "SIG<n>" for a number the C library does not name.
std::string signal_name(int sig);

}  // namespace sealrun::remote
