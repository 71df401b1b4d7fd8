// SPDX-License-Identifier: Apache-2.0
// `sealrun rebuild RECEIPT --admission ADM [--vary LIST] [--id ID] [--json] [--explain]`: runs a
// receipt's admission again through the same pipeline as `sealrun run` (a new id, its own receipt
// naming the one it rebuilt), optionally in a varied world (variations.h), and compares the two
// runs' outputs by path and digest (output_compare.h): exit 0 identical, 1 different. Nothing
// runs unless the receipt is intact, its run executed and recorded its outputs, and the admission
// is the one it records (else exit 3). A rebuild that fails exits as `run` would (docs/rebuild.md).
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "attest/openssl_util.h"
#include "controller/cli/cli_name_list.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/common/display_text.h"
#include "controller/common/host_config.h"
#include "controller/common/state_dir.h"
#include "controller/rebuild/rebuild_causes.h"
#include "controller/rebuild/rebuild_explain.h"
#include "controller/receipt/output_compare.h"
#include "controller/receipt/receipt.h"
#include "controller/run/run_console.h"
#include "controller/run/run_pipeline.h"
#include "controller/run/run_plan.h"
#include "controller/run/variations.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/strict_json.h"
#include "fingerprint/file_hash.h"

namespace sealrun::cli {

using nlohmann::json;

namespace {

constexpr size_t kMaxReceiptBytes = 1024 * 1024;    // receipts are bounded to 1 MiB
constexpr size_t kMaxAdmissionBytes = 1024 * 1024;  // as `run` reads admissions

struct RebuildOptions {
  std::string receipt_path, admission_path, vary, id, mechanism = "auto", state_dir;
  bool json = false, explain = false, quiet = false;
};

// What a rebuild knows about the receipt it rebuilds, once it has proven it usable.
// The NOLINT: the implicit default constructor inherits nlohmann::json's, which is noexcept but
// delegates to the constructor of any value type (one that allocates, for arrays and objects);
// for null it cannot throw, and the json header carries the same NOLINT on it.
struct Original {  // NOLINT(bugprone-exception-escape)
  json doc;
  std::string sha256;  // of the receipt's exact bytes
  std::vector<json> outputs;
};

// STATE for a receipt at STATE/results/<id>/receipt.json (where the rebuild goes by default, so
// it lands beside the run it rebuilds), else sealrun-state.
std::string default_state_dir(const std::string& receipt_path) {
  std::string p = receipt_path;
  for (int i = 0; i < 2; ++i) {
    size_t slash = p.rfind('/');
    if (slash == std::string::npos) return "sealrun-state";
    p.resize(slash);
  }
  size_t slash = p.rfind('/');
  std::string last = slash == std::string::npos ? p : p.substr(slash + 1);
  if (last != "results") return "sealrun-state";
  return slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
}

// results/<id> for results/<id>/receipt.json.
std::string dir_of_receipt(const std::string& receipt_path) {
  size_t slash = receipt_path.rfind('/');
  return slash == std::string::npos ? "." : receipt_path.substr(0, slash);
}

// The receipt to rebuild: read bounded, intact (its digest and consistency verify), of a run
// that executed and whose complete output list is still there, unaltered.
Result<Original> load_original(const std::string& path) {
  std::string bytes =
      SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, path, kMaxReceiptBytes), "read receipt");
  Original o;
  o.doc = SEALRUN_TRY_CTX(parse_strict_json(bytes), path + " is not a readable receipt");
  o.sha256 = attest::sha256_hex_of(bytes);
  if (o.doc.is_object() && o.doc.value("state", json()) == "not_run")
    return Error::make(fmt::format(
        "{} is the receipt of a run that never executed (state not_run: {}); there are no "
        "outputs to rebuild against — run the admission with `sealrun run` first",
        path, display::escape(receipt::member_text(o.doc, "reason"))));
  auto findings = SEALRUN_TRY_CTX(receipt::verify_receipt_bytes(bytes), path);
  for (const auto& f : findings)
    if (!f.pass)
      return Error::make(
          fmt::format("{} does not verify ({}: {}); `sealrun receipt verify` says "
                      "more",
                      path, f.check, f.detail));
  o.outputs = SEALRUN_TRY(receipt::load_output_list(path, o.doc));
  return o;
}

// The admission must be the receipt's, byte for byte.
Status check_admission(const std::string& path, const Original& original,
                       const std::string& receipt_path, std::string* sha256) {
  std::string bytes =
      SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, path, kMaxAdmissionBytes), "--admission");
  *sha256 = attest::sha256_hex_of(bytes);
  std::string recorded = receipt::member_text(original.doc, "admission_sha256");
  if (*sha256 != recorded)
    return Error::make(fmt::format(
        "the admission {} has sha256 {}, but the receipt {} records admission_sha256 {}: they do "
        "not belong together; give the admission that run used",
        path, *sha256, receipt_path, recorded));
  return ok_status();
}

// num_cpus: this controller (and so everything it starts, the job included) keeps half of the
// CPUs it had when first asked, at least one; `narrow` false gives them all back (--explain's
// rebuilds without num_cpus). Returns how many it kept, 0 when there was only one.
unsigned narrow_cpus(bool narrow = true) {
  static cpu_set_t set;
  static bool saved = ::sched_getaffinity(0, sizeof set, &set) == 0;
  if (!saved) return 0;
  if (!narrow) {
    (void)::sched_setaffinity(0, sizeof set, &set);
    return 0;
  }
  unsigned have = static_cast<unsigned>(CPU_COUNT(&set));
  if (have < 2) return 0;
  unsigned keep = have / 2;
  cpu_set_t narrowed;
  CPU_ZERO(&narrowed);
  unsigned kept = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && kept < keep; ++cpu)
    if (CPU_ISSET(cpu, &set)) {
      CPU_SET(cpu, &narrowed);
      ++kept;
    }
  return ::sched_setaffinity(0, sizeof narrowed, &narrowed) == 0 ? kept : 0;
}

// time: the SHA-256 of the host's libfaketime, the pin the job's view binds it by; empty when it
// is not installed (the variation then says so).
std::string faketime_sha256() {
  auto d = hash_file(std::string(run::kFaketimeHostPath));
  return d ? d->sha256 : std::string();
}

uint32_t current_umask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return static_cast<uint32_t>(m);
}

// A rebuild's own output list, through the same check as the original's.
Result<std::vector<json>> rebuilt_outputs(const std::string& receipt_path) {
  auto bytes = SEALRUN_TRY(read_bounded_file(AT_FDCWD, receipt_path, kMaxReceiptBytes));
  auto doc = SEALRUN_TRY(parse_strict_json(bytes));
  return receipt::load_output_list(receipt_path, doc);
}

// --explain: the rebuilds of the search for causes (rebuild_causes.h), each a rebuild of its own
// (id ID-cN, its own receipt) under some of the variations, compared with the original.
run::RebuildUnder cause_rebuilds(const run::RunRequest& base, const Original& original) {
  auto n = std::make_shared<int>(0);
  return [base, &original, n](const std::vector<std::string>& names) -> Result<run::CauseProbe> {
    std::string list;
    for (const auto& v : names) list += (list.empty() ? "" : ",") + v;
    run::RunRequest req = base;
    req.vary = SEALRUN_TRY(run::parse_variations(list));
    req.vary.base_umask = base.vary.base_umask;
    req.vary.cpus_used = narrow_cpus(req.vary.num_cpus);
    req.vary.faketime_sha256 = base.vary.faketime_sha256;  // found once, for the whole set
    std::string suffix = fmt::format("-c{}", ++*n);
    req.id = base.id.substr(0, 64 - suffix.size()) + suffix;
    req.rebuild_of["variations"] = run::describe_variations(req.vary);
    fmt::print(stderr, "rebuild: explain: rebuilding as {} under {}\n", req.id,
               list.empty() ? "no variation" : list);
    run::RunOutcome o = run::run_pipeline(req, run::default_pipeline_deps(mechanism_context()));
    run::CauseProbe p;
    p.id = req.id;
    if (o.exit_code != kExitOk) {
      p.differs = true;
      p.note = fmt::format("did not build (exit {}): {}", o.exit_code, o.receipt.reason);
      return p;
    }
    auto outputs = SEALRUN_TRY_CTX(rebuilt_outputs(o.receipt_path), "the rebuild " + req.id);
    p.differs = !receipt::compare_outputs(original.outputs, outputs).empty();
    return p;
  };
}

void rebuild(const RebuildOptions& opt, int* exit_code) {
  json report = {{"receipt", opt.receipt_path}, {"admission", opt.admission_path}};
  auto finish = [&](int code, const std::string& error) {
    *exit_code = code;
    if (!error.empty()) print_error("rebuild", error);
    if (opt.json) {
      report["exit"] = code;
      report["error"] = error.empty() ? json(nullptr) : json(error);
      print_json(report);
    }
  };

  auto original = load_original(opt.receipt_path);
  if (!original) return finish(kExitAdmissionRefused, original.error().message());
  std::string admission_sha256;
  if (auto st = check_admission(opt.admission_path, *original, opt.receipt_path, &admission_sha256);
      !st)
    return finish(kExitAdmissionRefused, st.error().message());
  auto vary = run::parse_variations(opt.vary);
  if (!vary) return finish(kExitUsage, vary.error().message());

  run::RunRequest req;
  req.admission_path = opt.admission_path;
  req.sha256 = admission_sha256;
  req.id = opt.id.empty() ? run::generated_run_id("rebuild") : opt.id;
  req.mechanism = parse_mechanism_kind(opt.mechanism);
  req.state_dir = opt.state_dir.empty() ? default_state_dir(opt.receipt_path) : opt.state_dir;
  req.vary = *vary;
  req.vary.base_umask = current_umask();
  if (req.vary.num_cpus) req.vary.cpus_used = narrow_cpus();
  if (req.vary.time) req.vary.faketime_sha256 = faketime_sha256();
  req.rebuild_of = {{"receipt_sha256", original->sha256},
                    {"id", receipt::member_text(original->doc, "id")},
                    {"variations", run::describe_variations(req.vary)}};
  report["id"] = req.id;
  report["rebuild_of"] = req.rebuild_of;
  // As `run` does: every temporary goes where `sealrun sweep` finds it.
  if (auto temp = run::controller_temp_dir(run::state_dir_path(req.state_dir)); temp)
    ::setenv("TMPDIR", temp->c_str(), 1);
  // Shown as `run` shows it: the job's lines, progress, the summary (run_console.h).
  run::RunOutcome o = run::run_with_console(req, run::default_pipeline_deps(mechanism_context()),
                                            {"rebuild", opt.quiet, opt.json});
  report["state"] = o.receipt.state;
  report["reason"] = o.receipt.reason;
  report["receipt_path"] = o.receipt_path.empty() ? json(nullptr) : json(o.receipt_path);
  if (o.exit_code != kExitOk) {
    std::string why =
        fmt::format("the rebuild {} did not build (exit {}): {}{}", req.id, o.exit_code,
                    o.receipt.reason, o.message.empty() ? "" : "; " + o.message);
    if (!opt.json && !o.receipt_path.empty()) fmt::print("{}\n", o.receipt_path);
    return finish(o.exit_code, why);
  }

  auto rebuilt = rebuilt_outputs(o.receipt_path);
  if (!rebuilt)
    return finish(kExitStopUnconfirmed,
                  "the rebuild's own output list cannot be read: " + rebuilt.error().message());

  auto changes = receipt::compare_outputs(original->outputs, *rebuilt);
  json items = json::array();
  for (const auto& c : changes) items.push_back(receipt::change_json(c));
  report["identical"] = changes.empty();
  report["outputs"] = {{"original", original->outputs.size()}, {"rebuilt", rebuilt->size()}};
  report["differences"] = items;
  std::string original_root = dir_of_receipt(opt.receipt_path);
  std::string rebuilt_root = dir_of_receipt(o.receipt_path);
  if (opt.explain && !changes.empty()) {
    MechanismContext context = mechanism_context();
    context.probe_cache_dir = run::state_dir_path(req.state_dir) + "/probe-cache";
    report["explain"] = run::explain_changes(changes, original_root, rebuilt_root, context);
  }
  std::optional<run::CauseSearch> causes;
  if (opt.explain && !changes.empty()) {
    std::vector<std::string> varied;
    for (const auto& v : req.rebuild_of["variations"]) varied.push_back(v.value("name", ""));
    auto found = run::find_causes(varied, cause_rebuilds(req, *original));
    if (found) {
      causes = std::move(*found);
      report.update(run::causes_json(*causes));
    } else {  // the difference stands (exit 1); only its cause is not known
      report["causes_error"] = found.error().message();
      print_error("rebuild", "--explain could not find the causes: " + found.error().message());
    }
  }

  if (!opt.json) {
    fmt::print("rebuild {} of {}: {} ({} output(s), {} differing)\n", req.id,
               receipt::member_text(original->doc, "id"),
               changes.empty() ? "identical" : "DIFFERENT", original->outputs.size(),
               changes.size());
    for (const auto& v : req.rebuild_of["variations"])
      fmt::print("  varied {}: {}\n", receipt::member_text(v, "name"),
                 receipt::member_text(v, "how"));
    for (const auto& c : changes) fmt::print("  {}\n", receipt::change_text(c));
    if (report.contains("explain")) fmt::print("{}", run::explain_text(report["explain"]));
    if (causes) fmt::print("{}", run::causes_text(*causes));
    fmt::print("{}\n", o.receipt_path);
  }
  finish(changes.empty() ? kExitOk : kExitFailure, "");
}

}  // namespace

void register_rebuild(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "rebuild",
      "Run a receipt's admission again (optionally in a varied world) and compare the outputs "
      "by path and digest.\nExit: 0 identical, 1 different, 2 usage, 3 receipt or admission "
      "refused (nothing run); a rebuild that failed exits as `run` does (4-7)");
  auto opt = std::make_shared<RebuildOptions>();
  cmd->add_option("RECEIPT", opt->receipt_path, "the receipt of the run to rebuild")->required();
  cmd->add_option("--admission", opt->admission_path,
                  "the admission that run used (its SHA-256 must be the receipt's "
                  "admission_sha256)")
      ->required();
  cmd->add_option("--vary", opt->vary,
                  "what to vary: comma-separated, reprotest's names (docs/rebuild.md), or all")
      ->type_name("LIST")
      ->check(name_list_of([] {  // completion and the man page offer reprotest's names
        std::vector<std::string> names(std::begin(run::kVariationNames),
                                       std::end(run::kVariationNames));
        names.emplace_back("all");
        return names;
      }()));
  cmd->add_option("--id", opt->id, "the rebuild's run id; default: rebuild-<UTC time>-<pid>");
  std::vector<std::string> mechanisms = {"auto"};
  for (MechanismKind k : kMechanismKinds) mechanisms.emplace_back(mechanism_kind_name(k));
  cmd->add_option("--mechanism", opt->mechanism, "auto, or one of: " + mechanism_kind_names())
      ->check(CLI::IsMember(mechanisms))
      ->capture_default_str();
  cmd->add_option("--state-dir", opt->state_dir,
                  "where the rebuild runs; default: the state directory holding RECEIPT "
                  "(STATE/results/<id>/receipt.json), else ./sealrun-state");
  cmd->add_flag("--json", opt->json, "print one JSON document on stdout");
  cmd->add_flag("--quiet,-q", opt->quiet,
                "do not show the job's output (`job| `), the progress of long steps nor the "
                "summary on stderr; errors and the comparison are still printed");
  cmd->add_flag(
      "--explain", opt->explain,
      "show how differing outputs differ (diffoscope, when installed, in a sandbox of its "
      "own; else sizes and the first differing byte), and which variations alone make "
      "the difference (more rebuilds: a bisection)");
  cmd->callback([opt, exit_code] { rebuild(*opt, exit_code); });
}

}  // namespace sealrun::cli
