// SPDX-License-Identifier: Apache-2.0
// own_view_entries() and write_generated_files(): see podman_view.h.
#include "containment/podman_view.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/syscall.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"

namespace sealrun::podman {

Result<std::vector<ViewEntry>> own_view_entries(const ContainmentSpec& spec,
                                                const HostFacts& facts) {
  std::vector<ViewEntry> out;
  for (const GeneratedFile& g : generated_files(spec))
    out.push_back({g.job_path,
                   ViewKind::kGenerated,
                   g.host_path,
                   "sha256:" + sha256_hex(g.bytes),
                   false,
                   {},
                   -1});
  if (facts.have_init) {
    // podman binds its init_path following links (/usr/libexec/podman/catatonit is one); the
    // file it reaches is the one hashed and then named to podman with --init-path.
    char resolved[PATH_MAX];
    if (::realpath(facts.init_path.c_str(), resolved) == nullptr)
      return Error::from_errno("resolve podman's init binary " + facts.init_path);
    auto digest = SEALRUN_TRY_CTX(hash_file(resolved), "hash podman's init binary");
    out.push_back(
        {"/run/podman-init", ViewKind::kInit, resolved, "sha256:" + digest.sha256, false, {}, -1});
  }
  return out;
}

Status write_generated_files(const ContainmentSpec& spec, std::vector<std::string>& actions) {
  bool made_dir = false;
  for (const GeneratedFile& g : generated_files(spec)) {
    const ViewEntry* entry = nullptr;
    for (const ViewEntry& e : spec.files_and_links)
      if (e.kind == ViewKind::kGenerated && e.job_path == g.job_path) entry = &e;
    if (entry == nullptr) continue;  // not in the view: podman generates its own
    if (entry->host_path != g.host_path || entry->pin != "sha256:" + sha256_hex(g.bytes))
      return Error::make(
          fmt::format("the view's generated file {} ({}, {}) is not what this spec makes",
                      g.job_path, entry->host_path, entry->pin));
    std::string dir = g.host_path.substr(0, g.host_path.rfind('/'));
    if (!made_dir) {
      // Root's and not the job user's (podman's storage is theirs): nobody but root changes it
      // while the job runs. Absent before (a fresh owned root); a link there is refused.
      if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
        return Error::from_errno("make " + dir);
      auto st = SEALRUN_TRY(lstat_at(AT_FDCWD, dir));
      if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return Error::make(fmt::format("{} is not a directory of this controller's user", dir));
      made_dir = true;
    }
    auto fd = SEALRUN_TRY(
        open_at(AT_FDCWD, g.host_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    SEALRUN_TRY(write_all(fd.get(), g.bytes, g.host_path));
    if (::fchmod(fd.get(), 0644) != 0) return Error::from_errno("chmod " + g.host_path);
    actions.push_back(
        fmt::format("wrote {} for the job's {} ({})", g.host_path, g.job_path, entry->pin));
  }
  return ok_status();
}

}  // namespace sealrun::podman
