// SPDX-License-Identifier: Apache-2.0
// The run's own identity and the handover of its outputs: see run_handover.h.
#include "controller/run/run_handover.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "controller/run/run_context.h"
#include "core/proc.h"
#include "core/syscall.h"

namespace sealrun::run {

namespace {

constexpr mode_t kKeptBits = 0755;

// Owner, mode and ACLs of one open entry (a regular file, directory or FIFO).
Status fix_open(int fd, const struct stat& st, uid_t uid, gid_t gid, HandoverCounts& c,
                const std::string& what) {
  if (st.st_uid != uid || st.st_gid != gid) {
    if (::fchown(fd, uid, gid) != 0) return Error::from_errno("chown " + what);
    ++c.owner_changed;
  }
  mode_t mode = st.st_mode & 07777;
  if ((mode & (S_ISUID | S_ISGID)) != 0) ++c.set_id_cleared;
  if ((mode & (S_IWGRP | S_IWOTH | S_ISVTX)) != 0) ++c.write_cleared;
  // Always set: the kernel clears set-id bits of a file on chown, never of a directory, and the
  // mode is what this step promises, whatever it was.
  if (::fchmod(fd, mode & kKeptBits) != 0) return Error::from_errno("chmod " + what);
  for (const char* acl : {"system.posix_acl_access", "system.posix_acl_default"})
    // (ENOTSUP is EOPNOTSUPP on Linux: a file system without ACLs.)
    if (::fremovexattr(fd, acl) != 0 && errno != ENODATA && errno != EOPNOTSUPP && errno != EINVAL)
      return Error::from_errno(fmt::format("remove {} of {}", acl, what));
  return ok_status();
}

// One entry `name` of `dirfd`; returns the entry opened when it is a directory (to descend).
Result<std::optional<UniqueFd>> fix_entry(int dirfd, const std::string& name, uid_t uid, gid_t gid,
                                          HandoverCounts& c, const std::string& what) {
  struct stat st {};
  if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return std::optional<UniqueFd>();
    return Error::from_errno("stat " + what);
  }
  ++c.entries;
  if (S_ISLNK(st.st_mode)) {
    if (st.st_uid != uid || st.st_gid != gid) {
      if (::fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno("chown " + what);
      ++c.owner_changed;
    }
    return std::optional<UniqueFd>();
  }
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    // O_NONBLOCK: a FIFO opens without a writer; O_NOFOLLOW: what was a file is not now a link.
    int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY;
    if (S_ISDIR(st.st_mode)) flags |= O_DIRECTORY;
    auto fd = SEALRUN_TRY(open_at(dirfd, name, flags));
    auto now = SEALRUN_TRY(fstat_fd(fd.get(), what));
    if (now.st_ino != st.st_ino || now.st_dev != st.st_dev)
      return Error::make(what + " changed while it was handed over");
    SEALRUN_TRY(fix_open(fd.get(), now, uid, gid, c, what));
    if (S_ISDIR(st.st_mode)) return std::optional<UniqueFd>(std::move(fd));
    return std::optional<UniqueFd>();
  }
  // Sockets and devices cannot be opened for this: by name, which holds as no job process runs
  // and the directory is already the new owner's alone.
  if (::fchownat(dirfd, name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) != 0)
    return Error::from_errno("chown " + what);
  if (st.st_uid != uid || st.st_gid != gid) ++c.owner_changed;
  mode_t mode = st.st_mode & 07777;
  if ((mode & (S_ISUID | S_ISGID)) != 0) ++c.set_id_cleared;
  if ((mode & (S_IWGRP | S_IWOTH | S_ISVTX)) != 0) ++c.write_cleared;
  if (::fchmodat(dirfd, name.c_str(), mode & kKeptBits, 0) != 0)
    return Error::from_errno("chmod " + what);
  return std::optional<UniqueFd>();
}

// One directory on the way down: its entries, the next to visit, and who it is (to check the way
// back up through "..", which holds only one descriptor open at a time, however deep the tree).
struct HandoverLevel {
  std::vector<std::string> names;
  size_t next = 0;
  dev_t dev = 0;
  ino_t ino = 0;
};

}  // namespace

Result<HandoverCounts> hand_over_tree(const StateDir& state, const std::string& dir, uid_t uid,
                                      gid_t gid) {
  HandoverCounts c;
  if (!state.exists(dir)) return c;
  auto root = SEALRUN_TRY(state.open(dir, O_RDONLY | O_DIRECTORY));
  auto st = SEALRUN_TRY(fstat_fd(root.get(), dir));
  ++c.entries;
  SEALRUN_TRY(fix_open(root.get(), st, uid, gid, c, dir));
  UniqueFd cur = std::move(root);
  std::vector<HandoverLevel> stack;
  stack.push_back({list_dir_names(cur.get()), 0, st.st_dev, st.st_ino});
  std::string path = dir;  // for messages only
  while (!stack.empty()) {
    HandoverLevel& level = stack.back();
    if (level.next == level.names.size()) {
      stack.pop_back();
      if (stack.empty()) break;
      auto up = SEALRUN_TRY(open_at(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
      auto ust = SEALRUN_TRY(fstat_fd(up.get(), path + "/.."));
      if (ust.st_dev != stack.back().dev || ust.st_ino != stack.back().ino)
        return Error::make(path + " was moved while it was handed over");
      cur = std::move(up);
      path.resize(path.rfind('/'));
      continue;
    }
    const std::string name = level.names[level.next++];
    std::string what = path + "/" + name;
    auto sub = SEALRUN_TRY(fix_entry(cur.get(), name, uid, gid, c, what));
    if (!sub || !*sub) continue;
    auto sst = SEALRUN_TRY(fstat_fd(sub->get(), what));
    std::vector<std::string> names = list_dir_names(sub->get());
    cur = std::move(*sub);
    path = what;
    stack.push_back({std::move(names), 0, sst.st_dev, sst.st_ino});
  }
  return c;
}

Result<JobUser> take_job_ids(RunContext& run, const JobUser& user) {
  if (!user.drop) return user;
  auto start = own_starttime();
  JobIdHolder holder{run.state->path(), run.req.id, ::getpid(), start ? *start : "", ""};
  JobIds ids =
      SEALRUN_TRY(allocate_job_ids(user, run.mechanism_context.job_id_pool, std::move(holder)));
  run.job_ids = ids;
  JobUser mine = user;
  mine.uid = ids.uid;
  mine.gid = ids.gid;
  return mine;
}

void hand_over_outputs(RunContext& run) {
  if (!run.owned_claimed || !run.job_ids) return;
  auto c = hand_over_tree(*run.state, run.layout.output_dir, ::getuid(), ::getgid());
  run.cleanup_action(
      "hand the outputs over", c ? ok_status() : Status(c.error()),
      c ? fmt::format("{} entries owned by uid {} gid {}; set-id bits removed from {}, group/other "
                      "write from {}",
                      c->entries, ::getuid(), ::getgid(), c->set_id_cleared, c->write_cleared)
        : run.layout.output_dir);
}

Status give_back_job_ids(RunContext& run) {
  if (!run.job_ids) return ok_status();
  // A resource group confirmed empty held every process of the job: none can have the ids. Without
  // one, the host's processes are looked at; the job's last may still be on their way out.
  bool group_empty = run.group && run.receipt.stop_confirmed;
  int64_t deadline = monotonic_ms() + 2000;
  while (!group_empty && id_has_process(run.job_ids->uid, run.job_ids->gid) &&
         monotonic_ms() < deadline)
    ::usleep(10000);
  if (!group_empty && id_has_process(run.job_ids->uid, run.job_ids->gid))
    return Error::make(fmt::format("a process still runs as uid {} or gid {}: kept",
                                   run.job_ids->uid, run.job_ids->gid));
  SEALRUN_TRY(release_job_ids(run.mechanism_context.job_id_pool, run.job_ids->uid,
                              run.state->path(), run.req.id));
  run.job_ids.reset();
  return ok_status();
}

std::vector<SweepStep> sweep_job_ids(const StateDir& state, const GrantRecord& r,
                                     const JobIdPool& pool) {
  std::vector<SweepStep> steps;
  if (r.job_uid < 0) return steps;
  auto uid = static_cast<uid_t>(r.job_uid);
  auto gid = static_cast<gid_t>(r.job_gid);
  std::string out = fmt::format("{}/results/{}/out", state.path(), r.id);
  auto c = hand_over_tree(state, out, ::getuid(), ::getgid());
  steps.push_back({"outputs " + out,
                   c ? fmt::format("handed over ({} entries; set-id removed from {}, group/other "
                                   "write from {})",
                                   c->entries, c->set_id_cleared, c->write_cleared)
                     : "not handed over: " + c.error().message(),
                   !c.ok()});
  if (!c) return steps;
  Status released = id_has_process(uid, gid) ? Status(Error::make("a process still runs as it"))
                                             : release_job_ids(pool, uid, state.path(), r.id);
  steps.push_back({fmt::format("job uid {} gid {}", uid, gid),
                   released ? "given back" : "kept: " + released.error().message(),
                   !released.ok()});
  return steps;
}

}  // namespace sealrun::run
