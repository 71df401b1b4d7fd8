// SPDX-License-Identifier: Apache-2.0
// Reading a receipt's facts and deciding the answer: see action_result.h.
#include "remote/action_result.h"

#include <fmt/format.h>
#include <string.h>

#include "core/exit_codes.h"
#include "core/strict_json.h"
#include "fingerprint/sha256.h"

namespace sealrun::remote {

using nlohmann::json;

namespace {

std::string text(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Only a JSON `true` is true (json::value() would throw on another type).
bool flag(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_boolean() && it->get<bool>();
}

uint64_t stream_size(const json& command, const char* stream) {
  auto it = command.find(stream);
  if (it == command.end() || !it->is_object()) return 0;
  auto size = it->find("size");
  return size != it->end() && size->is_number_unsigned() ? size->get<uint64_t>() : 0;
}

std::string describe_end(const ReceiptFacts& f) {
  if (f.job_signal) return fmt::format("the job was ended by SIG{}", signal_name(f.job_signal));
  if (f.job_exit) return fmt::format("the job exited {}", *f.job_exit);
  return "the job did not run";
}

}  // namespace

std::string signal_name(int sig) {
  if (sig == 0) return "";
  const char* name = ::sigabbrev_np(sig);
  return name ? std::string(name) : fmt::format("SIG{}", sig);
}

Result<ReceiptFacts> read_receipt_facts(std::string_view bytes) {
  json doc = SEALRUN_TRY_CTX(parse_strict_json(bytes), "receipt");
  if (!doc.is_object()) return Error::make("receipt: not a JSON object");
  ReceiptFacts f;
  f.receipt_sha256 = sha256_hex(bytes);
  f.id = text(doc, "id");
  f.state = text(doc, "state");
  f.reason = text(doc, "reason");
  f.admission_sha256 = text(doc, "admission_sha256");
  if (doc.contains("exit") && doc["exit"].is_number_integer())
    f.sealrun_exit = doc["exit"].get<int>();
  f.stop_confirmed = flag(doc, "stop_confirmed");
  if (doc.contains("commands") && doc["commands"].is_array()) {
    for (const json& c : doc["commands"]) {
      if (!c.is_object() || text(c, "label") != "job") continue;
      f.job_ran = true;
      if (c.contains("exit") && c["exit"].is_number_integer()) f.job_exit = c["exit"].get<int>();
      if (c.contains("signal") && c["signal"].is_number_integer())
        f.job_signal = c["signal"].get<int>();
      f.stdout_bytes = stream_size(c, "stdout");
      f.stderr_bytes = stream_size(c, "stderr");
    }
  }
  if (doc.contains("memory") && doc["memory"].is_object()) {
    const json& m = doc["memory"];
    if (m.contains("peak_bytes") && m["peak_bytes"].is_number_unsigned())
      f.peak_bytes = m["peak_bytes"].get<uint64_t>();
  }
  if (f.id.empty() || f.state.empty()) return Error::make("receipt: no id or state");
  return f;
}

std::optional<std::string> receipt_path_from_run_json(std::string_view run_stdout) {
  auto doc = parse_strict_json(run_stdout);
  if (!doc || !doc->is_object()) return std::nullopt;
  std::string path = text(*doc, "receipt_path");
  if (path.empty() || path[0] != '/' || !path.ends_with(".json")) return std::nullopt;
  return path;
}

Decision decide(const std::optional<ReceiptFacts>& facts, int sealrun_code, int sealrun_signal,
                bool cancelled, const std::string& stderr_tail) {
  Decision d;
  if (cancelled) {
    d.answer = Answer::kCancelled;
    d.message = facts ? fmt::format("cancelled; run {} was stopped ({}): {}", facts->id,
                                    facts->stop_confirmed ? "stop confirmed" : "stop NOT confirmed",
                                    facts->reason)
                      : "cancelled before the run wrote a receipt";
    return d;
  }
  if (!facts) {
    d.message = sealrun_signal ? fmt::format("sealrun run died of SIG{} without a receipt",
                                             signal_name(sealrun_signal))
                               : fmt::format("sealrun run exited {} without a receipt: {}",
                                             sealrun_code, stderr_tail);
    return d;
  }
  const ReceiptFacts& f = *facts;
  std::string about =
      fmt::format("run {} {} (sealrun exit {}): {}", f.id, f.state, f.sealrun_exit, f.reason);
  d.message = about;
  if (f.state == "built" && f.sealrun_exit == 0) {
    d.answer = Answer::kResponse;
    d.exit_code = 0;
    return d;
  }
  if (f.state == "not_run" || !f.job_ran) {
    d.answer = f.sealrun_exit == kExitAdmissionRefused         ? Answer::kFailedPrecondition
               : f.sealrun_exit == kExitContainmentUnavailable ? Answer::kUnavailable
                                                               : Answer::kInternal;
    return d;
  }
  if (f.sealrun_exit == kExitStopUnconfirmed || !f.stop_confirmed) {
    d.answer = Answer::kInternal;
    d.message = about + " (run `sealrun sweep` on the runner's state directory)";
    return d;
  }
  // The job ran and was stopped for sure: its own end is the action's exit code, as bb_runner
  // reports it (-1 and the signal's name when a signal ended it).
  if (f.job_signal != 0) {
    d.answer = Answer::kResponse;
    d.exit_code = -1;
    d.termination_signal = signal_name(f.job_signal);
    return d;
  }
  if (f.job_exit && *f.job_exit != 0) {
    d.answer = Answer::kResponse;
    d.exit_code = *f.job_exit;
    return d;
  }
  // The job exited 0 but the run is not built (a post-run check failed, a guard tripped as it
  // ended): a zero exit code would claim a success the receipt does not.
  d.answer = Answer::kFailedPrecondition;
  d.message = about + "; " + describe_end(f);
  return d;
}

}  // namespace sealrun::remote
