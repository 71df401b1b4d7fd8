// SPDX-License-Identifier: Apache-2.0
// `sealrun fingerprint image ARCHIVE` and `sealrun fingerprint source REPO_OR_BUNDLE`: the
// user-facing side of fingerprint/image.h and fingerprint/source.h. `image` prints the archive's
// identity; `source` prints the commit and tree a revision names and, on request, exports that
// commit to a throwaway directory to write or verify its per-file manifest. With --expect-commit,
// --expect-tree or --manifest it is a check: exit 0 when everything matches, 1 naming each
// mismatch.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/syscall.h"
#include "fingerprint/git_run.h"
#include "fingerprint/image.h"
#include "fingerprint/sha256.h"
#include "fingerprint/source.h"

namespace sealrun::cli {
namespace {

constexpr size_t kMaxManifestBytes = 256 * kMiB;

struct ImageArgs {
  std::string archive;
  bool json = false;
};

struct SourceArgs {
  std::string source;
  std::string rev = "HEAD";
  std::string manifest_out;
  std::string manifest;
  std::string expect_commit;
  std::string expect_tree;
  bool json = false;
};

struct SourceCheck {
  std::string target, expected, observed;
  bool pass() const { return expected == observed; }
};

int run_image(const ImageArgs& args) {
  auto id = inspect_image_archive(args.archive);
  if (!id.ok()) {
    print_error("fingerprint image", id.error());
    return kExitFailure;
  }
  if (args.json) {
    print_json({{"archive_sha256", id->archive_sha256},
                {"image_id", id->image_id},
                {"diff_ids", id->diff_ids},
                {"format", id->format}});
  } else {
    fmt::print("archive sha256  {}\n", id->archive_sha256);
    fmt::print("image id        {}  ({})\n", id->image_id, id->format);
    for (size_t i = 0; i < id->diff_ids.size(); ++i)
      fmt::print("diff id {:<7} {}\n", i, id->diff_ids[i]);
  }
  return kExitOk;
}

// The new file must not exist: a manifest is evidence and is never silently replaced.
Status write_new_file(const std::string& path, std::string_view bytes) {
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  SEALRUN_TRY(write_all(fd.get(), bytes, path));
  if (::fsync(fd.get()) != 0) return Error::from_errno(fmt::format("fsync {}", path));
  return ok_status();
}

struct SourceReport {
  GitIdentity id;
  std::string manifest_sha256;
  size_t files = 0;
  bool has_manifest = false;
  std::vector<SourceCheck> checks;
};

Result<SourceReport> fingerprint_source(const SourceArgs& args) {
  SourceReport report;
  report.id = SEALRUN_TRY(read_git_identity(args.source, args.rev));
  if (!args.expect_commit.empty())
    report.checks.push_back({"commit", args.expect_commit, report.id.commit});
  if (!args.expect_tree.empty())
    report.checks.push_back({"tree", args.expect_tree, report.id.tree});
  if (args.manifest_out.empty() && args.manifest.empty()) return report;

  std::string given_bytes;
  Manifest given;
  if (!args.manifest.empty()) {
    given_bytes = SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, args.manifest, kMaxManifestBytes),
                                  "read manifest");
    given = SEALRUN_TRY_CTX(parse_manifest(given_bytes), args.manifest);
  }
  if (!args.manifest_out.empty()) {
    struct stat st {};
    if (::lstat(args.manifest_out.c_str(), &st) == 0)
      return Error::make(fmt::format("{}: already exists; --manifest-out must name a new file",
                                     args.manifest_out));
  }
  auto scratch = SEALRUN_TRY(ScopedTempDir::create("sealrun-source"));
  std::string checkout = scratch.path() + "/checkout";
  SEALRUN_TRY(export_git_commit(args.source, report.id.commit, report.id.tree, checkout));
  report.has_manifest = true;
  if (!args.manifest_out.empty()) {
    auto built = SEALRUN_TRY(build_manifest(checkout));
    std::string bytes = manifest_to_jsonl(built);
    SEALRUN_TRY_CTX(write_new_file(args.manifest_out, bytes), "write manifest");
    report.manifest_sha256 = sha256_hex(bytes);
    report.files = built.size();
  } else {
    report.manifest_sha256 = sha256_hex(given_bytes);
    report.files = given.size();
  }
  if (!args.manifest.empty()) {
    auto mismatches = SEALRUN_TRY(verify_manifest(checkout, given));
    for (auto& m : mismatches)
      report.checks.push_back(
          {"manifest: " + m.path, std::move(m.expected), std::move(m.observed)});
    if (mismatches.empty())
      report.checks.push_back({"manifest", fmt::format("{} files as listed", given.size()),
                               fmt::format("{} files as listed", given.size())});
  }
  return report;
}

int run_source(const SourceArgs& args) {
  auto report = fingerprint_source(args);
  if (!report.ok()) {
    print_error("fingerprint source", report.error());
    return kExitFailure;
  }
  size_t failed = 0;
  for (const auto& c : report->checks) failed += c.pass() ? 0 : 1;
  if (args.json) {
    nlohmann::json doc = {{"commit", report->id.commit}, {"tree", report->id.tree}};
    if (report->has_manifest) {
      doc["manifest_sha256"] = report->manifest_sha256;
      doc["files"] = report->files;
    }
    if (!report->checks.empty()) {
      doc["checks"] = nlohmann::json::array();
      for (const auto& c : report->checks)
        doc["checks"].push_back({{"target", c.target},
                                 {"expected", c.expected},
                                 {"observed", c.observed},
                                 {"result", c.pass() ? "pass" : "fail"}});
      doc["result"] = failed == 0 ? "pass" : "fail";
    }
    print_json(doc);
  } else {
    fmt::print("commit           {}\n", report->id.commit);
    fmt::print("tree             {}\n", report->id.tree);
    if (report->has_manifest) {
      fmt::print("manifest sha256  {}\n", report->manifest_sha256);
      fmt::print("files            {}\n", report->files);
    }
    for (const auto& c : report->checks)
      fmt::print("{}  {}: expected {}, observed {}\n", c.pass() ? "pass" : "FAIL", c.target,
                 c.expected, c.observed);
  }
  if (failed != 0) {
    print_error("fingerprint source", fmt::format("{} of {} checks failed (listed above)", failed,
                                                  report->checks.size()));
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

void add_fingerprint_image_and_source(CLI::App& fingerprint, int* exit_code) {
  auto image_args = std::make_shared<ImageArgs>();
  CLI::App* image = fingerprint.add_subcommand(
      "image",
      "Identity of an OCI archive or a `podman save` docker-archive: {archive_sha256, image_id, "
      "diff_ids}; every referenced blob's digest (and size, where the format records one) is "
      "checked against the archive's bytes");
  image->add_option("ARCHIVE", image_args->archive, "Image archive (a regular file, no symlink)")
      ->required();
  image->add_flag("--json", image_args->json,
                  "Print {archive_sha256, image_id, diff_ids, format} as JSON");
  image->callback([image_args, exit_code] { *exit_code = run_image(*image_args); });

  auto source_args = std::make_shared<SourceArgs>();
  CLI::App* source = fingerprint.add_subcommand(
      "source",
      "Commit and tree of a git repository or bundle (git runs with hooks disabled and no "
      "system/global config); optionally write or verify the per-file manifest of that commit's "
      "checkout. With --expect-* or --manifest: exit 0 if everything matches, 1 naming each "
      "mismatch");
  source->add_option("REPO_OR_BUNDLE", source_args->source, "Repository directory or bundle file")
      ->required();
  source->add_option("--rev", source_args->rev, "Revision to fingerprint (default HEAD)");
  source->add_option("--manifest-out", source_args->manifest_out,
                     "Write the manifest (docs/source-manifest.md) of the commit to this new file");
  source->add_option("--manifest", source_args->manifest,
                     "Verify the commit's checkout against this manifest file");
  source->add_option("--expect-commit", source_args->expect_commit,
                     "Fail unless the revision is this commit (full hex)");
  source->add_option("--expect-tree", source_args->expect_tree,
                     "Fail unless the commit's tree is this tree (full hex)");
  source->add_flag("--json", source_args->json,
                   "Print {commit, tree[, manifest_sha256, files][, checks, result]} as JSON");
  source->callback([source_args, exit_code] { *exit_code = run_source(*source_args); });
}

}  // namespace sealrun::cli
