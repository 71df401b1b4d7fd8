// SPDX-License-Identifier: Apache-2.0
// The bwrap probe cache: see bwrap_probe_cache.h. The entry on disk:
//   {"format": 1, "entry": {"key": {...}, "probe": {...}}, "sha256": SHA-256 of entry's dump()}
// nlohmann's dump() of a parsed object is canonical (keys sorted), so the digest is recomputed
// from what was read; a flipped byte anywhere makes the entry corrupt, not wrong.
#include "containment/bwrap_probe_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "containment/probe_json.h"
#include "containment/seccomp_policy.h"
#include "core/atomic_write.h"
#include "core/proc.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "core/version.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/sha256.h"

namespace sealrun::bwrap_internal {

namespace {

constexpr int kFormat = 1;
constexpr size_t kMaxEntryBytes = 64 * 1024;

std::string read_small(const std::string& path) {
  auto fd = open_at(AT_FDCWD, path, O_RDONLY);
  if (!fd) return {};
  auto text = read_up_to(fd->get(), 4096, path);
  std::string s = text ? *text : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

Result<MechanismProbe> probe_from_json(const nlohmann::json& j) {
  try {
    MechanismProbe p;
    p.name = j.at("name").get<std::string>();
    p.available = j.at("available").get<bool>();
    p.path = j.at("path").get<std::string>();
    p.version = j.at("version").get<std::string>();
    for (const auto& d : j.at("dimensions")) {
      auto dim = parse_dimension(d.at("dimension").get<std::string>());
      if (!dim) return Error::make("unknown dimension " + d.at("dimension").dump());
      p.dimensions.push_back(
          {*dim, d.at("enforceable").get<bool>(), d.at("why").get<std::string>()});
    }
    if (p.name != "bwrap" || !p.available) return Error::make("not an available bwrap probe");
    return p;
  } catch (const std::exception& e) {
    return Error::make(std::string("malformed: ") + e.what());
  }
}

}  // namespace

nlohmann::json ProbeCacheKey::to_json() const {
  return {{"bwrap_path", bwrap_path},
          {"bwrap_sha256", bwrap_sha256},
          {"kernel_release", kernel_release},
          {"boot_id", boot_id},
          {"id_maps", id_maps},
          {"userns_sysctls", userns_sysctls},
          {"seccomp_sha256", seccomp_sha256},
          {"sealrun_version", sealrun_version}};
}

std::string ProbeCacheKey::digest() const { return sha256_hex(to_json().dump()); }

Result<ProbeCacheKey> probe_cache_key(const std::string& bwrap_path,
                                      const std::optional<JobUser>& run_as,
                                      const std::string& proc_sys) {
  ProbeCacheKey k;
  k.bwrap_path = bwrap_path;
  k.bwrap_sha256 = SEALRUN_TRY_CTX(hash_file(bwrap_path), "hash the bwrap binary").sha256;
  struct utsname u {};
  if (::uname(&u) != 0) return Error::from_errno("uname");
  k.kernel_release = u.release;
  auto boot_id = read_boot_id(proc_sys + "/kernel/random/boot_id");
  if (!boot_id)
    return Error::make("no boot id at " + proc_sys + "/kernel/random/boot_id: nothing to cache by");
  k.boot_id = std::move(*boot_id);
  k.id_maps = run_as ? fmt::format("uid {} gid {}", run_as->uid, run_as->gid)
                     : fmt::format("uid {} gid {}", ::geteuid(), ::getegid());
  k.userns_sysctls = fmt::format("max_user_namespaces={} unprivileged_userns_clone={}",
                                 read_small(proc_sys + "/user/max_user_namespaces"),
                                 read_small(proc_sys + "/kernel/unprivileged_userns_clone"));
  k.seccomp_sha256 = sha256_hex(
      SEALRUN_TRY_CTX(compile_seccomp_bpf(job_seccomp_policy()), "compile seccomp policy"));
  SealrunVersion v = sealrun_version();
  k.sealrun_version = fmt::format("{} {}{}", v.version, v.commit, v.dirty ? " dirty" : "");
  return k;
}

std::optional<MechanismProbe> load_cached_probe(const std::string& dir, const ProbeCacheKey& key,
                                                std::string* why) {
  std::string path = dir + "/" + kProbeCacheFile;
  auto fd = open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (!fd) {
    *why = fd.error().err() == ENOENT ? "no entry" : "unreadable: " + fd.error().message();
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0) {
    *why = "not a private regular file of the controller's user";
    return std::nullopt;
  }
  auto bytes = read_up_to(fd->get(), kMaxEntryBytes + 1, path);
  if (!bytes || bytes->size() > kMaxEntryBytes) {
    *why = "corrupt: unreadable or larger than 64 KiB";
    return std::nullopt;
  }
  auto doc = parse_strict_json(*bytes);
  if (!doc || !doc->is_object() || !doc->contains("entry") || !doc->contains("sha256") ||
      !(*doc)["sha256"].is_string()) {
    *why = "corrupt: " + (doc ? std::string("not a cache entry") : doc.error().message());
    return std::nullopt;
  }
  const nlohmann::json& entry = (*doc)["entry"];
  if (sha256_hex(entry.dump()) != (*doc)["sha256"].get<std::string>() ||
      doc->value("format", 0) != kFormat) {
    *why = "corrupt: its digest does not match its contents";
    return std::nullopt;
  }
  if (!entry.is_object() || !entry.contains("key") || !entry.contains("probe")) {
    *why = "corrupt: not a cache entry";
    return std::nullopt;
  }
  const nlohmann::json& k = entry["key"];
  nlohmann::json want = key.to_json();
  if (k != want) {
    if (!k.is_object() || k.value("boot_id", "") != key.boot_id)
      *why = "written in another boot (boot id differs)";
    else if (k.value("bwrap_path", "") != key.bwrap_path ||
             k.value("bwrap_sha256", "") != key.bwrap_sha256)
      *why = "the bwrap binary changed";
    else
      *why = "written for another kernel, job user, policy or sealrun version";
    return std::nullopt;
  }
  auto probe = probe_from_json(entry["probe"]);
  if (!probe) {
    *why = "corrupt: " + probe.error().message();
    return std::nullopt;
  }
  *why = "hit";
  return *probe;
}

Status store_cached_probe(const std::string& dir, const ProbeCacheKey& key,
                          const MechanismProbe& probe) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::from_errno("make the probe cache directory " + dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0)
    return Error::make(dir + " is not a private directory of the controller's user");
  nlohmann::json entry = {{"key", key.to_json()}, {"probe", probe_to_json(probe)}};
  nlohmann::json doc = {
      {"format", kFormat}, {"entry", entry}, {"sha256", sha256_hex(entry.dump())}};
  return write_file_atomic(dir + "/" + kProbeCacheFile, doc.dump(2) + "\n", 0600);
}

}  // namespace sealrun::bwrap_internal
