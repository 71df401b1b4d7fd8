// SPDX-License-Identifier: Apache-2.0
// freeze_closure_from(): see closure_from.h.
#include "controller/cli/closure_from.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <filesystem>

#include "admission/document.h"
#include "admission/path_rules.h"
#include "controller/cli/printing.h"
#include "core/atomic_write.h"
#include "core/bounded_file.h"
#include "core/exit_codes.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"
#include "learn/closure_carry.h"
#include "learn/closure_pins.h"

namespace sealrun::cli {

namespace {

// The job path a "--tree HOST_DIR[=JOB_PATH]" spec names (freeze checks the spec itself).
std::string tree_job_path(const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq != std::string::npos) return spec.substr(eq + 1);
  std::string host = std::filesystem::absolute(spec).lexically_normal().string();
  if (host.size() > 1 && host.back() == '/') host.pop_back();
  return host;
}

Result<admission::AdmissionDocument> read_other(const std::string& path) {
  auto bytes = SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, path, admission::kMaxAdmissionBytes),
                               "--closure-from " + path);
  auto doc = SEALRUN_TRY_CTX(admission::parse_admission_bytes(bytes), "--closure-from " + path);
  if (doc.host_files.empty())
    return Error::make(fmt::format(
        "--closure-from {}: it has no learned closure (host_files) to take; learn one first with "
        "admit freeze --learn",
        path));
  return doc;
}

// The request this freeze makes its base admission from: the other admission's toolchain and
// trees where this freeze names none of its own in their place, and a closure to come.
admission::FreezeRequest base_request(admission::FreezeRequest request,
                                      const admission::AdmissionDocument& other,
                                      ClosureFromAdmission* out) {
  request.closure_follows = true;
  if (other.toolchain && request.toolchain.empty() && !request.toolchain_pin) {
    request.toolchain = other.toolchain->root;
    if (request.toolchain_mount.empty()) request.toolchain_mount = other.toolchain->mount_path;
    out->toolchain_carried = true;
  }
  std::vector<std::string> own;
  for (const std::string& spec : request.trees) own.push_back(tree_job_path(spec));
  for (const admission::TreePin& t : other.trees) {
    bool replaced = false;  // a --tree of this freeze at (or around) the same place wins
    for (const std::string& job : own)
      replaced = replaced || admission::paths_overlap(job, t.job_path);
    if (replaced) continue;
    request.trees.push_back(t.host_path + "=" + t.job_path);
    ++out->trees_carried;
  }
  return request;
}

}  // namespace

Result<ClosureFromAdmission> freeze_closure_from(const admission::FreezeRequest& request,
                                                 const ClosureFromOptions& options) {
  if (request.out.empty()) return Error::make("--out: a path for the admission is required");
  struct stat st {};
  if (!request.force && ::lstat(request.out.c_str(), &st) == 0)
    return Error::make(fmt::format("{}: exists; pass --force to replace it", request.out));
  admission::AdmissionDocument other = SEALRUN_TRY(read_other(options.from));

  ClosureFromAdmission out;
  admission::FreezeRequest req = base_request(request, other, &out);
  std::string base = SEALRUN_TRY(admission::freeze_to_bytes(req));
  admission::ParseOptions to_come;
  to_come.closure_follows = true;
  auto doc = SEALRUN_TRY(admission::parse_admission_bytes(base, to_come));
  if (doc.image)
    return Error::make(
        "--closure-from with an image: the job of an image admission sees the image's file "
        "system, not the host's, so a host closure has no place in it; leave out --image (or "
        "--closure-from)");

  int64_t started = monotonic_ms();
  learn::CarriedClosure carried = learn::carry_closure(other, learn::pinned_places(doc));
  learn::Closure now = SEALRUN_TRY_CTX(learn::look_again(carried),
                                       "--closure-from " + options.from + "; nothing was written");
  auto pinned = SEALRUN_TRY(learn::pin_closure(now, options.max_bytes, options.hash_progress));
  // What is written must parse as it is (a toolchain or the closure in its place).
  std::string bytes = SEALRUN_TRY(learn::checked_admission_bytes(base, pinned));
  SEALRUN_TRY_CTX(write_file_atomic(request.out, bytes, 0644), "write " + request.out);
  out.hash_ms = monotonic_ms() - started;
  out.path = request.out;
  out.sha256 = sha256_hex(bytes);
  out.files = pinned.files.size();
  out.links = pinned.links.size();
  out.dirs = pinned.dirs.size();
  out.bytes = pinned.bytes;
  out.dropped = carried.dropped;
  out.changed = learn::changed_since(carried, pinned);
  return out;
}

int closure_from_command(const admission::FreezeRequest& request, const ClosureFromOptions& options,
                         bool json) {
  auto frozen = freeze_closure_from(request, options);
  if (stderr_is_terminal() && options.hash_progress) fmt::print(stderr, "\r\033[K");
  if (!frozen.ok()) {
    print_error("admit freeze --closure-from", frozen.error());
    return kExitFailure;
  }
  if (json) {
    print_json({{"path", frozen->path},
                {"sha256", frozen->sha256},
                {"host_files", frozen->files},
                {"host_links", frozen->links},
                {"host_dirs", frozen->dirs},
                {"hashed_bytes", frozen->bytes},
                {"dropped", frozen->dropped},
                {"changed", frozen->changed},
                {"hash_ms", frozen->hash_ms}});
    return kExitOk;
  }
  for (const std::string& path : frozen->changed)
    fmt::print(stderr, "changed since {}: {}\n", options.from, path);
  std::string carried;
  if (frozen->toolchain_carried) carried += ", its toolchain";
  if (frozen->trees_carried > 0) carried += fmt::format(", {} of its trees", frozen->trees_carried);
  fmt::print(stderr,
             "re-pinned the closure of {}{}: {} host files ({:.1f} MiB), {} links, {} directories "
             "in {} ms; {} changed since, {} left out under this admission's own pins\n",
             options.from, carried, frozen->files, static_cast<double>(frozen->bytes) / (1 << 20),
             frozen->links, frozen->dirs, frozen->hash_ms, frozen->changed.size(), frozen->dropped);
  fmt::print("{}  {}\n", frozen->sha256, frozen->path);
  return kExitOk;
}

}  // namespace sealrun::cli
