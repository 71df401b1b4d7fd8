// SPDX-License-Identifier: Apache-2.0
// The owned file system's record: see record.h.
#include "containment/ownedfs/record.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "containment/ownedfs/ownedfs.h"
#include "core/bounded_file.h"
#include "core/json_field.h"
#include "core/run_id.h"
#include "core/strict_json.h"
#include "core/syscall.h"

namespace sealrun::ownedfs {
namespace {

constexpr const char* kSchema = "sealrun-ownedfs-v1";
constexpr size_t kMaxRecordBytes = 16 * 1024;

}  // namespace

std::string record_to_json(const Record& r) {
  nlohmann::json j = {
      {"schema", kSchema},
      {"id", r.id},
      {"controller_pid", r.controller_pid},
      {"controller_start", r.controller_start},
      {"image", r.image},
      {"mount_point", r.mount_point},
      {"loop_device", r.loop_device},
      {"size_bytes", r.size_bytes},
      {"inodes", r.inodes},
      {"created_at", r.created_at},
  };
  return j.dump(2) + "\n";
}

Result<Record> record_from_json(std::string_view text) {
  nlohmann::json j = SEALRUN_TRY_CTX(parse_strict_json(text, 2), "not JSON");
  if (!j.is_object()) return Error::make("not a JSON object");
  std::string schema = SEALRUN_TRY(json_string_field(j, "schema"));
  if (schema != kSchema)
    return Error::make(fmt::format("schema is '{}', expected '{}'", schema, kSchema));
  Record r;
  r.id = SEALRUN_TRY(json_string_field(j, "id"));
  if (!is_valid_fs_id(r.id)) return Error::make(fmt::format("id '{}' is not valid", r.id));
  uint64_t pid = SEALRUN_TRY(json_uint_field(j, "controller_pid"));
  if (pid == 0 || pid > INT32_MAX) return Error::make("controller_pid is out of range");
  r.controller_pid = static_cast<pid_t>(pid);
  r.controller_start = SEALRUN_TRY(json_string_field(j, "controller_start"));
  r.image = SEALRUN_TRY(json_string_field(j, "image"));
  r.mount_point = SEALRUN_TRY(json_string_field(j, "mount_point"));
  r.loop_device = SEALRUN_TRY(json_string_field(j, "loop_device"));
  r.size_bytes = SEALRUN_TRY(json_uint_field(j, "size_bytes"));
  r.inodes = SEALRUN_TRY(json_uint_field(j, "inodes"));
  r.created_at = SEALRUN_TRY(json_string_field(j, "created_at"));
  return r;
}

Result<UniqueFd> open_ownedfs_dir(const std::string& state_dir, bool create) {
  std::string dir = state_dir + "/ownedfs";
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::from_errno("mkdir " + dir);
  auto fd = SEALRUN_TRY_CTX(open_at(AT_FDCWD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
                            "open " + dir + " (a symlink is refused)");
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), dir));
  if (st.st_uid != ::geteuid())
    return Error::make(fmt::format("{} belongs to uid {}, not to us (uid {}); refusing to trust it",
                                   dir, st.st_uid, ::geteuid()));
  if ((st.st_mode & 022) != 0)
    return Error::make(fmt::format("{} is writable by others (mode {:o}); refusing to trust it",
                                   dir, st.st_mode & 07777));
  return fd;
}

Status write_record(int dirfd, const Record& r, bool replace, bool durable) {
  if (!is_valid_fs_id(r.id)) return Error::make(fmt::format("run id '{}' is not valid", r.id));
  std::string tmp = "." + record_name(r.id) + ".tmp";
  ::unlinkat(dirfd, tmp.c_str(), 0);  // a leftover of an interrupted write
  {
    auto fd = SEALRUN_TRY(open_at(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
    SEALRUN_TRY(write_all(fd.get(), record_to_json(r), "ownedfs record"));
    if (durable && ::fsync(fd.get()) != 0) return Error::from_errno("fsync ownedfs record");
  }
  if (::renameat2(dirfd, tmp.c_str(), dirfd, record_name(r.id).c_str(),
                  replace ? 0 : RENAME_NOREPLACE) != 0) {
    Error e = errno == EEXIST
                  ? Error::from_errno(fmt::format(
                        "{} exists (left by a killed run? run `sealrun sweep`)", record_name(r.id)))
                  : Error::from_errno("rename ownedfs record " + record_name(r.id));
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return e;
  }
  if (durable && ::fsync(dirfd) != 0) return Error::from_errno("fsync the ownedfs directory");
  return ok_status();
}

Result<Record> read_record(int dirfd, const std::string& name) {
  std::string text = SEALRUN_TRY(read_bounded_file(dirfd, name, kMaxRecordBytes));
  return record_from_json(text);
}

Status remove_record(int dirfd, const std::string& id) {
  // No directory fsync: a removal lost in a crash brings back a record whose file system is gone
  // (its loop device and mount do not outlive a reboot; an image that comes back with it is
  // removed with it), which `sealrun sweep` reports as already gone and removes again.
  if (::unlinkat(dirfd, record_name(id).c_str(), 0) != 0 && errno != ENOENT)
    return Error::from_errno("remove record " + record_name(id));
  return ok_status();
}

Result<std::vector<std::string>> list_names(int dirfd) {
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
  if (dup < 0) return Error::from_errno("dup the ownedfs directory");
  std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(dup), &::closedir);
  if (!d) {
    ::close(dup);
    return Error::from_errno("read the ownedfs directory");
  }
  ::rewinddir(d.get());
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace sealrun::ownedfs
