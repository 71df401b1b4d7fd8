// SPDX-License-Identifier: Apache-2.0
// The owned file system's record: STATE/ownedfs/<id>.json, written (atomically, not fsync'd: the
// run's grant record is the durable anchor, see create.cc) before the image exists and rewritten
// once the loop device is known, removed last. It names the controller
// (pid + starttime, so sweep can tell a dead controller from a live one) and what was made. The
// directory STATE/ownedfs is root's own (0700): a record or image there was put there by sealrun.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun::ownedfs {

struct Record {
  std::string id;
  pid_t controller_pid = 0;
  std::string controller_start;  // /proc/<pid>/stat starttime
  std::string image;             // STATE/ownedfs/<id>.img
  std::string mount_point;       // STATE/owned/<id>
  std::string loop_device;       // /dev/loopN once attached, else ""
  uint64_t size_bytes = 0;
  uint64_t inodes = 0;
  std::string created_at;  // RFC 3339 UTC
};

std::string record_to_json(const Record& r);
Result<Record> record_from_json(std::string_view text);

inline std::string record_name(const std::string& id) { return id + ".json"; }
inline std::string image_name(const std::string& id) { return id + ".img"; }

// STATE/ownedfs, opened by descriptor (a symlink is refused); created 0700 when `create`. It must
// belong to us and be writable by nobody else, or it is refused: what is recorded there gets
// unmounted and deleted.
Result<UniqueFd> open_ownedfs_dir(const std::string& state_dir, bool create);

// Atomic write of <dir>/<id>.json (temporary + rename; with `durable`, fsync of both and of the
// directory). `replace` false: fails with EEXIST when a record of that id is there (a killed
// run's, for sweep).
Status write_record(int dirfd, const Record& r, bool replace, bool durable);
Result<Record> read_record(int dirfd, const std::string& name);
Status remove_record(int dirfd, const std::string& id);

// The names in the directory (sorted), for sweep.
Result<std::vector<std::string>> list_names(int dirfd);

}  // namespace sealrun::ownedfs
