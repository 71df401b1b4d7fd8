// SPDX-License-Identifier: Apache-2.0
// verify_pins(): see verify.h. Each check is independent: a failure is recorded with what was
// observed (or the error that stopped the observation) and the next check runs regardless.
#include "admission/verify.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>

#include "admission/unreadable.h"
#include "admission/verify_source_mtimes.h"
#include "core/generated_etc.h"
#include "core/temp_dir.h"
#include "fingerprint/cached_tree.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/image.h"
#include "fingerprint/sha256.h"
#include "fingerprint/source.h"
#include "fingerprint/source_snapshot.h"
#include "fingerprint/tree.h"
#include "fingerprint/tree_changes.h"

namespace sealrun::admission {

using nlohmann::json;

std::string_view check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkipped:
      return "skipped";
    case CheckStatus::kUnreadable:
      return "unreadable";
  }
  return "?";
}

json pin_check_to_json(const PinCheck& c) {
  return {{"target", c.target},
          {"expected", c.expected},
          {"observed", c.observed},
          {"result", std::string(check_status_name(c.status))}};
}

std::string manifest_digest(const Manifest& manifest) {
  return sha256_hex(manifest_to_jsonl(manifest));
}

namespace {

// A private temporary directory, removed with its contents when the holder goes away.
std::string format_utc(time_t t) {
  struct tm tm = {};
  gmtime_r(&t, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What a failed observation of `pinned` says: that the invoking user may not read it (status
// kUnreadable, the cannot_read_message()), or the error itself (kFail).
void observe_error(const Error& error, const std::string& pinned, PinCheck* c) {
  if (auto path = unreadable_path(error, pinned)) {
    c->observed = cannot_read_message(*path, invoking_user_name());
    c->status = CheckStatus::kUnreadable;
  } else {
    c->observed = "error: " + error.message();
    c->status = CheckStatus::kFail;
  }
}

class Checks {
 public:
  explicit Checks(std::string skip_reason) : skip_(std::move(skip_reason)) {}
  bool skipping() const { return !skip_.empty(); }

  // `pinned`: the path the observation reads, named when the user may not read it.
  void compare(std::string target, std::string expected, const Result<std::string>& observed,
               const std::string& pinned = {}) {
    PinCheck c{std::move(target), std::move(expected), {}, CheckStatus::kFail};
    if (observed.ok()) {
      c.observed = observed.value();
      c.status = c.observed == c.expected ? CheckStatus::kPass : CheckStatus::kFail;
    } else {
      observe_error(observed.error(), pinned, &c);
    }
    list_.push_back(std::move(c));
  }
  void skipped(std::string target, std::string expected) {
    list_.push_back(
        {std::move(target), std::move(expected), "not checked: " + skip_, CheckStatus::kSkipped});
  }
  void add(PinCheck c) { list_.push_back(std::move(c)); }
  std::vector<PinCheck> take() { return std::move(list_); }

 private:
  std::string skip_;
  std::vector<PinCheck> list_;
};

Result<std::string> file_sha256(const std::string& path) {
  auto d = SEALRUN_TRY(hash_file(path));
  return d.sha256;
}

std::string describe_mismatches(const std::vector<ManifestMismatch>& mismatches) {
  std::string out = fmt::format("{} file(s) differ:", mismatches.size());
  size_t shown = 0;
  for (const ManifestMismatch& m : mismatches) {
    if (++shown > 5) {
      out += fmt::format(" and {} more", mismatches.size() - 5);
      break;
    }
    out += fmt::format(" {} (expected {}, observed {});", m.path, m.expected, m.observed);
  }
  return out;
}

// Verifies the manifest against the files of the admitted source: the tree itself for kind
// "tree", an export of the admitted commit for git and bundle sources.
PinCheck check_manifest(const SourcePin& s, const VerifyOptions& options, std::string* root_out) {
  PinCheck c{"source.manifest",
             fmt::format("{} file(s) as listed in source.manifest", s.manifest.size()),
             {},
             CheckStatus::kFail};
  std::string root = s.path;
  std::optional<ScopedTempDir> scratch;
  if (s.kind != SourceKind::kTree) {
    if (options.source_export_dir.empty()) {
      auto made = ScopedTempDir::create("sealrun-admit");
      if (!made) {
        c.observed = "error: " + made.error().message();
        return c;
      }
      scratch.emplace(std::move(*made));
      root = scratch->path() + "/src";
    } else {
      root = options.source_export_dir;
    }
    if (Status st = export_git_commit(s.path, s.commit, s.tree, root); !st.ok()) {
      c.observed = "error: export of commit " + s.commit + ": " + st.error().message();
      return c;
    }
  } else if (!options.source_export_dir.empty()) {
    // A run verifies (and then shows the job) a private snapshot of a plain tree, so that a change
    // on the host after this check cannot reach the job.
    root = options.source_export_dir;
    // The copies' times: the host's where they are pinned, else stamped over after this check.
    SnapshotTimes times =
        s.mtimes == SourceMtimes::kPreserved ? SnapshotTimes::kHost : SnapshotTimes::kCopyTime;
    if (Status st = snapshot_tree(s.path, root, times); !st.ok()) {
      c.observed = "error: snapshot of " + s.path + ": " + st.error().message();
      return c;
    }
  }
  *root_out = root;
  auto mismatches = verify_manifest(root, s.manifest);
  if (!mismatches.ok()) {
    c.observed = "error: " + mismatches.error().message();
  } else if (mismatches->empty()) {
    c.observed = c.expected;
    c.status = CheckStatus::kPass;
  } else {
    c.observed = describe_mismatches(*mismatches);
  }
  return c;
}

void check_source(const SourcePin& s, int64_t epoch, const VerifyOptions& options, Checks* checks) {
  const bool git = s.kind != SourceKind::kTree;
  if (checks->skipping()) {
    if (s.kind == SourceKind::kBundle) checks->skipped("source.path_sha256", s.path_sha256);
    if (git) {
      checks->skipped("source.commit", s.commit);
      checks->skipped("source.tree", s.tree);
    }
    checks->skipped("source.manifest_sha256", s.manifest_sha256);
    checks->skipped("source.manifest",
                    fmt::format("{} file(s) as listed in source.manifest", s.manifest.size()));
    if (s.mtimes == SourceMtimes::kPreserved)
      checks->skipped("source.mtimes_sha256", s.mtimes_sha256);
    return;
  }
  if (s.kind == SourceKind::kBundle)
    checks->compare("source.path_sha256", s.path_sha256, file_sha256(s.path), s.path);
  if (git) {
    // The commit that the repository (or bundle) has checked out must be the admitted one, and the
    // admitted commit must have the admitted tree.
    auto head = read_git_identity(s.path, "HEAD");
    checks->compare("source.commit", s.commit,
                    head.ok() ? Result<std::string>(head->commit)
                              : Result<std::string>(std::move(head).error()));
    auto pinned = read_git_identity(s.path, s.commit);
    checks->compare("source.tree", s.tree,
                    pinned.ok() ? Result<std::string>(pinned->tree)
                                : Result<std::string>(std::move(pinned).error()));
  }
  checks->compare("source.manifest_sha256", s.manifest_sha256,
                  Result<std::string>(manifest_digest(s.manifest)));
  std::string root;
  PinCheck manifest = check_manifest(s, options, &root);
  bool verified = manifest.passed();
  checks->add(std::move(manifest));
  // The times of what was verified: stamped (fixed) or checked (preserved) before the job sees it.
  if (verified)
    if (auto times = check_source_times(s, epoch, root, !options.source_export_dir.empty()))
      checks->add(std::move(*times));
}

void check_image(const ImagePin& image, Checks* checks) {
  std::string ids = fmt::format("{}", fmt::join(image.diff_ids, ","));
  if (checks->skipping()) {
    checks->skipped("image.archive_sha256", image.archive_sha256);
    checks->skipped("image.image_id", image.image_id);
    checks->skipped("image.diff_ids", ids);
    return;
  }
  // The archive digest is computed on its own, so that a damaged archive still says which of
  // its pins moved even when it can no longer be inspected.
  checks->compare("image.archive_sha256", image.archive_sha256, file_sha256(image.archive),
                  image.archive);
  auto identity = inspect_image_archive(image.archive);
  if (!identity.ok()) {
    checks->compare("image.image_id", image.image_id, identity.error());
    checks->compare("image.diff_ids", ids, identity.error());
    return;
  }
  checks->compare("image.image_id", image.image_id, Result<std::string>(identity->image_id));
  checks->compare("image.diff_ids", ids,
                  Result<std::string>(fmt::format("{}", fmt::join(identity->diff_ids, ","))));
}

// One check for the whole closure (a learned closure has hundreds of files: one line each would
// crowd the receipt), naming each file that differs. Each file is hashed through the descriptor
// it was opened by (no link followed), and that file's identity (device, inode) is handed to
// `on_host_file`: what the view binds must be the very file that was hashed.
void check_host_files(const std::vector<HostFilePin>& files, const VerifyOptions& options,
                      Checks* checks) {
  std::string expected = fmt::format("{} file(s) as listed in host_files", files.size());
  if (checks->skipping()) {
    checks->skipped("host_files", expected);
    return;
  }
  std::vector<std::string> bad;
  size_t bad_total = 0;
  std::optional<std::string> unreadable;  // the first file the user may not read
  size_t unreadable_total = 0;
  FileHasher hasher;
  for (const HostFilePin& f : files) {
    // Not in the view (sealrun makes the job's own: docs/view.md), so its bytes are not checked.
    if (is_generated_etc_path(f.path)) continue;
    Result<std::string> observed = Error::make("not read");
    auto opened = open_regular_at(AT_FDCWD, f.path, f.path);
    if (opened) {
      auto digest = hasher.hash_opened(*opened, f.path);
      observed = digest ? Result<std::string>(digest->sha256)
                        : Result<std::string>(std::move(digest).error());
      if (observed.ok() && options.on_host_file)
        options.on_host_file(f.path, {opened->st.st_dev, opened->st.st_ino});
    } else {
      observed = std::move(opened).error();
    }
    if (observed.ok() && *observed == f.sha256) continue;
    if (!observed.ok())
      if (auto path = unreadable_path(observed.error(), f.path)) {
        if (++unreadable_total == 1) unreadable = std::move(path);
        continue;
      }
    if (++bad_total <= 5)
      bad.push_back(
          fmt::format("{} (expected {}, observed {})", f.path, f.sha256,
                      observed.ok() ? *observed : "error: " + observed.error().message()));
  }
  if (bad_total == 0 && unreadable_total == 0) {
    checks->add({"host_files", expected, expected, CheckStatus::kPass});
    return;
  }
  std::string more = bad_total > 5 ? fmt::format(" and {} more", bad_total - 5) : "";
  if (unreadable) {
    // The refusal names the first file the user may not read; the rest are counted, so that
    // nothing is lost for whoever runs it again as root.
    std::string rest;
    if (unreadable_total > 1)
      rest += fmt::format("; {} more file(s) unreadable", unreadable_total - 1);
    if (bad_total > 0)
      rest += fmt::format("; {} file(s) differ: {}{}", bad_total, fmt::join(bad, "; "), more);
    checks->add({"host_files", expected,
                 cannot_read_message(*unreadable, invoking_user_name()) + rest,
                 CheckStatus::kUnreadable});
    return;
  }
  checks->add({"host_files", expected,
               fmt::format("{} file(s) differ: {}{}", bad_total, fmt::join(bad, "; "), more),
               CheckStatus::kFail});
}

// The progress hook for one tree, bound to its label (empty when nobody listens).
std::function<void(const HashProgress&)> progress_for(const VerifyOptions& options,
                                                      const std::string& label) {
  if (!options.tree_progress) return {};
  return [hook = options.tree_progress, label](const HashProgress& p) { hook(label, p); };
}

// One pinned tree (the toolchain or a --tree): its digest, through the digest cache when there
// is one, compared with the pin. On a mismatch the cache's record of the tree as pinned (taken
// before verifying refreshes it) names the entries that changed.
PinCheck check_tree(const std::string& target, const std::string& root, const std::string& expected,
                    TreeOptions tree_options, const VerifyOptions& options) {
  std::optional<DigestCacheContent> recorded;  // the cache's record of the tree as pinned
  Result<TreeSummary> summary = Error::make("not verified");
  if (options.digest_cache_state_dir.empty()) {
    summary = tree_digest(root, tree_options);
  } else if (auto cached = tree_digest_cached({root, options.digest_cache_state_dir, expected,
                                               options.rehash, std::move(tree_options)});
             !cached.ok()) {
    summary = std::move(cached).error();
  } else {
    if (options.on_pin_cache) options.on_pin_cache(cached->pin_cache);
    recorded = recording_as(std::move(cached->loaded_before), expected);
    summary = std::move(cached->summary);
  }
  PinCheck c{target, expected, {}, CheckStatus::kFail};
  if (!summary.ok()) {
    observe_error(summary.error(), root, &c);
  } else if (summary->sha256 == expected) {
    c.observed = summary->sha256;
    c.status = CheckStatus::kPass;
  } else {
    std::string what = "no record of its pinned files to name the change";
    if (recorded) {
      auto changes = changes_since_record(*recorded, root);
      what = changes.empty() ? "an entry was added, or a mode or owner changed"
                             : fmt::format("{}", fmt::join(changes, ", "));
      // Verifying refreshed the cache with the tree as it is now; put back the record of the
      // tree as pinned, so that every later refusal can still name what changed.
      (void)store_digest_cache(options.digest_cache_state_dir, input_of(*recorded));
    }
    c.observed = fmt::format("{} (changed since frozen: {})", summary->sha256, what);
  }
  return c;
}

// The pins of what the view binds from the host: the toolchain, each --tree, the closure files.
void check_view_pins(const AdmissionDocument& doc, const VerifyOptions& options, Checks* checks) {
  if (!doc.toolchain) {
    // Nothing to verify here: what stands in for it is checked below (docs/admission.md).
  } else if (checks->skipping()) {
    checks->skipped("toolchain.tree_sha256", doc.toolchain->tree_sha256);
  } else {
    TreeOptions tree_options;
    tree_options.progress = options.toolchain_progress;
    tree_options.on_progress = progress_for(options, "toolchain");
    checks->add(check_tree("toolchain.tree_sha256", doc.toolchain->root, doc.toolchain->tree_sha256,
                           std::move(tree_options), options));
  }
  for (const TreePin& tree : doc.trees) {
    std::string target = "trees:" + tree.host_path;
    if (checks->skipping()) {
      checks->skipped(target, tree.tree_sha256);
      continue;
    }
    TreeOptions tree_options;
    tree_options.on_progress = progress_for(options, "tree " + tree.host_path);
    checks->add(
        check_tree(target, tree.host_path, tree.tree_sha256, std::move(tree_options), options));
  }
  if (!doc.host_files.empty()) check_host_files(doc.host_files, options, checks);
}

}  // namespace

std::string toolchain_stand_in(const AdmissionDocument& doc) {
  if (doc.toolchain) return "toolchain.root " + doc.toolchain->root;
  if (!doc.host_files.empty())
    return fmt::format("the learned closure ({} host files)", doc.host_files.size());
  if (doc.image) return "the image's file system";
  if (!doc.trees.empty()) return fmt::format("the pinned trees ({})", doc.trees.size());
  return "none";
}

std::vector<PinCheck> verify_pins(const AdmissionDocument& doc, const VerifyOptions& options) {
  Checks checks(options.skip_reason);
  check_source(doc.source, doc.source_date_epoch, options, &checks);

  // An admission without a toolchain says, where the toolchain's check would be, what gives the
  // job its programs instead; that is verified by its own checks (host_files, trees, image).
  if (!doc.toolchain) {
    std::string instead = toolchain_stand_in(doc);
    if (checks.skipping())
      checks.skipped("toolchain", instead);
    else
      checks.add({"toolchain", instead, instead, CheckStatus::kPass});
  }
  check_view_pins(doc, options, &checks);

  if (doc.image) check_image(*doc.image, &checks);

  for (const HostToolPin& tool : doc.host_tools) {
    std::string target = "host_tools:" + tool.path;
    if (checks.skipping())
      checks.skipped(target, tool.sha256);
    else
      checks.compare(target, tool.sha256, file_sha256(tool.path), tool.path);
  }

  if (doc.expires_at_epoch) {
    time_t now = options.now ? *options.now : ::time(nullptr);
    std::string expected = "before " + *doc.expires_at;
    if (checks.skipping()) {
      checks.skipped("expires_at", expected);
    } else {
      bool valid = now < *doc.expires_at_epoch;
      checks.add({"expires_at", expected,
                  fmt::format("{}: it is now {}", valid ? "valid" : "expired", format_utc(now)),
                  valid ? CheckStatus::kPass : CheckStatus::kFail});
    }
  }
  return checks.take();
}

std::vector<PinCheck> verify_view_pins(const AdmissionDocument& doc, const VerifyOptions& options) {
  Checks checks(options.skip_reason);
  check_view_pins(doc, options, &checks);
  return checks.take();
}

}  // namespace sealrun::admission
