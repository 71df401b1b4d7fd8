// SPDX-License-Identifier: Apache-2.0
// Rendering a receipt: values → JSON, shrunk in named levels until it fits, then the digest.
//
// What may shrink is only what illustrates: stream tails, census samples, free text (argv
// elements, notes, cleanup details, limit notes, the mechanisms tried), and how many outputs are
// *listed*. What bears on the verdict is rendered whole at every level: state, exit, reason,
// every verification with its result, the grant, the memory limits and events, the guard, every
// command's exit, signal and stream digests, stop_confirmed, every cleanup action with its result,
// not_finished, and outputs_total + outputs_list_sha256, which pin the full output list however
// few outputs are listed. A job therefore cannot strip
// its own receipt by leaving junk in /out: junk only pushes other junk out of the listing.
//
// Only when even the last level does not fit (thousands of cleanup entries under a 16 KiB cap,
// say) does the last resort fold the passing entries of the verdict lists into counts, keeping
// every failing entry it can, and say so in `truncated`.
#include "controller/receipt/receipt.h"

#include <algorithm>
#include <set>

#include "controller/receipt/receipt_fields.h"
#include "controller/receipt/receipt_outputs.h"
#include "fingerprint/sha256.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

constexpr size_t kAll = static_cast<size_t>(-1);

json opt_u64(const std::optional<uint64_t>& v) { return v ? json(*v) : json(nullptr); }

// How much illustrative detail one rendering attempt keeps.
struct Detail {
  size_t tail_bytes;
  size_t samples;
  size_t outputs_bytes;  // budget for the listed outputs (compact JSON bytes); kAll: every one
  size_t text_bytes;     // cap on free text that only explains
  size_t argv_items;     // argv elements kept per command
  size_t notes;          // notes kept
};

constexpr Detail kLevels[] = {
    {kTailBytes, kMaxSamples, kAll, 4096, kAll, kAll},
    {1024, 64, 512 * 1024, 4096, 256, 64},
    {128, 16, 64 * 1024, 1024, 64, 16},
    {0, 4, 8 * 1024, 256, 16, 4},
    {0, 2, 0, 0, 4, 2},
};

// The cuts one rendering made, each said once in `truncated`.
class Cuts {
 public:
  void add(std::string what) {
    if (seen_.insert(what).second) list_.push_back(std::move(what));
  }
  std::vector<std::string> take() { return std::move(list_); }

 private:
  std::set<std::string> seen_;
  std::vector<std::string> list_;
};

class Renderer {
 public:
  Renderer(const Receipt& r, const ListedOutputs& outputs) : r_(r), outputs_(outputs) {}

  // The whole document at `d`. `summary` (the last resort) replaces the verdict lists by their
  // failing entries (at most `keep_failing` of each) and counts.
  json render(const Detail& d, bool summary = false, size_t keep_failing = kAll) {
    d_ = d;
    cuts_ = Cuts();
    json doc;
    doc[field::kSchema] = kSchema;
    doc[field::kSealrunVersion] = r_.sealrun_version;
    doc[field::kAdmission] = r_.admission;
    doc[field::kSigning] = r_.signing;
    doc[field::kRebuildOf] = r_.rebuild_of;
    doc[field::kId] = r_.id;
    doc[field::kState] = r_.state;
    doc[field::kExit] = r_.exit;
    doc[field::kReason] = r_.reason;
    doc[field::kAdmissionSha256] = r_.admission_sha256;
    doc[field::kStarted] = r_.started;
    doc[field::kFinished] = r_.finished;
    doc[field::kVerifications] = verifications(doc, summary, keep_failing);
    doc[field::kGrant] = grant();
    doc[field::kCommands] = commands(doc, summary, keep_failing);
    samples(doc);
    doc[field::kGuard] = r_.guard ? json{{"name", r_.guard->name},
                                         {"limit", r_.guard->limit},
                                         {"observed", r_.guard->observed},
                                         {"t_ms", r_.guard->t_ms}}
                                  : json(nullptr);
    doc[field::kMemory] = memory();
    doc[field::kOwnedSpace] = space(r_.owned_space);
    doc[field::kResultSpace] = space(r_.result_space);
    doc[field::kLimitsHit] = r_.limits_hit;
    doc[field::kPinCache] = r_.pin_cache;
    doc[field::kView] = r_.view;
    doc[field::kSlurm] = r_.slurm;
    doc[field::kOutputs] = list_outputs(summary ? 0 : d.outputs_bytes, cuts_);
    doc[field::kOutputsTotal] = outputs_.recorded ? json(outputs_.total) : json(nullptr);
    doc[field::kOutputsListSha256] = outputs_.recorded ? json(outputs_.list_sha256) : json(nullptr);
    doc[field::kOutputsBytes] = r_.outputs_bytes;
    doc[field::kNotFinished] = r_.not_finished;
    doc[field::kStopConfirmed] = r_.stop_confirmed;
    doc[field::kCleanup] = cleanup(doc, summary, keep_failing);
    doc[field::kNotes] = notes(summary ? 0 : d.notes);
    return doc;
  }

  std::vector<std::string> take_cuts() { return cuts_.take(); }

 private:
  std::string text(const std::string& s) {
    if (s.size() <= d_.text_bytes) return s;
    if (d_.text_bytes == 0) {
      cuts_.add(
          "free text (argv elements, notes, cleanup details, limit notes, mechanisms tried) "
          "dropped");
      return "";
    }
    cuts_.add(
        "free text (argv elements, notes, cleanup details, limit notes, mechanisms tried) "
        "cut to " +
        std::to_string(d_.text_bytes) + " bytes");
    return bounded_tail(s.substr(0, d_.text_bytes), d_.text_bytes) + "…";
  }

  // A verdict list: every entry, or (in the summary) the failing ones up to keep_failing, those
  // `always` asks for, and counts of all.
  template <typename T, typename Failed, typename Always, typename Render>
  json verdict_list(const std::vector<T>& all, bool summary, size_t keep_failing, Failed failed,
                    Always always, Render render, json& doc, std::string_view total_key,
                    std::string_view failed_key, const char* name) {
    json out = json::array();
    size_t failing = 0, listed_failing = 0;
    for (const auto& e : all) {
      bool bad = failed(e);
      failing += bad ? 1 : 0;
      if (!summary || always(e)) {
        out.push_back(render(e));
      } else if (bad && listed_failing < keep_failing) {
        ++listed_failing;
        out.push_back(render(e));
      }
    }
    if (summary) {
      doc[total_key] = all.size();
      doc[failed_key] = failing;
      cuts_.add(std::string(name) + ": only failing entries listed (" + std::string(total_key) +
                " and " + std::string(failed_key) + " count them all)");
      if (listed_failing < failing && keep_failing != kAll)
        cuts_.add(std::string(name) + ": at most " + std::to_string(keep_failing) +
                  " failing entries listed");
    }
    return out;
  }

  json verifications(json& doc, bool summary, size_t keep_failing) {
    return verdict_list(
        r_.verifications, summary, keep_failing, [](const Verification& v) { return !v.pass; },
        [](const Verification&) { return false; },
        [](const Verification& v) {
          json j{{"target", v.target},
                 {"expected", v.expected},
                 {"observed", v.observed},
                 {"result", v.pass ? "pass" : "fail"}};
          if (!v.detail.empty()) j["detail"] = v.detail;
          return j;
        },
        doc, field::kVerificationsTotal, field::kVerificationsFailed, "verifications");
  }

  json grant() {
    if (!r_.grant) return nullptr;
    const auto& g = *r_.grant;
    json tried = json::array();
    for (const auto& t : g.tried) tried.push_back(text(t));
    return {{"mechanism", g.mechanism},
            {"mode", g.mode},
            {"enforced", g.enforced},
            {"degraded", g.degraded},
            {"required", g.required},
            {"unenforced_required", g.unenforced_required},
            {"tried", tried},
            {"probe", g.probe ? json{{"cached", g.probe->cached},
                                     {"key", g.probe->key},
                                     {"note", text(g.probe->note)}}
                              : json(nullptr)},
            {"job_uid", g.job_uid >= 0 ? json(g.job_uid) : json(nullptr)},
            {"job_gid", g.job_gid >= 0 ? json(g.job_gid) : json(nullptr)},
            {"job_identity", g.job_identity}};
  }

  json stream(const StreamRecord& s) {
    if (s.tail.size() > d_.tail_bytes)
      cuts_.add("stdout/stderr tails shortened to " + std::to_string(d_.tail_bytes) + " bytes");
    if (s.cut)
      cuts_.add(
          "a job stream was read only up to its bound: its sha256 covers its last read_bytes "
          "bytes (commands[].stdout/stderr.cut)");
    return {{"sha256", s.sha256},
            {"size", s.size},
            {"read_bytes", s.read_bytes},
            {"cut", s.cut},
            {"tail", bounded_tail(s.tail, d_.tail_bytes)}};
  }

  json commands(json& doc, bool summary, size_t keep_failing) {
    auto failed = [](const CommandRecord& c) {
      return !c.exit || *c.exit != 0 || c.signal != 0 || c.timed_out;
    };
    // In the summary the job's own command stays listed, failing or not.
    auto job = [](const CommandRecord& c) { return c.label == "job"; };
    return verdict_list(
        r_.commands, summary, keep_failing, failed, job,
        [&](const CommandRecord& c) {
          json argv = json::array();
          size_t n = std::min(c.argv.size(), d_.argv_items);
          for (size_t i = 0; i < n; ++i) argv.push_back(text(c.argv[i]));
          if (n < c.argv.size())
            cuts_.add("argv: at most " + std::to_string(d_.argv_items) + " elements listed");
          return json{{"label", c.label},
                      {"argv", argv},
                      {"exit", c.exit ? json(*c.exit) : json(nullptr)},
                      {"signal", c.signal},
                      {"timed_out", c.timed_out},
                      {"started", c.started},
                      {"finished", c.finished},
                      {"stdout", stream(c.stdout_record)},
                      {"stderr", stream(c.stderr_record)}};
        },
        doc, field::kCommandsTotal, field::kCommandsFailed, "commands");
  }

  void samples(json& doc) {
    std::vector<Sample> kept = r_.samples;
    uint64_t thinned = census::decimate_samples(kept, d_.samples);
    if (thinned > 0)
      cuts_.add("samples thinned to " + std::to_string(d_.samples) + " (first, last, peak kept)");
    json list = json::array();
    for (const auto& s : kept) {
      json item = {{"t_ms", s.t_ms},
                   {"owned_bytes", s.owned_bytes},
                   {"result_bytes", s.result_bytes},
                   {"free_bytes", s.free_bytes}};
      if (s.memory_bytes) item["memory_bytes"] = *s.memory_bytes;
      list.push_back(std::move(item));
    }
    doc[field::kSamples] = list;
    doc[field::kSamplesDropped] = r_.samples_dropped + thinned;
  }

  json space(const std::optional<OwnedSpaceRecord>& record) {
    if (!record) return nullptr;
    const auto& o = *record;
    json j = {{"kind", o.kind}, {"size_bytes", o.size_bytes}, {"inodes", o.inodes}};
    if (!o.why_not.empty()) j["why_not"] = text(o.why_not);
    if (!o.made.empty()) j["made"] = text(o.made);
    return j;
  }

  json memory() {
    if (!r_.memory) return nullptr;
    const auto& m = *r_.memory;
    json limits = json::array();
    for (const auto& l : m.limits)
      limits.push_back({{"name", l.name},
                        {"requested", l.requested},
                        {"observed", opt_u64(l.observed)},
                        {"applied", l.applied},
                        {"note", text(l.note)},
                        {"effective", opt_u64(l.effective)},
                        {"effective_set_by", l.effective_set_by}});
    return {{"backend", m.backend},
            {"limits", limits},
            {"peak_bytes", opt_u64(m.peak_bytes)},
            {"swap_used_bytes", opt_u64(m.swap_used_bytes)},
            {"events",
             {{"high", m.events_high},
              {"max", m.events_max},
              {"oom", m.events_oom},
              {"oom_kill", m.events_oom_kill}}}};
  }

  json list_outputs(size_t budget, Cuts& cuts) {
    std::vector<size_t> chosen = outputs_.select(budget);
    json list = json::array();
    for (size_t i : chosen) list.push_back(outputs_.items[i]);
    if (chosen.size() < outputs_.items.size())
      cuts.add("outputs: " + std::to_string(chosen.size()) + " of " +
               std::to_string(outputs_.items.size()) +
               " listed, regular files first (outputs.jsonl holds them all; outputs_total and "
               "outputs_list_sha256 pin it)");
    return list;
  }

  json cleanup(json& doc, bool summary, size_t keep_failing) {
    return verdict_list(
        r_.cleanup, summary, keep_failing, [](const CleanupAction& c) { return !c.ok; },
        [](const CleanupAction&) { return false; },
        [&](const CleanupAction& c) {
          return json{
              {"action", c.action}, {"result", c.ok ? "ok" : "failed"}, {"detail", text(c.detail)}};
        },
        doc, field::kCleanupTotal, field::kCleanupFailed, "cleanup");
  }

  json notes(size_t max) {
    json out = json::array();
    for (size_t i = 0; i < r_.notes.size() && i < max; ++i) out.push_back(text(r_.notes[i]));
    if (max < r_.notes.size())
      cuts_.add("notes: " + std::to_string(max) + " of " + std::to_string(r_.notes.size()) +
                " kept");
    return out;
  }

  const Receipt& r_;
  const ListedOutputs& outputs_;
  Detail d_{};
  Cuts cuts_;
};

// The bytes of `doc`: indented for people when that fits `max_bytes`, else compact (the digest
// covers the canonical compact form either way, so both spellings verify alike).
std::string finish(json doc, const std::vector<std::string>& truncated, size_t max_bytes) {
  doc[field::kTruncated] = truncated;
  doc[field::kDigest] = {{"algorithm", "sha256"}, {"value", sha256_hex(digest_payload(doc))}};
  std::string pretty = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (pretty.size() <= max_bytes) return pretty;
  return doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// The last resort: every verdict-bearing value still present, the verdict lists folded into
// counts with their failing entries, halving those until the receipt fits.
std::string last_resort(const Receipt& r, Renderer& renderer, size_t max_bytes) {
  const Detail& last = kLevels[std::size(kLevels) - 1];
  std::string bytes;
  for (size_t keep = kAll;; keep = keep == kAll ? 64 : keep / 2) {
    json doc = renderer.render(last, /*summary=*/true, keep);
    std::vector<std::string> cuts = renderer.take_cuts();
    cuts.insert(cuts.begin(), "the receipt exceeded " + std::to_string(max_bytes) +
                                  " bytes with every detail shed: passing entries are counted, "
                                  "not listed");
    if (keep == 0 && r.reason.size() > 1024) {
      // Nothing else is left to give up; a reason this long is not one a person reads whole.
      doc[field::kReason] = bounded_tail(r.reason.substr(0, 1024), 1024) + "…";
      cuts.push_back("reason cut to 1024 bytes");
    }
    bytes = finish(std::move(doc), cuts, max_bytes);
    if (bytes.size() <= max_bytes || keep == 0) return bytes;
  }
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
  // Invalid sequences are replaced when dumped (error_handler_t::replace).
  return std::string(bytes.substr(start));
}

json view_json(const std::vector<ViewEntry>& view) {
  json out = json::array();
  for (const ViewEntry& e : view) {
    json j = {{"job_path", e.job_path},
              {"kind", std::string(view_kind_name(e.kind))},
              {"host_path", e.host_path.empty() ? json(nullptr) : json(e.host_path)},
              {"pin", e.pin.empty() ? json(nullptr) : json(e.pin)},
              {"writable", e.writable}};
    if (e.kind == ViewKind::kLink) j["target"] = e.link_target;
    if (!e.served.empty()) j["served"] = e.served;
    out.push_back(std::move(j));
  }
  return out;
}

std::string render_receipt(const Receipt& r, size_t max_bytes) {
  max_bytes = std::max(max_bytes, kMinReceiptBytes);
  ListedOutputs outputs(r);
  Renderer renderer(r, outputs);
  for (const auto& level : kLevels) {
    json doc = renderer.render(level);
    std::string bytes = finish(std::move(doc), renderer.take_cuts(), max_bytes);
    if (bytes.size() <= max_bytes) return bytes;
  }
  return last_resort(r, renderer, max_bytes);
}

}  // namespace sealrun::receipt
