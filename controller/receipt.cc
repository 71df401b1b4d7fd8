// Rendering a receipt: values → JSON, shrinking in named steps until it fits, then the digest.
// The shrinking order keeps what an auditor needs most (the verdict, the stop, the cleanup, the
// verifications and the command list) and gives up first what is only illustrative (output tails,
// then census samples, then per-output detail).
#include "controller/receipt.h"

#include <algorithm>

#include "controller/receipt_fields.h"
#include "fingerprint/sha256.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

json stream_json(const StreamRecord& s, size_t tail_bytes) {
  return {{"sha256", s.sha256}, {"size", s.size}, {"tail", bounded_tail(s.tail, tail_bytes)}};
}

json opt_u64(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }

// How much detail one rendering attempt keeps.
struct Detail {
  size_t tail_bytes;
  size_t samples;
  size_t outputs;       // per-output records kept (the rest summarised)
  size_t string_bytes;  // cap on free-text fields (reason, observed, argv elements)
  const char* cut;      // what this level gave up, for `truncated`
};

constexpr Detail kLevels[] = {
    {kTailBytes, kMaxSamples, 100000, 4096, nullptr},
    {1024, 64, 100000, 4096, "stdout/stderr tails shortened to 1024 bytes; samples thinned to 64"},
    {128, 16, 1000, 1024,
     "tails shortened to 128 bytes; samples thinned to 16; outputs listed up to 1000"},
    {0, 4, 100, 256,
     "tails dropped; samples thinned to 4; outputs listed up to 100; long strings cut to 256 "
     "bytes"},
    {0, 2, 10, 64,
     "tails dropped; samples thinned to 2; outputs listed up to 10; long strings cut to 64 bytes"},
};

std::string cut(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  return bounded_tail(s.substr(0, max), max) + "…";
}

json to_json(const Receipt& r, const Detail& d, std::vector<std::string> truncated) {
  json doc;
  doc[field::kSchema] = kSchema;
  doc[field::kSealrunVersion] = r.sealrun_version;
  doc[field::kAdmission] = r.admission;
  doc[field::kSigning] = r.signing;
  doc[field::kId] = r.id;
  doc[field::kState] = r.state;
  doc[field::kExit] = r.exit;
  doc[field::kReason] = cut(r.reason, d.string_bytes);
  doc[field::kAdmissionSha256] = r.admission_sha256;
  doc[field::kStarted] = r.started;
  doc[field::kFinished] = r.finished;

  json verifications = json::array();
  for (const auto& v : r.verifications)
    verifications.push_back({{"target", cut(v.target, d.string_bytes)},
                             {"expected", cut(v.expected, d.string_bytes)},
                             {"observed", cut(v.observed, d.string_bytes)},
                             {"result", v.pass ? "pass" : "fail"}});
  doc[field::kVerifications] = verifications;

  if (r.grant) {
    doc[field::kGrant] = {
        {"mechanism", r.grant->mechanism}, {"mode", r.grant->mode},
        {"enforced", r.grant->enforced},   {"degraded", r.grant->degraded},
        {"required", r.grant->required},   {"unenforced_required", r.grant->unenforced_required},
        {"tried", r.grant->tried}};
  } else {
    doc[field::kGrant] = nullptr;
  }

  json commands = json::array();
  for (const auto& c : r.commands) {
    json argv = json::array();
    for (const auto& a : c.argv) argv.push_back(cut(a, d.string_bytes));
    commands.push_back({{"label", c.label},
                        {"argv", argv},
                        {"exit", c.exit ? json(*c.exit) : json(nullptr)},
                        {"signal", c.signal},
                        {"timed_out", c.timed_out},
                        {"started", c.started},
                        {"finished", c.finished},
                        {"stdout", stream_json(c.stdout_record, d.tail_bytes)},
                        {"stderr", stream_json(c.stderr_record, d.tail_bytes)}});
  }
  doc[field::kCommands] = commands;

  std::vector<Sample> samples = r.samples;
  uint64_t dropped = r.samples_dropped + census::decimate_samples(samples, d.samples);
  json sample_list = json::array();
  for (const auto& s : samples)
    sample_list.push_back({{"t_ms", s.t_ms},
                           {"owned_bytes", s.owned_bytes},
                           {"result_bytes", s.result_bytes},
                           {"free_bytes", s.free_bytes}});
  doc[field::kSamples] = sample_list;
  doc[field::kSamplesDropped] = dropped;

  doc[field::kGuard] = r.guard ? json{{"name", r.guard->name},
                                {"limit", r.guard->limit},
                                {"observed", r.guard->observed},
                                {"t_ms", r.guard->t_ms}}
                         : json(nullptr);

  if (r.memory) {
    json limits = json::array();
    for (const auto& l : r.memory->limits)
      limits.push_back({{"name", l.name},
                        {"requested", l.requested},
                        {"observed", opt_u64(l.observed)},
                        {"applied", l.applied},
                        {"note", cut(l.note, d.string_bytes)},
                        {"effective", opt_u64(l.effective)},
                        {"effective_set_by", l.effective_set_by}});
    doc[field::kMemory] = {{"backend", r.memory->backend},
                     {"limits", limits},
                     {"peak_bytes", opt_u64(r.memory->peak_bytes)},
                     {"swap_used_bytes", opt_u64(r.memory->swap_used_bytes)},
                     {"events",
                      {{"high", r.memory->events_high},
                       {"max", r.memory->events_max},
                       {"oom", r.memory->events_oom},
                       {"oom_kill", r.memory->events_oom_kill}}}};
  } else {
    doc[field::kMemory] = nullptr;
  }

  json outputs = json::array();
  size_t kept = std::min(d.outputs, r.outputs.size());
  for (size_t i = 0; i < kept; ++i)
    outputs.push_back({{"path", cut(r.outputs[i].path, d.string_bytes)},
                       {"size", r.outputs[i].size},
                       {"sha256", r.outputs[i].sha256}});
  doc[field::kOutputs] = outputs;
  if (kept < r.outputs.size()) {
    // The full list is still pinned: its digest over "path\0size\0sha256\n" lines.
    Sha256 all;
    for (const auto& o : r.outputs)
      all.update(o.path + '\0' + std::to_string(o.size) + '\0' + o.sha256 + '\n');
    doc[field::kOutputsTotal] = r.outputs.size();
    doc[field::kOutputsListSha256] = all.finish_hex();
    truncated.push_back("outputs: " + std::to_string(r.outputs.size() - kept) + " of " +
                        std::to_string(r.outputs.size()) + " not listed (see outputs_list_sha256)");
  }

  doc[field::kStopConfirmed] = r.stop_confirmed;
  json cleanup = json::array();
  for (const auto& c : r.cleanup)
    cleanup.push_back({{"action", cut(c.action, d.string_bytes)},
                       {"result", c.ok ? "ok" : "failed"},
                       {"detail", cut(c.detail, d.string_bytes)}});
  doc[field::kCleanup] = cleanup;
  json notes = json::array();
  for (const auto& n : r.notes) notes.push_back(cut(n, d.string_bytes));
  doc[field::kNotes] = notes;
  if (d.cut != nullptr) truncated.emplace_back(d.cut);
  doc[field::kTruncated] = truncated;
  return doc;
}

std::string finish(json doc) {
  doc[field::kDigest] = {{"algorithm", "sha256"}, {"value", sha256_hex(digest_payload(doc))}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string digest_payload(const nlohmann::json& doc) {
  json copy = doc;
  if (copy.is_object()) copy.erase("digest");
  return copy.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string bounded_tail(std::string_view bytes, size_t max) {
  if (bytes.size() > max) bytes = bytes.substr(bytes.size() - max);
  // Skip UTF-8 continuation bytes at the cut so the tail starts on a character boundary.
  size_t start = 0;
  while (start < bytes.size() && start < 3 &&
         (static_cast<unsigned char>(bytes[start]) & 0xC0) == 0x80)
    ++start;
  std::string out(bytes.substr(start));
  // Invalid sequences are replaced when dumped (error_handler_t::replace).
  return out;
}

std::string render_receipt(const Receipt& r, size_t max_bytes) {
  max_bytes = std::max(max_bytes, kMinReceiptBytes);
  for (const auto& level : kLevels) {
    std::string bytes = finish(to_json(r, level, {}));
    if (bytes.size() <= max_bytes) return bytes;
  }
  // Last resort: the verdict, the job command in brief and the cleanup summary. Every field the
  // contract names is present; what was left out is counted.
  Receipt minimal;
  minimal.id = r.id.substr(0, 64);
  minimal.state = r.state;
  minimal.exit = r.exit;
  minimal.reason = r.reason;
  minimal.admission_sha256 = r.admission_sha256;
  minimal.started = r.started;
  minimal.finished = r.finished;
  minimal.stop_confirmed = r.stop_confirmed;
  minimal.notes.resize(std::min<size_t>(r.notes.size(), 4));
  std::copy_n(r.notes.begin(), minimal.notes.size(), minimal.notes.begin());
  uint64_t failed_commands = 0;
  for (const auto& c : r.commands) {
    bool failed = !c.exit || *c.exit != 0 || c.signal != 0 || c.timed_out;
    failed_commands += failed ? 1 : 0;
    if (minimal.commands.size() < 4 && (c.label == "job" || failed)) {
      CommandRecord brief = c;
      brief.argv.resize(std::min<size_t>(brief.argv.size(), 1));
      brief.stdout_record.tail.clear();
      brief.stderr_record.tail.clear();
      minimal.commands.push_back(brief);
    }
  }
  bool cleanup_ok =
      std::all_of(r.cleanup.begin(), r.cleanup.end(), [](const CleanupAction& c) { return c.ok; });
  minimal.cleanup.push_back(
      {"cleanup summary (" + std::to_string(r.cleanup.size()) + " actions)", cleanup_ok, ""});
  minimal.samples_dropped = r.samples_dropped + r.samples.size();
  Detail last = kLevels[std::size(kLevels) - 1];
  last.cut = nullptr;
  json doc = to_json(minimal, last,
                     {"everything but the verdict, the job command and the cleanup summary: the "
                      "full receipt exceeded " +
                      std::to_string(max_bytes) + " bytes"});
  doc[field::kCommandsTotal] = r.commands.size();
  doc[field::kCommandsFailed] = failed_commands;
  doc[field::kVerificationsFailed] = std::count_if(r.verifications.begin(), r.verifications.end(),
                                              [](const Verification& v) { return !v.pass; });
  return finish(doc);
}

}  // namespace sealrun::receipt
