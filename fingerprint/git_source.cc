// SPDX-License-Identifier: Apache-2.0
// read_git_identity() and export_git_commit(): see source.h and docs/source-manifest.md.
//
// A repository directory is only ever read by plumbing (rev-parse) and through its object files;
// anything that writes (an index, a checkout) happens in a throwaway bare repository that borrows
// the source's objects (alternates) and has none of its config, hooks or info/attributes. A bundle
// is verified (`git bundle verify`: complete, no missing prerequisites) in an empty repository and
// then cloned. The checkout applies no attribute-driven conversion (eol, ident, filter,
// working-tree-encoding are unset in the clone's info/attributes, which outranks the tree's
// .gitattributes), so the exported bytes are the committed blobs.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>

#include "core/atomic_write.h"
#include "fingerprint/git_run.h"
#include "fingerprint/source.h"

namespace sealrun {
namespace {

constexpr size_t kMaxRevBytes = 256;

Status check_rev(const std::string& rev) {
  if (rev.empty() || rev.size() > kMaxRevBytes || rev[0] == '-' ||
      rev.find_first_of(std::string("\0\n\r", 3)) != std::string::npos)
    return Error::make(fmt::format("revision '{}' is not a plain revision name", rev));
  return ok_status();
}

enum class SourceKind { kRepository, kBundle };

Result<SourceKind> kind_of_source(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Error::from_errno(fmt::format("source {}", path));
  if (S_ISDIR(st.st_mode)) return SourceKind::kRepository;
  if (S_ISREG(st.st_mode)) return SourceKind::kBundle;
  return Error::make(
      fmt::format("source {}: neither a repository directory nor a bundle file", path));
}

// The git directory of a repository path: <path>/.git (a directory or a "gitdir:" file) for a
// work tree, else the path itself (a bare repository). Named explicitly so that git's discovery
// (and GIT_DIR, GIT_CEILING_DIRECTORIES) never picks a different repository.
std::string git_dir_of(const std::string& repo) {
  std::string dotgit = repo + "/.git";
  struct stat st {};
  if (::lstat(dotgit.c_str(), &st) == 0) return dotgit;
  return repo;
}

// Checks the bundle in an empty repository, then clones it (bare) to `dest`.
Status clone_bundle(const std::string& bundle, const std::string& scratch,
                    const std::string& dest) {
  std::string verify_dir = scratch + "/verify.git";
  SEALRUN_TRY(
      run_git({"init", "-q", "--bare", "--template=", verify_dir}, "init scratch repository"));
  SEALRUN_TRY(run_git({"--git-dir=" + verify_dir, "bundle", "verify", "-q", bundle},
                      fmt::format("verify bundle {}", bundle)));
  SEALRUN_TRY(run_git({"clone", "-q", "--bare", "--template=", "--", bundle, dest},
                      fmt::format("clone bundle {}", bundle)));
  return ok_status();
}

// A scratch bare repository that borrows the source's object store through
// objects/info/alternates. Nothing runs inside the source repository (a clone would start
// upload-pack there, reading its config, and git refuses that for a repository owned by another
// user); only its object files are read, and the refs, config, hooks and index of the scratch
// repository are its own.
Status borrow_objects(const std::string& repo, const std::string& dest) {
  std::string objects =
      SEALRUN_TRY(run_git_line({"--git-dir=" + git_dir_of(repo), "rev-parse",
                                "--path-format=absolute", "--git-path", "objects"},
                               fmt::format("find the object store of {}", repo)));
  if (objects.empty() || objects[0] != '/')
    return Error::make(fmt::format("{}: git named no absolute object directory", repo));
  SEALRUN_TRY(run_git({"init", "-q", "--bare", "--template=", dest}, "init scratch repository"));
  if (::mkdir((dest + "/objects/info").c_str(), 0755) != 0 && errno != EEXIST)
    return Error::from_errno(fmt::format("create {}/objects/info", dest));
  return write_file_atomic(dest + "/objects/info/alternates", objects + "\n");
}

Result<GitIdentity> identity_in(const std::string& git_dir, const std::string& rev,
                                const std::string& what) {
  GitIdentity id;
  id.commit = SEALRUN_TRY(run_git_line(
      {"--git-dir=" + git_dir, "rev-parse", "--verify", "--end-of-options", rev + "^{commit}"},
      fmt::format("{}: resolve '{}' to a commit", what, rev)));
  id.tree = SEALRUN_TRY(run_git_line(
      {"--git-dir=" + git_dir, "rev-parse", "--verify", "--end-of-options", id.commit + "^{tree}"},
      fmt::format("{}: tree of commit {}", what, id.commit)));
  if (!is_git_object_name(id.commit) || !is_git_object_name(id.tree))
    return Error::make(
        fmt::format("{}: git printed '{}' / '{}', not object names", what, id.commit, id.tree));
  return id;
}

}  // namespace

Result<GitIdentity> read_git_identity(const std::string& repo_or_bundle, const std::string& rev) {
  SEALRUN_TRY(check_rev(rev));
  auto kind = SEALRUN_TRY(kind_of_source(repo_or_bundle));
  if (kind == SourceKind::kRepository)
    return identity_in(git_dir_of(repo_or_bundle), rev, repo_or_bundle);
  auto scratch = SEALRUN_TRY(ScopedTempDir::create("sealrun-git"));
  std::string clone = scratch.path() + "/repo.git";
  SEALRUN_TRY(clone_bundle(repo_or_bundle, scratch.path(), clone));
  return identity_in(clone, rev, repo_or_bundle);
}

Result<int64_t> read_git_commit_time(const std::string& repo_or_bundle, const std::string& commit) {
  if (!is_git_object_name(commit))
    return Error::make(fmt::format("commit '{}' is not a full object name", commit));
  auto kind = SEALRUN_TRY(kind_of_source(repo_or_bundle));
  std::optional<ScopedTempDir> scratch;
  std::string git_dir = git_dir_of(repo_or_bundle);
  if (kind == SourceKind::kBundle) {
    scratch.emplace(SEALRUN_TRY(ScopedTempDir::create("sealrun-git")));
    git_dir = scratch->path() + "/repo.git";
    SEALRUN_TRY(clone_bundle(repo_or_bundle, scratch->path(), git_dir));
  }
  // The raw commit object: plumbing, no pretty-format, no config consulted.
  std::string object =
      SEALRUN_TRY(run_git({"--git-dir=" + git_dir, "cat-file", "commit", commit},
                          fmt::format("{}: read commit {}", repo_or_bundle, commit)));
  // Header lines up to the first empty line; "committer NAME <EMAIL> SECONDS +ZZZZ".
  size_t pos = 0;
  while (pos < object.size() && object[pos] != '\n') {
    size_t end = object.find('\n', pos);
    if (end == std::string::npos) end = object.size();
    std::string_view line(object.data() + pos, end - pos);
    if (line.substr(0, 10) == "committer ") {
      size_t zone = line.rfind(' ');
      size_t secs = zone == std::string_view::npos ? zone : line.rfind(' ', zone - 1);
      if (secs != std::string_view::npos) {
        std::string_view digits = line.substr(secs + 1, zone - secs - 1);
        int64_t t = 0;
        bool good = !digits.empty() && digits.size() <= 18;
        for (char c : digits) {
          good = good && c >= '0' && c <= '9';
          t = t * 10 + (c - '0');
        }
        if (good) return t;
      }
      break;
    }
    pos = end + 1;
  }
  return Error::make(
      fmt::format("{}: commit {} has no readable committer time", repo_or_bundle, commit));
}

Status export_git_commit(const std::string& repo_or_bundle, const std::string& commit,
                         const std::string& expected_tree, const std::string& dest) {
  if (!is_git_object_name(commit))
    return Error::make(
        fmt::format("commit '{}' is not a full object name (40 or 64 lower-case "
                    "hex digits)",
                    commit));
  if (!is_git_object_name(expected_tree))
    return Error::make(fmt::format("expected tree '{}' is not a full object name", expected_tree));
  struct stat st {};
  if (::lstat(dest.c_str(), &st) == 0 || errno != ENOENT)
    return Error::make(fmt::format("{}: already exists; the export destination must be new", dest));
  auto kind = SEALRUN_TRY(kind_of_source(repo_or_bundle));

  auto scratch = SEALRUN_TRY(ScopedTempDir::create("sealrun-git"));
  std::string clone = scratch.path() + "/repo.git";
  if (kind == SourceKind::kBundle)
    SEALRUN_TRY(clone_bundle(repo_or_bundle, scratch.path(), clone));
  else
    SEALRUN_TRY(borrow_objects(repo_or_bundle, clone));

  // Everything from here on reads the clone, never the source again: what is checked is what is
  // checked out.
  auto id = SEALRUN_TRY(identity_in(clone, commit, repo_or_bundle));
  if (id.commit != commit)
    return Error::make(
        fmt::format("{}: '{}' resolves to commit {}", repo_or_bundle, commit, id.commit));
  if (id.tree != expected_tree)
    return Error::make(fmt::format("{}: tree mismatch: commit {} has tree {}, expected {}",
                                   repo_or_bundle, commit, id.tree, expected_tree));
  if (::mkdir((clone + "/info").c_str(), 0755) != 0 && errno != EEXIST)
    return Error::from_errno(fmt::format("create {}/info", clone));
  SEALRUN_TRY(write_file_atomic(clone + "/info/attributes",
                                "* -text -eol -crlf -ident -filter -working-tree-encoding\n"));

  if (::mkdir(dest.c_str(), 0755) != 0)
    return Error::from_errno(fmt::format("create export destination {}", dest));
  auto checkout = run_git({"--git-dir=" + clone, "--work-tree=" + dest, "-c", "core.bare=false",
                           "checkout", "-q", "-f", "--detach", "--no-recurse-submodules", commit},
                          fmt::format("check out {} into {}", commit, dest));
  if (!checkout.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(dest, ec);  // we made dest a moment ago; leave nothing half done
    return std::move(checkout).error();
  }
  return ok_status();
}

}  // namespace sealrun
