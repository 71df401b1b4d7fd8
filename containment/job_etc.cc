// SPDX-License-Identifier: Apache-2.0
// The job's /etc: see job_etc.h.
#include "containment/job_etc.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "containment/view_plan.h"
#include "core/generated_etc.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"

namespace sealrun {

namespace {

constexpr uint32_t kNobody = 65534;

// A name that cannot break a passwd or group line (':' and newlines separate its fields).
std::string field_safe(const std::string& name) {
  if (name.empty() || name.find_first_of(":\n,") != std::string::npos) return "job";
  return name;
}

// name:x:id:... lines with each name and id once, the first one kept.
struct Table {
  std::set<std::string> names;
  std::set<uint32_t> ids;
  std::string text;
  void add(const std::string& name, uint32_t id, const std::string& line) {
    if (!names.insert(name).second || !ids.insert(id).second) return;
    text += line + "\n";
  }
};

std::string passwd(const JobIdentity& who) {
  Table t;
  t.add("root", 0, "root:x:0:0:root:/root:/bin/sh");
  std::string user = field_safe(who.user);
  t.add(
      user, who.uid,
      fmt::format("{}:x:{}:{}:{}:{}:/bin/sh", user, who.uid, who.gid, user, field_safe(who.home)));
  t.add("nobody", kNobody, "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin");
  return t.text;
}

std::string group(const JobIdentity& who) {
  Table t;
  t.add("root", 0, "root:x:0:");
  std::string name = field_safe(who.user);
  t.add(name, who.gid, fmt::format("{}:x:{}:", name, who.gid));
  t.add("nogroup", kNobody, "nogroup:x:65534:");
  return t.text;
}

std::string hosts(std::string_view hostname) {
  return fmt::format(
      "127.0.0.1\tlocalhost\n"
      "::1\tlocalhost ip6-localhost ip6-loopback\n"
      "127.0.1.1\t{}\n",
      hostname);
}

// Every database glibc reads from /etc, from its files: no network service, no systemd, no
// sss or LDAP module is ever loaded, so no host library the closure did not pin is looked for.
constexpr std::string_view kNsswitch =
    "# Made by sealrun for this job: every name comes from the job's own files.\n"
    "passwd:    files\n"
    "group:     files\n"
    "shadow:    files\n"
    "gshadow:   files\n"
    "hosts:     files\n"
    "networks:  files\n"
    "protocols: files\n"
    "services:  files\n"
    "ethers:    files\n"
    "rpc:       files\n"
    "netgroup:  files\n";

constexpr std::string_view kResolv =
    "# Made by sealrun for this job: it has no network, so it has no resolver.\n";

// Whether bwrap can put a file at `path`: nothing but the empty root is there, or the innermost
// mount covering it is read-only and holds a regular file at that place (bwrap binds over it).
bool can_bind_at(const ContainmentSpec& spec, const std::string& path) {
  const MountSpec* cover = nullptr;
  for (const MountSpec& m : spec.mounts)
    if (at_or_below(path, m.target) &&
        (cover == nullptr || m.target.size() >= cover->target.size()))
      cover = &m;
  if (cover == nullptr) return true;
  if (cover->access != MountSpec::Access::kReadOnly) return false;
  std::string host = cover->source + path.substr(cover->target == "/" ? 0 : cover->target.size());
  struct stat st {};
  return ::lstat(host.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

std::vector<JobEtcFile> job_etc_files(const JobIdentity& who, std::string_view hostname) {
  return {
      {"/etc/passwd", "passwd", passwd(who)},
      {"/etc/group", "group", group(who)},
      {"/etc/hosts", "hosts", hosts(hostname)},
      {"/etc/hostname", "hostname", fmt::format("{}\n", hostname)},
      {"/etc/nsswitch.conf", "nsswitch.conf", std::string(kNsswitch)},
      {"/etc/resolv.conf", "resolv.conf", std::string(kResolv)},
  };
}

JobIdentity bwrap_job_identity(const ContainmentSpec& spec, const JobUser& user) {
  JobIdentity who;
  who.user = user.name;
  who.uid = spec.uid_in_job ? *spec.uid_in_job : user.uid;
  who.gid = spec.uid_in_job ? *spec.uid_in_job : user.gid;
  who.home = "/";
  for (const MountSpec& m : spec.mounts)
    if (m.kind == ViewKind::kScratch) who.home = m.target;
  return who;
}

std::string job_etc_dir(const ContainmentSpec& spec) { return spec.owned_root + "/view"; }

std::vector<ViewEntry> job_etc_entries(const ContainmentSpec& spec, const JobUser& user) {
  std::vector<ViewEntry> out;
  if (spec.image) return out;
  for (const JobEtcFile& f : job_etc_files(bwrap_job_identity(spec, user), spec.hostname)) {
    if (!can_bind_at(spec, f.job_path)) continue;
    out.push_back({f.job_path,
                   ViewKind::kGenerated,
                   job_etc_dir(spec) + "/" + f.name,
                   "sha256:" + sha256_hex(f.bytes),
                   false,
                   {},
                   -1});
  }
  return out;
}

Result<std::vector<JobEtcFd>> write_job_etc(const ContainmentSpec& spec, const JobUser& user) {
  std::vector<JobEtcFd> out;
  const std::vector<JobEtcFile> files =
      job_etc_files(bwrap_job_identity(spec, user), spec.hostname);
  const std::string dir = job_etc_dir(spec);
  bool made_dir = false;
  for (const ViewEntry& e : spec.files_and_links) {
    if (e.kind != ViewKind::kGenerated || !is_generated_etc_path(e.job_path)) continue;
    const JobEtcFile* file = nullptr;
    for (const JobEtcFile& f : files)
      if (f.job_path == e.job_path) file = &f;
    if (file == nullptr || e.host_path != dir + "/" + file->name ||
        e.pin != "sha256:" + sha256_hex(file->bytes))
      return Error::make(
          fmt::format("the view's generated file {} ({}, {}) is not what this spec makes",
                      e.job_path, e.host_path, e.pin));
    if (!made_dir) {
      // New for this run (the owned root is fresh); a link or another's directory is refused.
      SEALRUN_TRY(make_dir_at(AT_FDCWD, dir, 0755));
      auto st = SEALRUN_TRY(lstat_at(AT_FDCWD, dir));
      if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
        return Error::make(fmt::format("{} is not a directory of this controller's user", dir));
      made_dir = true;
    }
    {
      auto fd = SEALRUN_TRY(open_at(AT_FDCWD, e.host_path,
                                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
      SEALRUN_TRY(write_all(fd.get(), file->bytes, e.host_path));
      if (::fchmod(fd.get(), 0644) != 0) return Error::from_errno("chmod " + e.host_path);
    }
    // What bwrap copies is read back through the very descriptor it is handed.
    auto fd = SEALRUN_TRY(open_at(AT_FDCWD, e.host_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    std::string back(file->bytes.size() + 1, '\0');
    ssize_t n = ::pread(fd.get(), back.data(), back.size(), 0);
    if (n < 0) return Error::from_errno("read back " + e.host_path);
    back.resize(static_cast<size_t>(n));
    if ("sha256:" + sha256_hex(back) != e.pin)
      return Error::make(fmt::format("{} does not read back as written ({})", e.host_path, e.pin));
    out.push_back({e.job_path, std::move(fd)});
  }
  return out;
}

}  // namespace sealrun
