// SPDX-License-Identifier: Apache-2.0
// AccessRecorder: see access_recorder.h.
#include "learn/access_recorder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/beneath.h"
#include "core/bounded_file.h"
#include "core/proc.h"
#include "core/syscall.h"

namespace sealrun::learn {

namespace {

// FAN_ONDIR: opens of directories too (that is how a directory is listed). FAN_OPEN_EXEC is
// reported with FAN_OPEN for an exec; asking for both keeps an exec recorded should that change.
constexpr uint64_t kMask = FAN_OPEN | FAN_OPEN_EXEC | FAN_ONDIR;
// Events read per read(2); each carries a descriptor, closed at once.
constexpr size_t kEventBuffer = 64 * 1024;
constexpr size_t kMountinfoMax = 4 * 1024 * 1024;

}  // namespace

bool path_within(const std::string& path, const std::string& root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

bool path_within_any(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& r) { return path_within(path, r); });
}

bool path_overlaps_any(const std::string& path, const std::vector<std::string>& places) {
  return std::any_of(places.begin(), places.end(), [&](const std::string& p) {
    return path_within(path, p) || path_within(p, path);
  });
}

std::string parent_path(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::vector<MountEntry> mountinfo_mounts(const std::string& text) {
  std::vector<MountEntry> mounts;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    // ID PARENT MAJOR:MINOR ROOT MOUNT_POINT OPTIONS ... (proc(5))
    std::vector<std::string> fields;
    size_t pos = start;
    while (pos < end && fields.size() < 5) {
      size_t stop = text.find(' ', pos);
      if (stop == std::string::npos || stop > end) stop = end;
      fields.push_back(text.substr(pos, stop - pos));
      pos = stop + 1;
    }
    char* tail = nullptr;
    uint64_t id = fields.size() == 5 ? std::strtoull(fields[0].c_str(), &tail, 10) : 0;
    if (fields.size() == 5 && tail != nullptr && *tail == '\0' && !fields[0].empty())
      mounts.push_back({id, unescape_mountinfo(fields[4])});
    start = end + 1;
  }
  return mounts;
}

std::vector<std::string> mounts_to_mark(const std::vector<std::string>& points,
                                        const std::vector<std::string>& roots,
                                        const std::vector<std::string>& excluded) {
  std::set<std::string> out;
  for (const std::string& p : points) {
    bool in_root = std::any_of(roots.begin(), roots.end(),
                               [&](const std::string& r) { return path_within(p, r); });
    bool in_excluded = std::any_of(excluded.begin(), excluded.end(),
                                   [&](const std::string& x) { return path_within(p, x); });
    if (in_root && !in_excluded) out.insert(p);
  }
  return {out.begin(), out.end()};
}

Result<std::unique_ptr<AccessRecorder>> AccessRecorder::create(size_t max_paths) {
  // FAN_UNLIMITED_QUEUE: a build opens files in bursts faster than one thread on a busy machine
  // reads them; a lost event would be a file missing from the closure. An overflow is still
  // checked for (FAN_Q_OVERFLOW) and fails the learning. The event descriptors are opened
  // O_NONBLOCK: a FIFO the job opened must not block the reading thread in its open.
  int fd = ::fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                           O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NONBLOCK | O_NOATIME);
  if (fd < 0 && errno == EPERM)  // O_NOATIME needs the file's owner or CAP_FOWNER
    fd = ::fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE,
                         O_RDONLY | O_LARGEFILE | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Error::from_errno("fanotify_init")
        .context("learning records the job's file accesses with fanotify, which needs root");
  UniqueFd fan(fd);
  int wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return Error::from_errno("eventfd");
  return std::unique_ptr<AccessRecorder>(
      new AccessRecorder(std::move(fan), UniqueFd(wake), max_paths));
}

AccessRecorder::AccessRecorder(UniqueFd fanotify, UniqueFd wake, size_t max_paths)
    : fanotify_(std::move(fanotify)), wake_(std::move(wake)), max_paths_(max_paths) {}

AccessRecorder::~AccessRecorder() { (void)finish(); }

Status AccessRecorder::watch_sandbox(pid_t pid, const std::vector<std::string>& roots,
                                     const std::vector<std::string>& excluded) {
  if (reader_.joinable()) return Error::make("the learning sandbox is already watched");
  std::string proc = fmt::format("/proc/{}", pid);
  int ns = ::open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) return Error::from_errno("open " + proc + "/ns/mnt");
  mount_ns_.reset(ns);
  auto text = SEALRUN_TRY_CTX(read_bounded_file(AT_FDCWD, proc + "/mountinfo", kMountinfoMax),
                              "the learning sandbox's mounts");
  const std::vector<MountEntry> mounts = mountinfo_mounts(text);
  std::vector<std::string> all_points;
  all_points.reserve(mounts.size());
  for (const MountEntry& m : mounts) all_points.push_back(m.point);
  const std::vector<std::string> points = mounts_to_mark(all_points, roots, excluded);
  // The mounts a mark may land on: the sandbox's own, at the chosen places. Checked by id after
  // resolving, because a path can lead elsewhere (a file mount hidden under a later /etc bind
  // resolves to that /etc; never, thanks to the resolution below, to a mount of the host).
  std::set<uint64_t> allowed, done;
  for (const MountEntry& m : mounts)
    if (std::binary_search(points.begin(), points.end(), m.point)) allowed.insert(m.id);
  auto root = SEALRUN_TRY_CTX(open_at(AT_FDCWD, proc + "/root", O_PATH | O_DIRECTORY),
                              "the learning sandbox's root");
  for (const std::string& point : points) {
    // Resolved inside the sandbox's root without following any link: through /proc/PID/root an
    // absolute link (/etc/localtime -> /usr/share/zoneinfo/...) would resolve against the
    // controller's root, and a mark there would record the whole host.
    auto fd = open_beneath(root.get(), point.substr(1), O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (!fd) continue;  // a link where a mount was: that mount is hidden, nothing reaches it
    struct statx stx {};
    if (::statx(fd->get(), "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) != 0 ||
        (stx.stx_mask & STATX_MNT_ID) == 0)
      return Error::from_errno(fmt::format("the mount id of the job's {}", point));
    if (allowed.count(stx.stx_mnt_id) == 0 || !done.insert(stx.stx_mnt_id).second) continue;
    if (::fanotify_mark(fanotify_.get(), FAN_MARK_ADD | FAN_MARK_MOUNT, kMask, fd->get(),
                        nullptr) != 0)
      return Error::from_errno(fmt::format("fanotify mark of the job's {}", point));
    marked_.push_back(point);
  }
  if (marked_.empty())
    return Error::make("the learning sandbox shows none of the host trees to record");
  reader_ = std::thread([this] { read_loop(); });
  return ok_status();
}

void AccessRecorder::read_loop() {
  for (;;) {
    struct pollfd p[2] = {{fanotify_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    int rc = ::poll(p, 2, -1);
    if (rc < 0 && errno != EINTR) {
      std::lock_guard lock(mu_);
      seen_.incomplete = fmt::format("poll of the fanotify queue failed: {}", strerror(errno));
      return;
    }
    if (!drain()) return;
    // Everything the job did is queued before its exit is seen, so one drain after the wake-up
    // reads the rest.
    if (stopping_.load()) {
      (void)drain();
      return;
    }
  }
}

bool AccessRecorder::drain() {
  if (!buffer_) buffer_ = std::make_unique<char[]>(kEventBuffer);  // aligned for any type
  char* buf = buffer_.get();
  for (;;) {
    ssize_t n = ::read(fanotify_.get(), buf, kEventBuffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) {
      std::lock_guard lock(mu_);
      seen_.incomplete = fmt::format("reading the fanotify queue failed: {}",
                                     n < 0 ? strerror(errno) : "end of file");
      return false;
    }
    auto* m = reinterpret_cast<struct fanotify_event_metadata*>(buf);
    for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
      UniqueFd fd(m->fd >= 0 ? m->fd : -1);
      std::lock_guard lock(mu_);
      ++seen_.events;
      if (m->vers != FANOTIFY_METADATA_VERSION) {
        seen_.incomplete = "the kernel's fanotify event format is not the one this was built for";
        return false;
      }
      if ((m->mask & FAN_Q_OVERFLOW) != 0) {
        seen_.incomplete = "the kernel's fanotify queue overflowed: events were lost";
        continue;
      }
      if (fd) record_event(fd.get());
    }
  }
}

// Called with mu_ held.
void AccessRecorder::record_event(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) return;
  char buf[4096];
  ssize_t n = ::readlink(fmt::format("/proc/self/fd/{}", fd).c_str(), buf, sizeof buf);
  std::string path = n > 0 && static_cast<size_t>(n) < sizeof buf
                         ? std::string(buf, static_cast<size_t>(n))
                         : std::string();
  if (path.empty() || path[0] != '/' || path.find(" (deleted)") != std::string::npos) {
    if (!seen_.incomplete)
      seen_.incomplete =
          fmt::format("the job opened a host file whose path cannot be read back ({})",
                      path.empty() ? "unreadable" : path);
    return;
  }
  auto& set = S_ISDIR(st.st_mode) ? seen_.dirs : seen_.files;
  if (set.count(path) != 0) return;
  if (seen_.files.size() + seen_.dirs.size() >= max_paths_) {
    if (!seen_.incomplete)
      seen_.incomplete = fmt::format(
          "the job opened more than {} distinct host files and directories", max_paths_);
    return;
  }
  set.insert(std::move(path));
}

ObservedAccess AccessRecorder::finish() {
  if (reader_.joinable()) {
    stopping_.store(true);
    uint64_t one = 1;
    (void)!::write(wake_.get(), &one, sizeof one);
    reader_.join();
  }
  mount_ns_.reset();
  std::lock_guard lock(mu_);
  return seen_;
}

std::vector<std::string> AccessRecorder::marked() const { return marked_; }

}  // namespace sealrun::learn
