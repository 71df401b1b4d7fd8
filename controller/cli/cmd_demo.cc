// SPDX-License-Identifier: Apache-2.0
// `sealrun demo [--out DIR]`: the embedded default. Freezes an admission for the bundled example
// (examples/hello, built with this host's C compiler; the closure it reads learned once:
// demo_admission.h), runs it contained through the same pipeline as `sealrun run`, and summarises
// the receipt. Exit 0 when the receipt says `built`.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "admission/unreadable.h"
#include "controller/cli/commands.h"
#include "controller/cli/demo_admission.h"
#include "controller/cli/demo_unprivileged.h"
#include "controller/cli/printing.h"
#include "controller/common/host_config.h"
#include "controller/receipt/receipt_review.h"
#include "controller/run/run_pipeline.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/process.h"
#include "core/syscall.h"

namespace sealrun::cli {

namespace fs = std::filesystem;

namespace {

// examples/hello next to the build directory holding this executable (build/sealrun), or where
// an install puts it (PREFIX/share/sealrun/examples/hello beside PREFIX/bin/sealrun), else the
// source tree this binary was configured from.
std::string find_example() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path above = exe.parent_path().parent_path();
    for (const fs::path& candidate :
         {above / "examples" / "hello", above / "share" / "sealrun" / "examples" / "hello"})
      if (fs::is_directory(candidate / ".", ec)) return candidate.string();
  }
  return std::string(SEALRUN_SOURCE_DIR) + "/examples/hello";
}

}  // namespace

void register_demo(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "demo",
      "Freeze an admission for the bundled example (examples/hello), run it contained, "
      "and summarise the receipt (exit 0: the receipt says built)");
  auto out = std::make_shared<std::string>("demo-out");
  auto example = std::make_shared<std::string>();
  cmd->add_option("--out", *out, "where the admission, state and receipt go")
      ->capture_default_str();
  cmd->add_option("--example", *example, "the example tree (default: the bundled examples/hello)");
  auto mode = std::make_shared<std::string>("enforcing");
  cmd->add_option("--mode", *mode,
                  "enforcing (refuse a shortfall) | report-only (record it), as for run")
      ->check(CLI::IsMember({"enforcing", "report-only"}))
      ->capture_default_str();
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json,
                "print one JSON document {admission, sha256, learned, id, state, exit, reason, "
                "receipt_path} instead of the steps and the summary");
  cmd->callback([=] {
    // The steps are for a person; --json keeps stdout one document.
    auto say = [&](const std::string& text) {
      if (*json) return;
      fmt::print("{}", text);
      std::fflush(stdout);
    };
    auto fail = [&](const std::string& what, int code) {
      print_error("demo", what);
      *exit_code = code;
    };
    std::string source = example->empty() ? find_example() : *example;
    std::error_code ec;
    fs::create_directories(*out, ec);
    if (ec) return fail(fmt::format("cannot create {}: {}", *out, ec.message()), kExitFailure);
    std::string out_dir = fs::absolute(*out).lexically_normal().string();
    std::string state_dir = out_dir + "/state";
    fs::create_directories(state_dir, ec);
    if (!ec) fs::permissions(state_dir, fs::perms::owner_all, ec);
    if (ec) return fail(fmt::format("cannot create {}: {}", state_dir, ec.message()), kExitFailure);

    // Without root, what the demo requires may not be enforceable at all (memory limits need a
    // resource group): said in one line before anything is hashed (demo_unprivileged.h).
    if (::geteuid() != 0 && *mode == "enforcing")
      if (auto missing = unprivileged_containment_gap(state_dir, DimensionSet::all()))
        return fail(missing_containment_line(*missing, admission::invoking_user_name()),
                    kExitContainmentUnavailable);

    auto admitted = demo_admission(source, out_dir, state_dir, /*relearn=*/false, say);
    if (!admitted) return fail(admitted.error().message(), kExitFailure);
    say(fmt::format("    admission {} sha256 {}\n", admitted->path, admitted->sha256));

    run::RunRequest req;
    req.admission_path = admitted->path;
    req.sha256 = admitted->sha256;
    req.id = fmt::format("demo-{}-{}", utc_timestamp_now(), ::getpid());
    for (char& c : req.id)
      if (c == ':') c = '-';
    req.state_dir = state_dir;
    req.mode = *mode == "report-only" ? GrantMode::kReportOnly : GrantMode::kEnforcing;
    say(fmt::format("2/3 run {} contained (state in {})\n", req.id, req.state_dir));
    run::RunOutcome o = run::run_pipeline(req, run::default_pipeline_deps(mechanism_context()));
    if (o.exit_code == kExitAdmissionRefused && admitted->reused) {
      // The host changed since the closure was learned (a compiler upgrade, an edited example):
      // the refusal is kept with its receipt, and the demo learns the closure again once.
      say(fmt::format("    the learned admission no longer verifies ({}): learning it again\n",
                      o.receipt.reason));
      admitted = demo_admission(source, out_dir, state_dir, /*relearn=*/true, say);
      if (!admitted) return fail(admitted.error().message(), kExitFailure);
      req.admission_path = admitted->path;
      req.sha256 = admitted->sha256;
      o = run::run_pipeline(req, run::default_pipeline_deps(mechanism_context()));
    }
    if (!o.message.empty()) print_error("demo", o.message);
    say("3/3 receipt\n");
    // Summarise the receipt as written, which is what an auditor will read; only when it could
    // not be written, the pipeline's values rendered the same way.
    auto written = o.receipt_path.empty() ? Result<std::string>(Error::make("not written"))
                                          : read_bounded_file(AT_FDCWD, o.receipt_path, kMiB);
    std::string bytes = written ? *written : receipt::render_receipt(o.receipt, kMiB);
    if (*json) {
      print_json({{"admission", admitted->path},
                  {"sha256", admitted->sha256},
                  {"learned", admitted->learned},
                  {"id", req.id},
                  {"state", o.receipt.state},
                  {"exit", o.receipt.exit},
                  {"reason", o.receipt.reason},
                  {"receipt_path", o.receipt_path.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(o.receipt_path)}});
    } else {
      say(receipt::summary_text(nlohmann::json::parse(bytes)));
      if (!o.receipt_path.empty()) say(o.receipt_path + "\n");
    }
    *exit_code =
        o.receipt.state == "built" ? kExitOk : (o.exit_code != 0 ? o.exit_code : kExitFailure);
  });
}

}  // namespace sealrun::cli
