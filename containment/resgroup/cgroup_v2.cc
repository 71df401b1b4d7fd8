// SPDX-License-Identifier: Apache-2.0
// The delegated cgroup v2 back end (cgroup_v2.h): finding our cgroup on the cgroup2 mount,
// enabling memory and pids for a child without breaking the no-internal-processes rule, writing and
// reading back limits, the memory report, and the cgroup.kill stop confirmed by cgroup.events.
#include "containment/resgroup/cgroup_v2.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/syscall.h"

namespace sealrun::resgroup {
namespace {

uint64_t v2_page_floor(uint64_t v) {
  if (v == kUnlimited) return v;
  uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return v / page * page;
}

std::string v2_value(uint64_t v) { return v == kUnlimited ? "max" : fmt::format("{}", v); }

bool has_word(std::string_view text, std::string_view word) {
  size_t pos = 0;
  while ((pos = text.find(word, pos)) != std::string_view::npos) {
    bool left = pos == 0 || text[pos - 1] == ' ' || text[pos - 1] == '\n' || text[pos - 1] == '+';
    size_t end = pos + word.size();
    bool right = end == text.size() || text[end] == ' ' || text[end] == '\n';
    if (left && right) return true;
    pos = end;
  }
  return false;
}

std::string join_path(const std::string& parent, const std::string& name) {
  return parent == "/" ? "/" + name : parent + "/" + name;
}

class CgroupV2Group final : public ResourceGroup {
 public:
  CgroupV2Group(CgroupfsSeams seams, GroupLimits limits, std::string mount_rel)
      : seams_(std::move(seams)), limits_(limits), mount_rel_(std::move(mount_rel)) {}
  ~CgroupV2Group() override {
    if (parent_ && !removed_) (void)remove();  // only succeeds when empty; never kills
  }

  Backend backend() const override { return Backend::kCgroupV2; }
  std::vector<std::string> locators() const override {
    if (!parent_) return {};
    return {fmt::format("{}{}{}", seams_.cgroupfs_root, mount_rel_.empty() ? "" : "/" + mount_rel_,
                        path())};
  }
  std::vector<int> join_fds() const override {
    return procs_ ? std::vector<int>{procs_.get()} : std::vector<int>{};
  }

  Status adopt(pid_t pid) override {
    auto pids = SEALRUN_TRY(members());
    if (std::find(pids.begin(), pids.end(), pid) != pids.end()) return ok_status();
    return write_cgroup_file(dir_.get(), "cgroup.procs", fmt::format("{}", pid))
        .context(fmt::format("move pid {} into {}", pid, path()));
  }

  Status write_limits() {
    SEALRUN_TRY(write_cgroup_file(dir_.get(), "memory.max", v2_value(limits_.memory_max_bytes)));
    SEALRUN_TRY(write_cgroup_file(dir_.get(), "memory.high", v2_value(limits_.memory_high_bytes)));
    // memory.swap.max exists only with swap accounting (CONFIG_MEMCG_SWAP / swapaccount=1).
    swap_file_ = cgroup_file_exists(dir_.get(), "memory.swap.max");
    if (swap_file_)
      SEALRUN_TRY(
          write_cgroup_file(dir_.get(), "memory.swap.max", v2_value(limits_.swap_max_bytes)));
    SEALRUN_TRY(write_cgroup_file(dir_.get(), "pids.max", v2_value(limits_.pids_max)));
    return ok_status();
  }

  Result<std::vector<LimitReadback>> read_back() override {
    std::vector<LimitReadback> out;
    out.push_back(
        SEALRUN_TRY(one("memory_high_bytes", "memory.high", limits_.memory_high_bytes, true)));
    out.push_back(
        SEALRUN_TRY(one("memory_max_bytes", "memory.max", limits_.memory_max_bytes, true)));
    if (cgroup_file_exists(dir_.get(), "memory.swap.max")) {
      out.push_back(
          SEALRUN_TRY(one("swap_max_bytes", "memory.swap.max", limits_.swap_max_bytes, true)));
    } else {
      LimitReadback s{"swap_max_bytes", limits_.swap_max_bytes};
      s.note = "memory.swap.max is absent (swap accounting off): swap_max not applied";
      out.push_back(s);
    }
    out.push_back(SEALRUN_TRY(one("pids_max", "pids.max", limits_.pids_max, false)));
    return out;
  }

  Result<MemoryReport> memory_report() override {
    MemoryReport r;
    // memory.peak exists since Linux 5.19; without it there is no honest peak to report.
    if (cgroup_file_exists(dir_.get(), "memory.peak"))
      r.peak_bytes = SEALRUN_TRY(parse_limit_value(
          SEALRUN_TRY(read_cgroup_file(dir_.get(), "memory.peak")), "memory.peak"));
    // memory.events is hierarchical (memory.events.local is not): events of any descendant count.
    auto ev = parse_flat_keyed(SEALRUN_TRY(read_cgroup_file(dir_.get(), "memory.events")));
    r.events_high = ev["high"];
    r.events_max = ev["max"];
    r.events_oom = ev["oom"];
    r.events_oom_kill = ev["oom_kill"];
    for (const char* f : {"memory.swap.peak", "memory.swap.current"}) {
      if (!cgroup_file_exists(dir_.get(), f)) continue;
      r.swap_used_bytes =
          SEALRUN_TRY(parse_limit_value(SEALRUN_TRY(read_cgroup_file(dir_.get(), f)), f));
      break;
    }
    if (cgroup_file_exists(dir_.get(), "pids.events"))
      r.events_pids_max =
          parse_flat_keyed(SEALRUN_TRY(read_cgroup_file(dir_.get(), "pids.events")))["max"];
    return r;
  }

  Result<UniqueFd> open_memory_usage() const override {
    if (!dir_) return Error::make("the cgroup v2 group is gone");
    return open_at(dir_.get(), "memory.current", O_RDONLY);
  }

  Result<StopReport> stop(int64_t grace_ms) override {
    StopReport rep;
    if (!dir_) {
      rep.confirmed = true;
      rep.actions.push_back("group already gone");
      return rep;
    }
    auto initial = SEALRUN_TRY(members());
    rep.processes_signalled = initial.size();
    if (!SEALRUN_TRY(populated())) {
      rep.confirmed = true;
      rep.actions.push_back("group already empty (populated 0)");
      return rep;
    }
    uint64_t termed = signal_members(seams_.proc_root, initial, SIGTERM, member_check());
    rep.actions.push_back(fmt::format("TERM {} of {} processes", termed, initial.size()));
    if (grace_ms > 0 && wait_unpopulated(grace_ms)) {
      rep.confirmed = true;
      rep.actions.push_back("empty after TERM (populated 0)");
      return rep;
    }
    if (cgroup_file_exists(dir_.get(), "cgroup.kill")) {
      // cgroup.kill (Linux 5.14) SIGKILLs every process of the subtree atomically with respect
      // to forks: no process can escape by forking during the kill.
      SEALRUN_TRY_CTX(write_cgroup_file(dir_.get(), "cgroup.kill", "1"), "stop " + path());
      rep.actions.push_back("KILL via cgroup.kill");
    } else {
      // Before 5.14: freeze (no forks), kill every member by pidfd, thaw.
      SEALRUN_TRY(write_cgroup_file(dir_.get(), "cgroup.freeze", "1"));
      auto pids = SEALRUN_TRY(members());
      uint64_t n = signal_members(seams_.proc_root, pids, SIGKILL, member_check());
      SEALRUN_TRY(write_cgroup_file(dir_.get(), "cgroup.freeze", "0"));
      rep.actions.push_back(fmt::format("KILL {} processes in the frozen group", n));
    }
    rep.confirmed = wait_unpopulated(seams_.confirm_timeout_ms);
    rep.actions.push_back(rep.confirmed ? "empty: cgroup.events says populated 0"
                                        : "NOT empty: cgroup.events still says populated 1");
    return rep;
  }

  Status remove() override {
    if (!parent_) {
      removed_ = true;
      return ok_status();
    }
    // Descriptors stay open until the rmdir succeeded: a refused remove() leaves stop() usable.
    if (::unlinkat(parent_.get(), name_.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
      return Error::from_errno(fmt::format("rmdir cgroup v2 group {}", path()));
    procs_.reset();
    dir_.reset();
    parent_.reset();
    removed_ = true;
    return ok_status();
  }

  // Set up by create/attach.
  std::string parent_path_;  // our (base) cgroup, "/user.slice/x"
  std::string name_;
  UniqueFd parent_;
  UniqueFd dir_;
  UniqueFd procs_;

 private:
  std::string path() const { return join_path(parent_path_, name_); }

  Result<LimitReadback> one(const char* name, const char* file, uint64_t want, bool bytes) {
    LimitReadback l{name, want};
    l.observed =
        SEALRUN_TRY(parse_limit_value(SEALRUN_TRY(read_cgroup_file(dir_.get(), file)), file));
    uint64_t expect = bytes ? v2_page_floor(want) : want;  // the kernel rounds bytes down to pages
    l.applied = *l.observed == expect;
    l.note = l.applied ? std::string(file)
                       : fmt::format("{} reads {}, expected {}", file, v2_value(*l.observed),
                                     v2_value(expect));
    // The groups above ours (ours included) may set a lower limit; that one binds.
    std::optional<std::pair<uint64_t, std::string>> above;
    if (auto a = lowest_limit_up_the_tree(parent_.get(), parent_path_, file))
      above = std::make_pair(a->value, a->path);
    settle_effective(l, path(), above);
    return l;
  }

  Result<std::vector<pid_t>> members() {
    return parse_pid_list(SEALRUN_TRY(read_cgroup_file(dir_.get(), "cgroup.procs")),
                          path() + "/cgroup.procs");
  }

  Result<bool> populated() {
    auto ev = parse_flat_keyed(SEALRUN_TRY(read_cgroup_file(dir_.get(), "cgroup.events")));
    if (!ev.count("populated"))
      return Error::make(fmt::format("{}/cgroup.events has no 'populated' key", path()));
    return ev["populated"] != 0;
  }

  bool wait_unpopulated(int64_t timeout_ms) {
    return poll_until(
        [&] {
          auto p = populated();
          return p.ok() && !*p;
        },
        timeout_ms, seams_.poll_interval_ms);
  }

  std::function<bool(std::string_view)> member_check() const {
    std::string want = path();
    return [want](std::string_view text) {
      auto lines = parse_proc_cgroup(text);
      if (!lines) return false;
      auto p = path_of(*lines, "");
      return p && (*p == want || p->rfind(want + "/", 0) == 0);
    };
  }

  CgroupfsSeams seams_;
  GroupLimits limits_;
  std::string mount_rel_;
  bool swap_file_ = false;
  bool removed_ = false;
};

std::string rel_of(const std::string& mount_rel, const std::string& path) {
  std::string p = path == "/" ? "" : path.substr(1);
  if (mount_rel.empty()) return p.empty() ? "." : p;
  return p.empty() ? mount_rel : mount_rel + "/" + p;
}

struct Base {
  UniqueFd root;
  std::string mount_rel;
  std::string path;  // the cgroup the job group is made in
  UniqueFd dir;
};

// Finds our cgroup; if it is a leaf we made earlier for ourselves, its parent is the base.
Result<Base> open_base(const CgroupfsSeams& seams) {
  Base b;
  b.root = SEALRUN_TRY_CTX(open_at(AT_FDCWD, seams.cgroupfs_root, O_RDONLY | O_DIRECTORY),
                           "open the cgroupfs root");
  b.mount_rel = SEALRUN_TRY(find_v2_mount(b.root.get(), seams));
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, seams.proc_self_cgroup, O_RDONLY));
  auto lines = SEALRUN_TRY(
      parse_proc_cgroup(SEALRUN_TRY(read_up_to(fd.get(), 65536, seams.proc_self_cgroup))));
  auto own = path_of(lines, "");
  if (!own) return Error::make(seams.proc_self_cgroup + " has no cgroup v2 (\"0::\") line");
  auto parts = SEALRUN_TRY(split_clean_path(*own, "own cgroup v2 path"));
  if (!parts.empty()) {
    auto leaf = parse_group_dir_name(parts.back());
    if (leaf && leaf->run_id == kControllerLeafRunId && leaf->creator_pid == ::getpid())
      parts.pop_back();
  }
  // Appended in place rather than `b.path = "/"` then join_path(): at -O3 GCC 12 reports a
  // -Wrestrict false positive on that assignment (GCC bug 105329; fixed in GCC 13).
  b.path.clear();
  for (const auto& p : parts) b.path.append("/").append(p);
  if (b.path.empty()) b.path = std::string(1, '/');
  b.dir = SEALRUN_TRY_CTX(open_dir_beneath(b.root.get(), rel_of(b.mount_rel, b.path)),
                          "open our own cgroup v2 group " + b.path);
  return b;
}

// Makes sure memory and pids are enabled for children of the base, moving ourselves into a leaf
// first if the base holds processes (the no-internal-processes rule forbids enabling otherwise).
Status enable_controllers(Base& b, const CgroupfsSeams& seams) {
  std::string avail = SEALRUN_TRY(read_cgroup_file(b.dir.get(), "cgroup.controllers"));
  for (const char* c : {"memory", "pids"})
    if (!has_word(avail, c))
      return Error::make(fmt::format(
          "the {} controller is not delegated to our cgroup {} (cgroup.controllers: '{}'); run "
          "sealrun in a delegated cgroup (e.g. systemd-run --user --scope -p Delegate=yes)",
          c, b.path, avail.substr(0, avail.find('\n'))));
  std::string enabled = SEALRUN_TRY(read_cgroup_file(b.dir.get(), "cgroup.subtree_control"));
  if (has_word(enabled, "memory") && has_word(enabled, "pids")) return ok_status();
  if (b.path != "/") {  // the root cgroup is exempt from the rule
    auto procs = SEALRUN_TRY(parse_pid_list(
        SEALRUN_TRY(read_cgroup_file(b.dir.get(), "cgroup.procs")), b.path + "/cgroup.procs"));
    bool only_us = std::all_of(procs.begin(), procs.end(), [](pid_t p) { return p == ::getpid(); });
    if (!only_us)
      return Error::make(fmt::format(
          "our cgroup {} holds {} other processes, so memory and pids cannot be enabled for a "
          "child (cgroup v2 no-internal-processes rule); start sealrun in a cgroup of its own",
          b.path, procs.size()));
    if (!procs.empty()) {
      std::string start = SEALRUN_TRY(process_starttime(::getpid(), seams.proc_root));
      std::string leaf = group_dir_name(kControllerLeafRunId, ::getpid(), start);
      if (::mkdirat(b.dir.get(), leaf.c_str(), 0755) != 0 && errno != EEXIST)
        return Error::from_errno(fmt::format("mkdir our own leaf {}", join_path(b.path, leaf)));
      if (seams.after_mkdir)
        seams.after_mkdir(fmt::format("{}/{}", seams.cgroupfs_root,
                                      rel_of(b.mount_rel, join_path(b.path, leaf))));
      auto leaf_fd = SEALRUN_TRY(open_at(b.dir.get(), leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
      SEALRUN_TRY_CTX(
          write_cgroup_file(leaf_fd.get(), "cgroup.procs", fmt::format("{}", ::getpid())),
          "move ourselves into our leaf " + leaf);
    }
  }
  return write_cgroup_file(b.dir.get(), "cgroup.subtree_control", "+memory +pids")
      .context("enable memory and pids in " + b.path + "/cgroup.subtree_control");
}

}  // namespace

Result<std::string> find_v2_mount(int rootfd, const CgroupfsSeams& seams) {
  for (const char* rel : {"", "unified"}) {
    std::string probe = *rel ? std::string(rel) + "/cgroup.controllers" : "cgroup.controllers";
    if (!cgroup_file_exists(rootfd, probe)) continue;
    auto fd = open_dir_beneath(rootfd, *rel ? rel : ".");
    if (!fd) continue;
    if (seams.require_cgroupfs_magic && !is_cgroupfs(fd->get(), true)) continue;
    return std::string(rel);
  }
  return Error::make(fmt::format("no cgroup2 hierarchy at {} or {}/unified", seams.cgroupfs_root,
                                 seams.cgroupfs_root));
}

Result<std::unique_ptr<ResourceGroup>> create_cgroup_v2_group(const std::string& run_id,
                                                              const GroupLimits& limits,
                                                              const CgroupfsSeams& seams) {
  SEALRUN_TRY(require_group_run_id(run_id));
  Base b = SEALRUN_TRY_CTX(open_base(seams), "cgroup v2");
  SEALRUN_TRY_CTX(enable_controllers(b, seams), "cgroup v2");
  std::string start = SEALRUN_TRY(process_starttime(::getpid(), seams.proc_root));
  auto g = std::make_unique<CgroupV2Group>(seams, limits, b.mount_rel);
  g->parent_path_ = b.path;
  g->name_ = group_dir_name(run_id, ::getpid(), start);
  if (::mkdirat(b.dir.get(), g->name_.c_str(), 0755) != 0) {
    Error e = Error::from_errno(fmt::format("cgroup v2: mkdir {}", join_path(b.path, g->name_)));
    if (e.err() == EEXIST) e.context("the group exists already; refusing to reuse it");
    return e;
  }
  g->parent_ = std::move(b.dir);
  if (seams.after_mkdir)
    seams.after_mkdir(fmt::format("{}/{}", seams.cgroupfs_root,
                                  rel_of(b.mount_rel, join_path(b.path, g->name_))));
  // From here on, a failure drops `g`, whose destructor removes the (empty) directory.
  g->dir_ = SEALRUN_TRY(open_at(g->parent_.get(), g->name_, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  std::string ctl = SEALRUN_TRY(read_cgroup_file(g->dir_.get(), "cgroup.controllers"));
  for (const char* c : {"memory", "pids"})
    if (!has_word(ctl, c))
      return Error::make(
          fmt::format("cgroup v2: {} is not enabled in the new group {} "
                      "(cgroup.controllers: '{}')",
                      c, g->name_, ctl));
  SEALRUN_TRY_CTX(g->write_limits(), "cgroup v2: write limits of " + g->name_);
  g->procs_ = SEALRUN_TRY(open_at(g->dir_.get(), "cgroup.procs", O_WRONLY));
  return std::unique_ptr<ResourceGroup>(std::move(g));
}

Result<std::unique_ptr<ResourceGroup>> attach_cgroup_v2_group(
    const std::vector<std::string>& locators, const CgroupfsSeams& seams,
    std::vector<std::string>* gone) {
  if (locators.size() != 1)
    return Error::make(
        fmt::format("a cgroup v2 group has one locator, the record lists {}", locators.size()));
  const std::string& loc = locators[0];
  auto root = SEALRUN_TRY(open_at(AT_FDCWD, seams.cgroupfs_root, O_RDONLY | O_DIRECTORY));
  std::string mount_rel = SEALRUN_TRY(find_v2_mount(root.get(), seams));
  std::string prefix = seams.cgroupfs_root + (mount_rel.empty() ? "" : "/" + mount_rel) + "/";
  if (loc.rfind(prefix, 0) != 0)
    return Error::make(fmt::format("locator '{}' is not under {}: refusing", loc, prefix));
  auto parts = SEALRUN_TRY(split_clean_path(loc.substr(prefix.size()), "locator " + loc));
  if (parts.empty() || !parse_group_dir_name(parts.back()))
    return Error::make(fmt::format("locator '{}' is not a group sealrun makes: refusing", loc));
  auto g = std::make_unique<CgroupV2Group>(seams, GroupLimits{}, mount_rel);
  g->name_ = parts.back();
  g->parent_path_ = "/";
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    g->parent_path_ = join_path(g->parent_path_, parts[i]);
  auto parent = SEALRUN_TRY_CTX(open_dir_beneath(root.get(), rel_of(mount_rel, g->parent_path_)),
                                "locator " + loc);
  if (seams.require_cgroupfs_magic && !is_cgroupfs(parent.get(), true))
    return Error::make(fmt::format("locator '{}' is not on cgroup2: refusing", loc));
  auto dir = open_at(parent.get(), g->name_, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!dir) {
    if (dir.error().err() != ENOENT) return std::move(dir).error().context("locator " + loc);
    if (gone) gone->push_back(loc);
    return std::unique_ptr<ResourceGroup>(std::move(g));
  }
  g->parent_ = std::move(parent);
  g->dir_ = std::move(*dir);
  return std::unique_ptr<ResourceGroup>(std::move(g));
}

BackendProbe probe_cgroup_v2(const CgroupfsSeams& seams) {
  BackendProbe p;
  p.backend = Backend::kCgroupV2;
  auto b = open_base(seams);
  if (!b) {
    p.why = b.error().message();
    return p;
  }
  auto avail = read_cgroup_file(b->dir.get(), "cgroup.controllers");
  if (!avail) {
    p.why = avail.error().message();
    return p;
  }
  bool mem = has_word(*avail, "memory"), pids = has_word(*avail, "pids");
  if (!mem || !pids) {
    p.why = fmt::format(
        "our cgroup {} on the cgroup2 mount offers '{}': memory{} and pids{} are "
        "not delegated to us",
        b->path, avail->substr(0, avail->find('\n')), mem ? " (present)" : "",
        pids ? " (present)" : "");
    return p;
  }
  // Nothing is enabled or moved by the probe: it only checks that a child can be made here.
  std::string name = group_dir_name("probe", ::getpid(), "0");
  if (::mkdirat(b->dir.get(), name.c_str(), 0755) != 0) {
    p.why = fmt::format("cannot make a child of our cgroup {}: {}", b->path, errno_text(errno));
    return p;
  }
  ::unlinkat(b->dir.get(), name.c_str(), AT_REMOVEDIR);
  p.available = p.memory_max = p.memory_high = p.pids_max = true;
  // The root cgroup has no memory.swap.* files; a non-root one has them only with swap accounting.
  p.swap_max = cgroup_file_exists(b->dir.get(), "memory.swap.max") ||
               cgroup_file_exists(b->dir.get(), "memory.swap.current");
  p.why = fmt::format(
      "cgroup2 at {}{}, our cgroup {} has memory and pids delegated and takes a "
      "child",
      seams.cgroupfs_root, b->mount_rel.empty() ? "" : "/unified", b->path);
  return p;
}

}  // namespace sealrun::resgroup
