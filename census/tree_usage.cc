// SPDX-License-Identifier: Apache-2.0
// measure_tree() and free_bytes_at(): see tree_usage.h. The walker's moving parts:
//
// - A Node is a directory found by the walk: its name relative to its parent (a shared_ptr, so the
//   chain up to the root stays reachable for reopening) and, while it is useful, an open fd.
// - A directory's fd is useful while it is being read (pinned), while a batch of its entries is
//   being stat'ed by another walker (pinned), and until each of its subdirectories has been opened
//   from it. When none of these holds, it is closed at once. Past `max_open_fds`, the least
//   recently used unpinned fd is closed early. It is reopened when a descendant finishes, by
//   climbing ".." (the common case: backtracking out of a deep subtree), or else, when one of its
//   subdirectories is to be opened, name by name from its nearest open ancestor; either way it must
//   be the very inode first opened under its name.
// - Work items are directories to read, or a batch of one directory's entries to stat: a walker
//   that reads a large getdents64 chunk while another walker is idle hands half of it over.
// - Each walker keeps its own stack of items: it pushes the subdirectories it finds and takes the
//   newest (depth first), and a walker with nothing left takes the oldest item of another, the
//   shallowest directory, that is the largest part of the tree still unstarted. So the walkers
//   work in separate subtrees, not side by side in neighbouring directories, whose dentries and
//   inodes lie interleaved in memory (measured: 4% less CPU than one shared stack).
#include "census/tree_usage.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/placed_thread.h"
#include "core/syscall.h"
#include "core/unique_fd.h"

namespace sealrun::census {

namespace {

constexpr size_t kDirentBufferBytes = 64 * 1024;
// A getdents64 chunk at least this large is split with an idle walker.
constexpr long kShareChunkBytes = 8 * 1024;
constexpr size_t kMaxErrors = 8;
constexpr unsigned kCheckEvery = 64;  // entries between budget checks

struct Dirent64 {  // the kernel's struct linux_dirent64 (getdents64(2))
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node {
  NodePtr parent;
  std::string name;  // relative to parent; for the root, its path as given
  // Guarded by Walk::mu_.
  int fd = -1;
  unsigned pins = 0;
  uint64_t unopened_children = 0;
  bool open_attempted = false;  // the first open of this node has been tried (success or not)
  bool identified = false;      // dev/ino below are those of the directory first opened
  dev_t dev = 0;
  ino_t ino = 0;
  bool in_lru = false;
  bool evicted = false;  // its fd was given up while subdirectories were still to be opened
  std::list<NodePtr>::iterator lru_pos;
  // Set once this directory is done (every subdirectory opened): an ancestor at or below the
  // nearest one that is not done, so that searching upwards skips finished levels (path
  // compression; an ancestor always outlives its descendants, which hold it).
  Node* skip = nullptr;

  Node(NodePtr p, std::string n) : parent(std::move(p)), name(std::move(n)) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // A chain of thousands of directories must not be destroyed by thousands of nested destructor
  // calls (each releasing its parent): release the ancestors one by one instead.
  ~Node() {
    NodePtr p = std::move(parent);
    while (p && p.use_count() == 1) {  // the last reference: nobody else can take one now
      NodePtr next = std::move(p->parent);
      p.reset();
      p = std::move(next);
    }
  }
};

struct InodeKey {
  dev_t dev;
  ino_t ino;
  bool operator==(const InodeKey& o) const { return dev == o.dev && ino == o.ino; }
};
struct InodeHash {
  size_t operator()(const InodeKey& k) const { return std::hash<uint64_t>()(k.ino * 31 + k.dev); }
};

struct Counters {
  uint64_t logical = 0, allocated = 0, paths = 0, inodes = 0, unreadable = 0, changed = 0;
  uint64_t reopened = 0;
  uint64_t paths_flushed = 0;  // of `paths`, already added to the walk's shared count
  unsigned since_check = 0;
};

struct Item {
  NodePtr node;
  std::vector<char> batch;  // empty: read the directory; else entries to stat (node is pinned)
};

int open_child(int parent_fd, const char* name) {
  struct open_how how {};
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(
      retry_eintr([&] { return ::syscall(SYS_openat2, parent_fd, name, &how, sizeof how); }));
}

// The node's path for a message, shortened from the left: deep trees make paths of any length.
std::string path_of(const Node* n, const char* leaf = nullptr) {
  std::vector<const std::string*> parts;
  size_t len = leaf ? std::strlen(leaf) : 0;
  for (; n != nullptr && len < 240; n = n->parent.get()) {
    parts.push_back(&n->name);
    len += n->name.size() + 1;
  }
  std::string out = n != nullptr ? "…" : "";
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) out += (out.empty() ? "" : "/") + **it;
  if (leaf) out += "/" + std::string(leaf);
  return out;
}

class Walk {
 public:
  Walk(const WalkBudget& budget, NodePtr root, const struct stat& root_st)
      : budget_(budget), deadline_(monotonic_ms() + budget.max_ms), root_(std::move(root)) {
    root_->pins = 1;  // the caller owns the root's fd; it is never closed or evicted here
    root_->open_attempted = root_->identified = true;
    root_->dev = root_st.st_dev;
    root_->ino = root_st.st_ino;
    open_fds_ = 1;
    usage_.paths = 1;  // the root's bytes and inode are counted when it is read
  }

  TreeUsage run() {
    unsigned threads = budget_.threads != 0
                           ? budget_.threads
                           : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    stacks_.resize(threads);
    stacks_[0].push_back(Item{root_, {}});
    queued_ = 1;
    // Each helper starts on another processor than this thread: queued behind it, a helper was
    // often seen to start 3-4 ms late (core/placed_thread.h). A walker whose thread could not be
    // started runs here after the others, and finds its own stack empty and nothing to steal.
    run_spread(threads, [this](unsigned i) { work(i); });
    for (auto& n : lru_) ::close(std::exchange(n->fd, -1));  // defensive: nothing should be left
    lru_.clear();
    return std::move(usage_);
  }

 private:
  void work(unsigned me) {
    Counters c;
    auto buf = std::make_unique_for_overwrite<uint64_t[]>(kDirentBufferBytes / 8);
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++idle_;
        wake_.wait(lock, [&] { return queued_ != 0 || busy_ == 0; });
        --idle_;
        if (queued_ == 0) break;  // nothing queued and nobody can queue more
        item = take_locked(me);
        ++busy_;
      }
      if (stop_.load(std::memory_order_relaxed)) {
        drop(item);
      } else if (item.batch.empty()) {
        read_dir(item.node, me, c, reinterpret_cast<char*>(buf.get()));
      } else {
        stat_entries(item.node, me, item.node->fd, item.batch.data(),
                     static_cast<long>(item.batch.size()), c);
        unpin(item.node);
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0 && queued_ == 0) wake_.notify_all();
    }
    wake_.notify_all();
    merge(c);
  }

  // The newest item of the walker's own stack, or else the oldest of another's (queued_ != 0) —
  // unless that one's parent has lost its fd: opening it would walk down from an open ancestor,
  // perhaps thousands of levels in a deep tree. Then the newest, whose parent is most likely still
  // open, and the old items are left to their owner, which reaches them by backtracking.
  Item take_locked(unsigned me) {
    --queued_;
    std::deque<Item>& own = stacks_[me];
    if (!own.empty()) {
      Item item = std::move(own.back());
      own.pop_back();
      return item;
    }
    for (size_t k = 1;; ++k) {
      std::deque<Item>& other = stacks_[(me + k) % stacks_.size()];
      if (other.empty()) continue;
      if (!opens_cheaply_locked(other.front())) {
        Item item = std::move(other.back());
        other.pop_back();
        return item;
      }
      Item item = std::move(other.front());
      other.pop_front();
      return item;
    }
  }

  static bool opens_cheaply_locked(const Item& item) {
    const Node& n = *item.node;
    return !item.batch.empty() || n.fd >= 0 || n.parent == nullptr || n.parent->fd >= 0;
  }

  void drop(Item& item) {
    if (item.batch.empty())
      child_done(item.node);
    else
      unpin(item.node);
  }

  void read_dir(const NodePtr& n, unsigned me, Counters& c, char* buf) {
    int fd = pin_open(n, c);
    struct stat st {};
    bool ok = fd >= 0 && ::fstat(fd, &st) == 0;
    if (fd >= 0 && !ok) read_error(n.get(), nullptr, "fstat", c);
    child_done(n, ok ? &st : nullptr);
    if (!ok) {
      if (fd >= 0) unpin(n);
      return;
    }
    count_dir(st, c);
    for (;;) {
      long got =
          retry_eintr([&] { return ::syscall(SYS_getdents64, fd, buf, kDirentBufferBytes); });
      if (got < 0) {
        // ENOENT: the directory was removed while being read (the kernel refuses to list a dead
        // directory); what it held is gone, as for any entry that vanishes.
        if (errno != ENOENT) read_error(n.get(), nullptr, "getdents64", c);
        break;
      }
      if (got == 0 || stop_.load(std::memory_order_relaxed)) break;
      long mine = got;
      if (got >= kShareChunkBytes && idle_.load(std::memory_order_relaxed) > 0)
        mine = share_half(n, me, buf, got);
      stat_entries(n, me, fd, buf, mine, c);
    }
    unpin(n);
  }

  // Hands the second half of a chunk (from an entry boundary) to an idle walker; returns the
  // length of the part left to the caller.
  long share_half(const NodePtr& n, unsigned me, const char* buf, long len) {
    long at = 0;
    while (at < len / 2) at += reinterpret_cast<const Dirent64*>(buf + at)->d_reclen;
    if (at >= len) return len;
    Item item{n, std::vector<char>(buf + at, buf + len)};
    std::lock_guard<std::mutex> lock(mu_);
    ++n->pins;                                // the batch's walker uses the fd
    stacks_[me].push_front(std::move(item));  // where an idle walker takes from
    ++queued_;
    wake_.notify_one();
    return at;
  }

  void stat_entries(const NodePtr& n, unsigned me, int fd, const char* buf, long len, Counters& c) {
    std::vector<NodePtr> dirs;
    for (long at = 0; at < len;) {
      const auto* d = reinterpret_cast<const Dirent64*>(buf + at);
      at += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      if (++c.since_check >= kCheckEvery && !check_budget(c)) break;
      if (d->d_type == DT_DIR) {  // counted when it is opened (its own fstat)
        ++c.paths;
        dirs.push_back(std::make_shared<Node>(n, name));
        continue;
      }
      struct stat st {};
      if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) read_error(n.get(), name, "fstatat", c);  // ENOENT: deleted since
        continue;
      }
      ++c.paths;
      if (S_ISDIR(st.st_mode))  // d_type unknown to this filesystem, or replaced meanwhile
        dirs.push_back(std::make_shared<Node>(n, name));
      else
        count_other(st, c);
    }
    if (!dirs.empty()) push_dirs(n, me, dirs);
  }

  void push_dirs(const NodePtr& parent, unsigned me, std::vector<NodePtr>& dirs) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_dirs_ += dirs.size();
    if (pending_dirs_ > budget_.max_pending_dirs) {
      cut("max_pending_dirs", budget_.max_pending_dirs);
      return;
    }
    parent->unopened_children += dirs.size();
    for (auto& d : dirs) stacks_[me].push_back(Item{std::move(d), {}});
    queued_ += dirs.size();
    wake_.notify_all();
  }

  // Opens `n` (or finds it open) and pins it; -1 when it cannot be opened. A first open that meets
  // a mount point, a symlink or a non-directory counts that entry as itself; a reopen that finds
  // another inode than the first open counts the subtree as changed and skips it.
  int pin_open(const NodePtr& n, Counters& c) {
    std::vector<NodePtr> chain;  // n and its ancestors without an fd, nearest first
    NodePtr anchor;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (NodePtr a = n; a->fd < 0; a = a->parent) chain.push_back(a);
      anchor = chain.empty() ? n : chain.back()->parent;
      pin_locked(anchor.get());
    }
    if (chain.empty()) return n->fd;
    int cur_fd = anchor->fd;
    NodePtr cur = anchor;
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const NodePtr& next = *it;
      int fd = open_child(cur_fd, next->name.c_str());
      if (fd < 0) {
        int err = errno;
        if (next == n && !n->identified) {
          first_open_failed(n, cur_fd, err, c);
        } else if (err == ENOENT || err == ENOTDIR || err == ELOOP || err == EXDEV) {
          ++c.changed;
        } else {
          errno = err;
          read_error(next.get(), nullptr, "open", c);
        }
        unpin(cur);
        return -1;
      }
      if (next->identified) {  // a reopen: must be the directory first seen under this name
        struct stat st {};
        if (::fstat(fd, &st) != 0 || st.st_dev != next->dev || st.st_ino != next->ino) {
          ::close(fd);
          ++c.changed;
          unpin(cur);
          return -1;
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (next->identified) ++c.reopened;
      if (next->fd >= 0) {  // another walker opened it meanwhile
        ::close(fd);
      } else {
        next->fd = fd;
        ++open_fds_;
        if (next->evicted) {
          next->evicted = false;
          --evicted_pending_;
        }
      }
      pin_locked(next.get());
      unpin_locked(cur);
      evict_locked();
      cur = next;
      cur_fd = next->fd;
    }
    return cur_fd;
  }

  void first_open_failed(const NodePtr& n, int parent_fd, int err, Counters& c) {
    if (err == ENOENT) return;  // deleted since it was listed
    if (err == EXDEV || err == ELOOP || err == ENOTDIR) {
      // A mount point (counted, not crossed), or no longer a directory: count it as what it is.
      struct stat st {};
      if (::fstatat(parent_fd, n->name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode))
          count_dir(st, c);
        else
          count_other(st, c);
        return;
      }
      if (errno == ENOENT) return;
      err = errno;
    }
    errno = err;
    read_error(n.get(), nullptr, "open", c);
  }

  // The first open of `n` has been tried (`st`: what it opened, if it did): its parent no longer
  // needs its fd for `n`, and a later reopen of `n` must find this inode.
  void child_done(const NodePtr& n, const struct stat* st = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (st != nullptr && !n->identified) {
      n->dev = st->st_dev;
      n->ino = st->st_ino;
      n->identified = true;
    }
    if (n->open_attempted) return;
    n->open_attempted = true;
    --pending_dirs_;
    Node* p = n->parent.get();
    if (p != nullptr && p->unopened_children > 0 && --p->unopened_children == 0) {
      if (p->evicted) {
        p->evicted = false;
        --evicted_pending_;
      }
      if (p->pins == 0) finish_locked(p);
    }
  }

  void pin_locked(Node* n) {
    if (n->pins++ == 0 && n->in_lru) {
      lru_.erase(n->lru_pos);
      n->in_lru = false;
    }
  }
  void unpin(const NodePtr& n) {
    std::lock_guard<std::mutex> lock(mu_);
    unpin_locked(n);
  }
  void unpin_locked(const NodePtr& n) {
    if (--n->pins != 0) return;
    if (n->unopened_children == 0) {
      finish_locked(n.get());
    } else {
      n->lru_pos = lru_.insert(lru_.end(), n);
      n->in_lru = true;
      evict_locked();
    }
  }
  // `n` needs its fd no more. If the nearest ancestor that still has subdirectories to open lost
  // its fd to eviction, it is reopened from here by climbing "..", level by level, each level
  // checked to be the very inode first opened under its name: one step per level passed, and a
  // finished level is never climbed twice, so backtracking out of a deep tree stays linear (a walk
  // down from the nearest open ancestor would cost its whole depth, again and again).
  void finish_locked(Node* n) {
    if (n->fd >= 0 && evicted_pending_ > 0) restore_ancestor_locked(n);
    close_locked(n);
  }
  void restore_ancestor_locked(Node* n) {
    Node* p = n->parent.get();
    std::vector<Node*> passed;
    while (p != nullptr && p->fd < 0 && p->unopened_children == 0) {
      passed.push_back(p);
      p = p->skip != nullptr ? p->skip : p->parent.get();
    }
    for (Node* done : passed) done->skip = p;
    if (p == nullptr || p->fd >= 0 || !p->identified) return;
    int from = n->fd;
    UniqueFd climbed;  // the level below the one being opened, once above `n`
    for (NodePtr a = n->parent; a; a = a->parent) {
      UniqueFd up(static_cast<int>(
          retry_eintr([&] { return ::openat(from, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC); })));
      struct stat st {};
      if (!up || ::fstat(up.get(), &st) != 0 || st.st_dev != a->dev || st.st_ino != a->ino)
        return;  // moved meanwhile: the walk down from an open ancestor will judge
      if (a.get() == p) {
        p->fd = up.release();
        ++open_fds_;
        p->evicted = false;
        --evicted_pending_;
        p->lru_pos = lru_.insert(lru_.end(), a);
        p->in_lru = true;
        ++usage_.reopened;
        return;
      }
      climbed = std::move(up);
      from = climbed.get();
    }
  }
  void close_locked(Node* n) {
    if (n->fd < 0 || n == root_.get()) return;
    ::close(std::exchange(n->fd, -1));
    --open_fds_;
    if (n->in_lru) {
      n->in_lru = false;
      lru_.erase(n->lru_pos);  // last: may drop the final reference to *n
    }
  }
  void evict_locked() {
    while (open_fds_ > std::max(budget_.max_open_fds, 8u) && !lru_.empty()) {
      NodePtr victim = lru_.front();  // unpinned, with subdirectories still to open
      close_locked(victim.get());
      victim->evicted = true;
      ++evicted_pending_;
    }
  }

  void count_dir(const struct stat& st, Counters& c) {
    c.allocated += static_cast<uint64_t>(st.st_blocks) * 512;
    ++c.inodes;
  }
  void count_other(const struct stat& st, Counters& c) {
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) c.logical += static_cast<uint64_t>(st.st_size);
    if (st.st_nlink > 1) {  // hard links share blocks and the inode: count each inode once
      std::lock_guard<std::mutex> lock(links_mu_);
      if (!seen_.insert({st.st_dev, st.st_ino}).second) return;
    }
    c.allocated += static_cast<uint64_t>(st.st_blocks) * 512;
    ++c.inodes;
  }

  bool check_budget(Counters& c) {
    c.since_check = 0;
    uint64_t seen = paths_seen_.fetch_add(c.paths - c.paths_flushed, std::memory_order_relaxed) +
                    (c.paths - c.paths_flushed);
    c.paths_flushed = c.paths;
    if (seen >= budget_.max_paths) {
      std::lock_guard<std::mutex> lock(mu_);
      cut("max_paths", budget_.max_paths);
    } else if (monotonic_ms() > deadline_) {
      std::lock_guard<std::mutex> lock(mu_);
      cut("max_ms", static_cast<uint64_t>(budget_.max_ms));
    }
    return !stop_.load(std::memory_order_relaxed);
  }
  void cut(const char* budget, uint64_t value) {
    if (!stop_.exchange(true)) {
      usage_.complete = false;
      usage_.cut_short = fmt::format("{} {}", budget, value);
    }
  }

  void read_error(const Node* n, const char* leaf, const char* call, Counters& c) {
    int err = errno;
    ++c.unreadable;
    std::lock_guard<std::mutex> lock(mu_);
    if (usage_.errors.size() < kMaxErrors)
      usage_.errors.push_back(fmt::format("{} {}: {}", call, path_of(n, leaf), errno_text(err)));
  }

  void merge(const Counters& c) {
    std::lock_guard<std::mutex> lock(mu_);
    usage_.logical_bytes += c.logical;
    usage_.allocated_bytes += c.allocated;
    usage_.paths += c.paths;
    usage_.inodes += c.inodes;
    usage_.unreadable += c.unreadable;
    usage_.changed += c.changed;
    usage_.reopened += c.reopened;
  }

  WalkBudget budget_;
  int64_t deadline_;
  NodePtr root_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> paths_seen_{0};
  std::atomic<unsigned> idle_{0};
  std::mutex mu_;  // the stack, fds, pins, LRU and the usage totals
  std::condition_variable wake_;
  std::vector<std::deque<Item>> stacks_;  // one per walker (see the top of the file)
  uint64_t queued_ = 0;                   // items in all the stacks
  unsigned busy_ = 0;
  uint64_t pending_dirs_ = 0;
  unsigned open_fds_ = 0;
  uint64_t evicted_pending_ = 0;  // nodes with `evicted` set
  std::list<NodePtr> lru_;        // unpinned open directories, least recently used first
  std::mutex links_mu_;
  std::unordered_set<InodeKey, InodeHash> seen_;
  TreeUsage usage_;
};

}  // namespace

std::string TreeUsage::unmeasured_reason() const {
  std::string why;
  if (!complete) why = "the walk was cut short by its budget (" + cut_short + ")";
  if (unreadable != 0) {
    why += fmt::format("{}{} entr{} could not be read", why.empty() ? "" : "; ", unreadable,
                       unreadable == 1 ? "y" : "ies");
    if (!errors.empty()) {  // the first three, named; the rest counted above
      why += " (";
      for (size_t i = 0; i < errors.size() && i < 3; ++i) why += (i ? "; " : "") + errors[i];
      why += errors.size() > 3 || unreadable > errors.size() ? "; ...)" : ")";
    }
  }
  return why;
}

Result<TreeUsage> measure_tree(const std::string& root, const WalkBudget& budget) {
  int64_t start = monotonic_ms();
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), root));
  auto node = std::make_shared<Node>(nullptr, root);
  node->fd = fd.get();
  TreeUsage usage = Walk(budget, node, st).run();
  usage.walk_ms = monotonic_ms() - start;
  return usage;
}

Result<uint64_t> free_bytes_at(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return Error::from_errno(fmt::format("statvfs {}", path));
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

}  // namespace sealrun::census
