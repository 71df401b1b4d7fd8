// SPDX-License-Identifier: Apache-2.0
// `sealrun admit freeze|check`: the user-facing side of admission/. freeze computes every pin and
// writes a canonical admission (exit 0 written, 1 failed, 2 usage); check verifies the document's
// own digest and every pin without running anything (exit 0 when every check passed, 3 otherwise —
// the same code `sealrun run` uses for a refused admission).
#include <fmt/format.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "admission/admitted.h"
#include "admission/freeze.h"
#include "containment/view_plan.h"
#include "controller/cli/closure_from.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/run/learn_freeze.h"
#include "controller/run/run_plan.h"
#include "controller/run/run_progress.h"
#include "controller/run/view_exec_check.h"
#include "core/bytes_text.h"
#include "core/exit_codes.h"
#include "core/hex.h"

namespace sealrun::cli {
namespace {

using admission::AdmitOutcome;
using admission::FreezeRequest;
using admission::PinCheck;

struct FreezeArgs {
  FreezeRequest request;
  bool json = false;
  bool quiet = false;  // --quiet: no progress, no `job| ` lines
  bool learn = false;  // --learn: learn_freeze.h
  LearnOptions learn_options;
  std::string closure_from;  // --closure-from: closure_from.h
};

struct CheckArgs {
  std::string path;
  std::string sha256;
  std::string state_dir = "sealrun-state";  // whose digest cache re-verifies unchanged trees
  bool rehash = false;
  bool json = false;
};

// The progress of freezing's long steps (run_progress.h): the toolchain and each --tree hashed,
// then a closure pinned. Ended (the terminal line erased, the plain lines closed) before the result
// is printed.
struct FreezeProgress {
  FreezeRequest& request;
  std::optional<run::TerminalProgress> toolchain, closure;
  FreezeProgress(const char* closure_label, FreezeRequest& r) : request(r) {
    toolchain.emplace("toolchain");
    closure.emplace(closure_label);
    request.toolchain_progress = toolchain->on_bytes();
    request.tree_progress = run::per_tree_progress();
  }
  ~FreezeProgress() { end(); }
  FreezeProgress(const FreezeProgress&) = delete;
  FreezeProgress& operator=(const FreezeProgress&) = delete;
  void end() {
    request.toolchain_progress = nullptr;
    request.tree_progress = nullptr;  // the last tree's line ends with its hook
    toolchain.reset();
    closure.reset();
  }
};

// Each --learn-exclude and the closure entries it left out ("generated" ones are not the caller's).
nlohmann::json exclusions_json(const std::vector<learn::Exclusion>& excluded) {
  nlohmann::json out = nlohmann::json::array();
  for (const learn::Exclusion& e : excluded)
    if (!e.generated)
      out.push_back({{"path", e.path}, {"files", e.files}, {"links", e.links}, {"dirs", e.dirs}});
  return out;
}

int run_learned_freeze(FreezeArgs& args) {
  // Checked before the learning run: a path that cannot be what the caller meant is a usage error.
  for (const std::string& path : args.learn_options.exclude)
    if (auto st = learn::check_exclude_path(path); !st) {
      print_error("admit freeze --learn", st.error());
      return kExitUsage;
    }
  FreezeProgress progress("learned closure", args.request);
  args.learn_options.hash_progress = progress.closure->on_bytes();
  args.learn_options.live_output_fd = args.quiet ? -1 : STDERR_FILENO;
  auto learned = freeze_learned(args.request, args.learn_options);
  progress.end();
  if (!learned.ok()) {
    print_error("admit freeze --learn", learned.error());
    return kExitFailure;
  }
  if (args.json) {
    print_json({{"path", learned->path},
                {"sha256", learned->sha256},
                {"host_files", learned->files},
                {"host_links", learned->links},
                {"host_dirs", learned->dirs},
                {"hashed_bytes", learned->bytes},
                {"lookups", learned->lookups},
                {"dropped_under_pins", learned->dropped},
                {"learn_ms", learned->learn_ms},
                {"hash_ms", learned->hash_ms},
                {"excluded", exclusions_json(learned->excluded)},
                {"prove_ms", learned->prove_ms}});
  } else {
    fmt::print(stderr,
               "learned {} host files ({}), {} links, {} directories ({} paths looked up, {} "
               "entries left to the pins); learning {} ms, hashing {} ms, proving {} ms\n",
               learned->files, binary_size_text(learned->bytes), learned->links, learned->dirs,
               learned->lookups, learned->dropped, learned->learn_ms, learned->hash_ms,
               learned->prove_ms);
    for (const learn::Exclusion& e : learned->excluded)
      if (!e.generated)
        fmt::print(stderr, "--learn-exclude {}: left out {} files, {} links, {} directories\n",
                   e.path, e.files, e.links, e.dirs);
    fmt::print("{}  {}\n", learned->sha256, learned->path);
  }
  return kExitOk;
}

int run_freeze(FreezeArgs& args) {
  if (args.quiet) run::set_progress_quiet(true);
  if (args.learn) return run_learned_freeze(args);
  if (!args.learn_options.exclude.empty()) {
    print_error("admit freeze", "--learn-exclude: only with --learn");
    return kExitUsage;
  }
  if (!args.closure_from.empty()) {
    FreezeProgress progress("closure", args.request);
    return closure_from_command(
        args.request,
        {args.closure_from, args.learn_options.max_bytes, progress.closure->on_bytes()}, args.json);
  }
  FreezeProgress progress("closure", args.request);
  auto frozen = admission::freeze_admission(args.request);
  progress.end();
  if (!frozen.ok()) {
    print_error("admit freeze", frozen.error());
    return kExitFailure;
  }
  if (args.json)
    print_json({{"path", frozen->path}, {"sha256", frozen->sha256}});
  else
    fmt::print("{}  {}\n", frozen->sha256, frozen->path);
  return kExitOk;
}

nlohmann::json pin_cache_json(const std::vector<PinCacheRecord>& records) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : records) out.push_back(pin_cache_to_json(r));
  return out;
}

int run_check(const CheckArgs& args) {
  if (from_hex(args.sha256).value_or("").size() != 32) {
    print_error("admit check", fmt::format("--sha256 {}: expected 64 hex digits", args.sha256));
    return kExitUsage;
  }
  admission::VerifyOptions options;
  // One line per pinned tree (the toolchain's included) while it is verified, on a terminal.
  options.tree_progress = run::per_tree_progress();
  // The digest cache of an existing state directory (the one `run` would use); none otherwise.
  struct stat st {};
  if (::stat(args.state_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    options.digest_cache_state_dir = args.state_dir;
  options.rehash = args.rehash;
  std::vector<PinCacheRecord> pin_cache;
  options.on_pin_cache = [&pin_cache](const PinCacheRecord& r) { pin_cache.push_back(r); };
  AdmitOutcome out = admission::admit(args.path, args.sha256, options);
  options.tree_progress = nullptr;  // ends the last tree's progress before the report
  // What `run` checks of the job's view before any mechanism sees it (validate_spec, exit 4
  // there): an admission that passes here must not be refused there for its mounts.
  if (out.admitted) {
    std::error_code ec;
    std::string state = std::filesystem::absolute(args.state_dir, ec).lexically_normal().string();
    if (!state.empty() && state.back() == '/') state.pop_back();
    run::RunLayout layout = run::layout_for(state, "admit-check");
    // A git or bundle source is exported by `run` itself (under exports/, where check makes
    // nothing): the view is checked with that place standing in for it.
    if (out.admitted->source_root().empty())
      layout.job_source_dir = state + "/exports/admit-check/source";
    auto spec =
        run::containment_spec(*out.admitted, layout, "admit-check", GrantMode::kEnforcing, {});
    add_compat_links(read_host_compat_links(), &spec);  // as `run` adds them
    if (auto st = validate_spec(spec); !st)
      out.report.refusal =
          Error::make("`sealrun run` would refuse its view: " + st.error().message());
    else if (auto can = run::check_spec_can_exec(spec); !can)
      out.report.refusal = Error::make("`sealrun run` would refuse it: " + can.error().message());
  }
  const admission::AdmissionReport& report = out.report;
  if (args.json) {
    nlohmann::json checks = nlohmann::json::array();
    for (const PinCheck& c : report.checks) checks.push_back(admission::pin_check_to_json(c));
    print_json({{"admission", report.path},
                {"sha256", report.observed_sha256},
                {"passed", report.all_passed()},
                {"refusal", report.refusal ? nlohmann::json(report.refusal->message())
                                           : nlohmann::json(nullptr)},
                {"checks", std::move(checks)},
                {"pin_cache", pin_cache_json(pin_cache)}});
  } else {
    for (const PinCheck& c : report.checks)
      fmt::print("{:<7} {}  expected {}  observed {}\n", admission::check_status_name(c.status),
                 c.target, c.expected, c.observed);
    for (const PinCacheRecord& r : pin_cache)
      fmt::print("cache   {}: {} ({} of {} files checked by stat, {} re-hashed){}\n", r.root,
                 pin_cache_status_name(r.status), r.checked_by_stat, r.files, r.rehashed,
                 r.reason.empty() ? "" : "; " + r.reason);
  }
  std::fflush(stdout);
  if (report.all_passed()) return kExitOk;
  print_error("admit check", "refused: " + report.summary());
  return kExitAdmissionRefused;
}

}  // namespace

void register_admit(CLI::App& app, int* exit_code) {
  CLI::App* admit = app.add_subcommand(
      "admit",
      "Pin what may run: freeze an admission from inputs, or check one without running it");
  admit->require_subcommand(1);

  auto f = std::make_shared<FreezeArgs>();
  CLI::App* freeze = admit->add_subcommand("freeze",
                                           "Compute every pin (source commit/tree/manifest, "
                                           "toolchain tree, image, host tools) and write "
                                           "a canonical admission; prints its SHA-256. Usage: "
                                           "admit freeze --out FILE [options] -- ARGV...");
  freeze->add_option("--out", f->request.out, "Admission file to write")->required();
  freeze->add_flag("--force", f->request.force, "Replace an existing --out file");
  freeze->add_option("--draft", f->request.draft,
                     "A partial admission (JSON) to start from; flags and --set override it");
  freeze->add_option("--source", f->request.source,
                     "Source: a git repository directory, a git bundle file, or a plain tree");
  freeze
      ->add_option("--source-mtimes", f->request.source_mtimes,
                   "fixed (default): every entry of the job's source gets one mtime, "
                   "source_date_epoch (a git source's commit time, else 315619200 = "
                   "1980-01-02T00:00:00Z); preserved (plain tree only): the host's mtimes, "
                   "pinned. Same as --set source.mtimes=...")
      ->check(CLI::IsMember({"fixed", "preserved"}));
  freeze->add_option("--toolchain", f->request.toolchain,
                     "Toolchain root directory (read-only in the job); optional with --learn or "
                     "--closure-from, whose learned closure is then the toolchain");
  freeze->add_option("--toolchain-mount", f->request.toolchain_mount,
                     "Where the toolchain appears in the job (default: its host path)");
  freeze
      ->add_option("--tree", f->request.trees,
                   "HOST_DIR[=JOB_PATH]: pin a host tree (semantic-tree-v1) and mount it read-only "
                   "at JOB_PATH (default: the same path); repeatable. The job sees no host path "
                   "that is not pinned")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  f->request.state_dir = "sealrun-state";
  freeze
      ->add_option("--state-dir", f->request.state_dir,
                   "the state directory runs will use: a --tree may not overlap it, and its digest "
                   "cache (when it exists) records each tree as frozen")
      ->capture_default_str();
  freeze->add_option("--image", f->request.image,
                     "Container image archive (OCI or docker-archive tar)");
  freeze
      ->add_option("--host-tool", f->request.host_tools,
                   "A host binary to pin by SHA-256 (repeatable), e.g. /usr/bin/bwrap")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  freeze
      ->add_option("--set", f->request.sets,
                   "KEY=VALUE with a dotted key of the admission (repeatable), e.g. "
                   "limits.memory_max_bytes=67108864; VALUE is JSON if it parses, else a string")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  freeze->add_option("--env", f->request.env, "NAME=VALUE allowed into the job (repeatable)")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* learn_flag = freeze->add_flag(
      "--learn", f->learn,
      "Run the command once in a learning sandbox (host /usr, /etc, /bin, /lib* "
      "read-only; no network; as root) and pin exactly the host paths it opened or "
      "looked up: files, the links it needed, directories (host_files, host_links, "
      "host_dirs); then run the learned admission once more and write it only if "
      "that builds too; the runs' outputs are thrown away. No --toolchain needed: "
      "the learned closure is the toolchain");
  freeze
      ->add_option("--closure-from", f->closure_from,
                   "ADMISSION: take that admission's learned closure (and its toolchain and trees "
                   "unless given here) and pin it again for this source and command, without "
                   "learning and without root: every file hashed again, every link read again; "
                   "prints each entry changed since (--json: changed[]); a vanished one is an "
                   "error. Entries under this freeze's own --tree/--toolchain are left out")
      ->excludes(learn_flag);
  freeze
      ->add_option("--learn-max-files", f->learn_options.max_files,
                   "With --learn: the most host files the closure may hold")
      ->capture_default_str();
  freeze
      ->add_option("--learn-max-bytes", f->learn_options.max_bytes,
                   "With --learn or --closure-from: the most bytes the closure's files may hold "
                   "in all")
      ->capture_default_str();
  freeze
      ->add_option("--learn-exclude", f->learn_options.exclude,
                   "With --learn: an absolute path left out of the learned closure with all "
                   "below it (repeatable), e.g. /etc/ssl/certs with the network off. The job's "
                   "/etc/passwd, group, hosts, hostname, nsswitch.conf and resolv.conf are never "
                   "learned: sealrun makes them for each run")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  freeze->add_flag(
      "--json", f->json,
      "Print {path, sha256} as JSON (with --learn also host_files, host_links, "
      "host_dirs counts, lookups, dropped_under_pins, hashed_bytes, learn_ms, hash_ms, "
      "prove_ms, and excluded[]: {path, files, "
      "links, dirs} per --learn-exclude; with --closure-from also dropped and changed[])");
  freeze->add_flag("--quiet,-q", f->quiet,
                   "Show no progress on stderr (nor, with --learn, the learning and proving runs' "
                   "`job| ` lines); errors and the result are still printed");
  freeze->add_option("ARGV", f->request.argv, "The command the job runs (after --)");
  freeze->callback([f, exit_code] { *exit_code = run_freeze(*f); });

  auto c = std::make_shared<CheckArgs>();
  CLI::App* check = admit->add_subcommand(
      "check",
      "Verify an admission without running anything: its own SHA-256, then every pin. One line per "
      "check (target, expected, observed, pass/fail); exit 0 when all pass, 3 otherwise");
  check->add_option("ADMISSION", c->path, "The admission file")->required();
  check->add_option("--sha256", c->sha256, "The SHA-256 the admission's exact bytes must have")
      ->required();
  check
      ->add_option("--state-dir", c->state_dir,
                   "whose digest cache re-verifies unchanged pinned trees by a stat walk (used "
                   "when the directory exists)")
      ->capture_default_str();
  check->add_flag("--rehash", c->rehash,
                  "hash pinned trees in full instead of trusting the digest cache");
  check->add_flag("--json", c->json,
                  "Print {admission, sha256, passed, refusal, checks[], pin_cache[]} as JSON");
  check->callback([c, exit_code] { *exit_code = run_check(*c); });
}

}  // namespace sealrun::cli
