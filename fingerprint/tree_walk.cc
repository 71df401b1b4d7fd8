// SPDX-License-Identifier: Apache-2.0
// The directory walk of semantic-tree-v1: see tree_walk.h. Every step is relative to an open
// directory descriptor: fstatat(AT_SYMLINK_NOFOLLOW) to decide what a name is (or, for a
// directory on a file system whose listing is exact, its d_type and d_ino: dir_listing.h), openat
// with O_NOFOLLOW (plus O_DIRECTORY for directories) to enter or read it, and an inode check that
// what was opened is what was looked at. A symlink swapped in for a directory mid-walk is
// therefore never followed, and a directory that is replaced is an error rather than a silent
// detour.
//
// Several threads walk at once, each taking the most recently found directory still to be read
// (depth first, which keeps few directories waiting). A directory waiting to be read holds no
// descriptor of its own, only a share of its parent's, so the descriptors held at once stay near
// the walking threads times the depth, whatever the tree's width.
#include "fingerprint/tree_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/bounded_file.h"
#include "core/placed_thread.h"
#include "core/syscall.h"
#include "fingerprint/digest_cache.h"
#include "fingerprint/dir_listing.h"
#include "fingerprint/open_beneath.h"
#include "fingerprint/tree_hash_pool.h"
#include "fingerprint/tree_order.h"

namespace sealrun {
namespace {

// What a walking thread reuses from one directory to the next.
struct Scratch {
  std::vector<char> buffer;  // getdents64's
  NameList names;
  std::vector<std::string_view> rels;  // each child's path
  std::vector<uint64_t> hashes;
  std::vector<const CachedEntry*> cached;
};

// One directory found and not yet read.
struct DirTask {
  std::shared_ptr<UniqueFd> parent;  // its parent's descriptor (null for the root)
  std::string name;                  // in the parent
  TreeEntry* entry;                  // its record, completed when it is opened
  DirNode* node;                     // where its children go
  // The parent's lstat of it, or (seen_in_listing) only its dev from the parent and d_ino: a
  // directory the listing named as one is not stat'ed by its parent, since its own open and
  // fstat follow; see mount_point_seen_in_listing() for where the two may differ.
  struct stat seen {};
  uint32_t parent_fs = 0;
  const CachedEntry* cached = nullptr;  // what the digest cache says of it
  bool seen_in_listing = false;
};

// Below this many entries, the comparison with a digest cache that loaded during the walk is done
// on the calling thread (a few microseconds per entry).
constexpr size_t kCompareSpreadEntries = 4096;

class Walker {
 public:
  Walker(int root_fd, const std::string& root_display, const TreeOptions& options,
         const std::optional<WalkExclusion>& exclude, const DigestCacheContent* cache,
         const AwaitDigestCache& await_cache, unsigned threads)
      : root_fd_(root_fd),
        root_display_(root_display),
        options_(options),
        exclude_(exclude),
        cache_(cache),
        await_cache_(await_cache),
        walkers_(std::max(1u, threads)),
        deferred_until_(walkers_, await_cache ? kAllDeferred : 0),
        pool_(root_fd, root_display_, threads, options.stamp_clock) {
    for (unsigned i = 0; i < walkers_; ++i) {
      tree_.arenas.push_back(std::make_unique<StableArena<TreeEntry>>());
      tree_.paths.push_back(std::make_unique<PathArena>());
      nodes_.push_back(std::make_unique<StableArena<DirNode, 256>>());
    }
  }

  Result<WalkedTree> run() {
    Status walked = walk();
    // A failed walk needs no more hashing; but the pool is always drained before returning, since
    // its jobs point into the arenas.
    if (walked.ok()) {
      pool_.walk_finished();
      walk_complete_ = true;
    } else {
      pool_.cancel();
    }
    // Without a digest cache the inventory's order is certainly needed, and it depends on names
    // alone: it is put together while the hashing threads finish, instead of after the last
    // digest (on 20,000 files, ~2 ms of sorting that was the tail's serial time).
    const bool order_early = walked.ok() && !await_cache_ && cache() == nullptr;
    if (order_early) {
      size_t entries = 0;  // final: only the walk adds entries
      for (const auto& arena : tree_.arenas) entries += arena->size();
      tree_.order = assemble_order(&root_entry(), root_node_, entries);
    }
    Status hashed = pool_.finish([&] { report_progress(true); });
    if (!walked.ok()) return std::move(walked).error();
    if (!hashed.ok()) return std::move(hashed).error();
    tree_.files = files_.load();
    tree_.regular_bytes = bytes_.load();
    tree_.files_from_cache = files_from_cache_.load();
    tree_.entries_unchanged = unchanged_.load();
    for (const auto& arena : tree_.arenas) tree_.entries += arena->size();
    const DigestCacheContent* cache = cache_.load(std::memory_order_acquire);
    tree_.unchanged = cache != nullptr && tree_.entries_unchanged == tree_.entries &&
                      cache->entries.size() == tree_.entries;
    if (!tree_.unchanged) {
      Status targets = read_later_targets();
      if (!targets.ok()) return std::move(targets).error();
      if (!order_early) tree_.order = assemble_order(&root_entry(), root_node_, tree_.entries);
    }
    report_progress(true);
    return std::move(tree_);
  }

 private:
  TreeEntry& root_entry() { return tree_.arenas[0]->front(); }
  const DigestCacheContent* cache() const { return cache_.load(std::memory_order_acquire); }

  // The targets of the symlinks the cache vouched for (target_later), for an inventory: each
  // opened again beneath the root without following anything, and read only if it is still the
  // link that was stat'ed.
  Status read_later_targets() {
    for (auto& arena : tree_.arenas) {
      Status status = ok_status();
      arena->for_each_first(SIZE_MAX, [&](TreeEntry& e) {
        if (!e.target_later || !status.ok()) return;
        const std::string shown = display(e.path);
        auto fd = open_symlink_beneath(root_fd_, e.path, shown);
        if (!fd.ok()) {
          status = std::move(fd).error();
          return;
        }
        struct stat st {};
        if (::fstatat(fd->get(), "", &st, AT_EMPTY_PATH) != 0 || !S_ISLNK(st.st_mode) ||
            !same_inode_state(stamp_of(st), e.stamp)) {
          status = Error::make(fmt::format("symlink {} changed during the walk", shown));
          return;
        }
        auto target = read_link_at(fd->get(), "", st, shown);
        if (!target.ok()) {
          status = std::move(target).error();
          return;
        }
        e.target = std::move(*target);
        e.target_later = false;
      });
      if (!status.ok()) return status;
    }
    return ok_status();
  }

  // The cache walking thread `index` compares the directory it is about to read with, or null.
  // Given from the start (or none): that. Still loading (await_cache_): null, and the entries this
  // directory adds are compared after the walk; once the load is over, the loaded cache from then
  // on, the thread's earlier entries still left to the pass after the walk (deferred_until_).
  const DigestCacheContent* cache_for_next_dir(unsigned index) {
    if (!await_cache_ || deferred_until_[index] != kAllDeferred) return cache();
    const DigestCacheContent* loaded = await_cache_.ready();
    if (loaded == nullptr) return nullptr;
    cache_.store(loaded, std::memory_order_release);
    deferred_until_[index] = tree_.arenas[index]->size();
    return loaded;
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  // Counts of one directory's files verified through the cache, added to the walk's shared
  // counters when the directory is done: one atomic addition per counter and directory instead of
  // five per file, which both walking threads contended for. (A file to be hashed is counted at
  // once, before the pool can count it done, so that done never passes found.)
  struct Tally {
    explicit Tally(Walker& w) : walker(w) {}
    Tally(const Tally&) = delete;
    Tally& operator=(const Tally&) = delete;
    ~Tally() {
      if (files != 0) {
        walker.files_.fetch_add(files, std::memory_order_relaxed);
        walker.bytes_.fetch_add(bytes, std::memory_order_relaxed);
        walker.files_from_cache_.fetch_add(files, std::memory_order_relaxed);
        walker.bytes_from_cache_.fetch_add(bytes, std::memory_order_relaxed);
      }
      if (unchanged != 0) walker.unchanged_.fetch_add(unchanged, std::memory_order_relaxed);
    }
    Walker& walker;
    uint64_t files = 0;  // from the cache
    uint64_t bytes = 0;  // of those files
    uint64_t unchanged = 0;
  };

  Status walk() {
    const int64_t opened_at = stamp_now();
    auto root_st = SEALRUN_TRY(fstat_fd(root_fd_, root_display_));
    TreeEntry& root = tree_.arenas[0]->emplace_back();
    root.path = ".";
    root.kind = EntryKind::kDirectory;
    set_metadata(root, root_st);
    const uint32_t root_fs = SEALRUN_TRY(filesystem_of(root_fd_, root_st, root_display_));
    root.fs = root_fs;
    root.stamp = stamp_of(root_st, opened_at);
    if (directory_unchanged(cache() ? cache()->find(".") : nullptr, root, root_st, fs_at(root_fs)))
      unchanged_.fetch_add(1, std::memory_order_relaxed);
    root_node_.prefix_len = 0;
    {
      std::lock_guard lock(mu_);
      pending_.push_back(DirTask{nullptr, "", &root, &root_node_, root_st, root_fs});
    }
    // The root is read here first: a tree of one directory (a pinned /bin, a small source, a
    // job's outputs) needs no helper thread, whose start and placement cost more than the walk
    // (bench/README.md, "Where a realistic run's time goes"); one thread reads the root anyway.
    work(0, 1);
    // Then helpers start on the other processors at once (core/placed_thread.h); one that could
    // not be started walks here after the others, and finds the queue drained.
    bool more = false;
    {
      std::lock_guard lock(mu_);
      more = !pending_.empty() && !failed();
    }
    if (more) run_spread(walkers_, [this](unsigned i) { work(i); });
    {
      std::lock_guard lock(mu_);
      if (error_) return *error_;
    }
    if (await_cache_) compare_with_cache(await_cache_.wait());
    return ok_status();
  }

  // The deferred half of a walk whose cache was loading meanwhile (await_cache_): what read_dir
  // and add_file do with a cache at hand, done now for every entry added before its thread saw
  // the cache loaded (all of them when none did), the arenas shared out over the walking threads.
  // Each entry's stamp is the lstat (or the directory's fstat) of the walk.
  void compare_with_cache(const DigestCacheContent* cache) {
    cache_.store(cache, std::memory_order_release);
    size_t entries = 0;
    for (const auto& arena : tree_.arenas) entries += arena->size();
    if (entries < kCompareSpreadEntries) {  // a small tree: helpers would cost more than they save
      for (unsigned i = 0; i < walkers_; ++i) compare_arenas(i);
      return;
    }
    run_spread(walkers_, [this](unsigned i) { compare_arenas(i); });  // each arena exactly once
  }
  void compare_arenas(unsigned first) {
    const std::vector<FsIdentity> filesystems = fs_copy_;  // complete: the walk is over
    const DigestCacheContent* const cache = this->cache();
    Tally tally(*this);
    constexpr size_t kBatch = 16;  // lookups whose cache misses overlap (as in read_dir)
    TreeEntry* batch[kBatch];
    uint64_t hashes[kBatch];
    size_t n = 0;
    auto flush = [&] {
      for (size_t i = 0; i < n; ++i) {
        TreeEntry& e = *batch[i];
        const CachedEntry* c = cache ? cache->find_hashed(e.path, hashes[i]) : nullptr;
        compare_entry(e, c, filesystems[e.fs], tally);
      }
      n = 0;
    };
    for (size_t a = first; a < tree_.arenas.size(); a += walkers_) {
      tree_.arenas[a]->for_each_first(deferred_until_[a], [&](TreeEntry& e) {
        if (e.fs == TreeEntry::kNoFs) return;  // on a file system the walk did not enter: hashed
        hashes[n] = cache ? DigestCacheContent::hash_of(e.path) : 0;
        if (cache) cache->prefetch_slot(hashes[n]);
        batch[n++] = &e;
        if (n == kBatch) flush();
      });
    }
    flush();
  }
  void compare_entry(TreeEntry& e, const CachedEntry* c, const FsIdentity& fs, Tally& tally) {
    switch (e.kind) {
      case EntryKind::kDirectory:
        if (record_matches(c, e, fs) && c->stamp.ino == e.stamp.ino) ++tally.unchanged;
        return;
      case EntryKind::kSymlink:
        if (record_matches(c, e, fs) &&
            stamp_still_holds(c->stamp, cache()->filesystems[c->fs], e.stamp, fs))
          ++tally.unchanged;
        return;
      case EntryKind::kFile:
        if (c != nullptr && c->kind == EntryKind::kFile &&
            stamp_still_holds(c->stamp, cache()->filesystems[c->fs], e.stamp, fs)) {
          take_from_cache(e, *c, fs, tally);
          return;
        }
        files_.fetch_add(1, std::memory_order_relaxed);
        bytes_.fetch_add(e.bytes, std::memory_order_relaxed);
        pool_.submit(HashPool::Job{&e, e.bytes, static_cast<dev_t>(fs.dev),
                                   static_cast<ino_t>(e.stamp.ino)});
        return;
    }
  }

  static void set_metadata(TreeEntry& e, const struct stat& st) {
    e.mode = st.st_mode & 07777;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
  }
  int64_t stamp_now() const {
    return options_.stamp_clock ? options_.stamp_clock() : coarse_realtime_ns();
  }

  // The cache's entry for the directory of `task` (its stamp just taken) when the cache lists its
  // children and its stamp still holds: then they are exactly the cache's (a name added, removed
  // or renamed would have changed the directory's ctime), and its listing is not read again.
  const CachedEntry* listing_in_cache(const DigestCacheContent* cache, const DirTask& task,
                                      const FsIdentity& fs) const {
    if (cache == nullptr) return nullptr;
    const CachedEntry* c = task.parent ? task.cached : cache->find(".");
    if (c == nullptr || c->kind != EntryKind::kDirectory || (c->flags & CachedEntry::kListed) == 0)
      return nullptr;
    const TreeEntry& e = *task.entry;
    if (!record_matches(c, e, fs) ||
        !stamp_still_holds(c->stamp, cache->filesystems[c->fs], e.stamp, fs))
      return nullptr;
    return c;
  }
  // The children of `dir` as a listing would give them, each with its cache entry.
  static void names_from_cache(const DigestCacheContent& cache, const CachedEntry& dir,
                               NameList& out, std::vector<const CachedEntry*>& cached) {
    out.clear();
    cached.clear();
    const std::string_view dir_path = cache.path(dir);
    const size_t skip = dir_path == "." ? 0 : dir_path.size() + 1;
    for (uint32_t index : cache.children(dir)) {
      const CachedEntry& child = cache.entries[index];
      out.add(cache.path(child).substr(skip), child.stamp.ino,
              child.kind == EntryKind::kDirectory ? DT_DIR
              : child.kind == EntryKind::kSymlink ? DT_LNK
                                                  : DT_REG);
      cached.push_back(&child);
    }
  }

  // Whether `c` (the cache's entry for e.path, may be null) vouches for e's record: same kind,
  // mode and owner as just read, on the same file system.
  bool record_matches(const CachedEntry* c, const TreeEntry& e, const FsIdentity& fs) const {
    return c != nullptr && c->kind == e.kind && c->mode == e.mode && c->uid == e.uid &&
           c->gid == e.gid && cache()->filesystems[c->fs] == fs;
  }
  // A directory's record is its kind, mode and owner; its contents are checked entry by entry.
  bool directory_unchanged(const CachedEntry* c, const TreeEntry& e, const struct stat& st,
                           const FsIdentity& fs) const {
    return record_matches(c, e, fs) && c->stamp.ino == static_cast<uint64_t>(st.st_ino);
  }

  std::string display(std::string_view rel) const {
    return rel.empty() ? root_display_ : tree_entry_display(root_display_, rel);
  }

  // Thread `index` reads directories until none is left and none is being read (which could
  // find more). Thread 0 is the caller's and reports progress.
  // Reads directories from pending_ until none is left and no thread is reading one (or, with
  // `limit`, after that many).
  void work(unsigned index, size_t limit = SIZE_MAX) {
    Scratch scratch;  // reused for every directory this thread reads
    for (size_t done = 0; done < limit; ++done) {
      DirTask task;
      {
        std::unique_lock lock(mu_);
        idle_.wait(lock, [&] { return failed() || !pending_.empty() || busy_ == 0; });
        if (failed() || pending_.empty()) break;
        task = std::move(pending_.back());
        pending_.pop_back();
        ++busy_;
      }
      Status read = read_dir(index, task, scratch);
      task = DirTask{};  // lets go of the parent's descriptor now
      bool last;
      {
        std::lock_guard lock(mu_);
        --busy_;
        if (!read.ok()) {
          failed_.store(true, std::memory_order_relaxed);
          if (!error_) error_ = std::move(read).error();
        }
        last = busy_ == 0 && pending_.empty();
      }
      if (last || failed()) idle_.notify_all();
      if (index == 0) report_progress(false);
    }
    idle_.notify_all();
  }

  // The index of the file system that `dirfd` (whose fstat is `st`) is on, adding it when new.
  // Called for the root and for each directory on another device than its parent: a mount point.
  Result<uint32_t> filesystem_of(int dirfd, const struct stat& st, const std::string& shown) {
    struct statfs sfs {};
    if (::fstatfs(dirfd, &sfs) != 0) return Error::from_errno(fmt::format("statfs {}", shown));
    uint64_t fsid = 0;
    static_assert(sizeof(sfs.f_fsid) == sizeof(fsid));
    std::memcpy(&fsid, &sfs.f_fsid, sizeof(fsid));
    const FsIdentity id{static_cast<uint64_t>(st.st_dev), fsid, static_cast<uint64_t>(sfs.f_type)};
    std::lock_guard lock(fs_mu_);
    for (uint32_t i = 0; i < tree_.filesystems.size(); ++i)
      if (tree_.filesystems[i] == id) return i;
    tree_.filesystems.push_back(id);
    fs_copy_.push_back(id);
    return static_cast<uint32_t>(tree_.filesystems.size() - 1);
  }
  FsIdentity fs_at(uint32_t index) {
    std::lock_guard lock(fs_mu_);
    return fs_copy_[index];
  }

  void report_progress(bool force) {
    if (!options_.on_progress && !options_.progress) return;
    const int64_t now = monotonic_ms();
    if (!force && now - last_progress_ms_ < 200) return;
    last_progress_ms_ = now;
    HashProgress p;
    p.files_found = files_.load(std::memory_order_relaxed);
    p.bytes_found = bytes_.load(std::memory_order_relaxed);
    p.files_from_cache = files_from_cache_.load(std::memory_order_relaxed);
    p.files_done = pool_.done_files() + p.files_from_cache;
    p.bytes_done = pool_.done_bytes() + bytes_from_cache_.load(std::memory_order_relaxed);
    p.walk_complete = walk_complete_;
    if (options_.on_progress) options_.on_progress(p);
    if (options_.progress && walk_complete_) options_.progress(p.bytes_done, p.bytes_found);
  }

  // Opens the directory of `task`, checks it is what its parent saw, and reads it: every child
  // gets its record, files go to the hashing pool (or come from the cache), directories become
  // tasks.
  Status read_dir(unsigned index, DirTask& task, Scratch& scratch) {
    NameList& names = scratch.names;
    const std::string_view rel = task.parent ? task.entry->path : std::string_view();
    const std::string here = display(rel);
    UniqueFd own;
    int fd = root_fd_;
    uint32_t fs = task.parent_fs;
    // Before this directory is opened and any child is looked at: the stamps' moment of reading.
    const int64_t read_at = stamp_now();
    if (task.parent) {
      const int opened_fd = retry_eintr([&] {
        return ::openat(task.parent->get(), task.name.c_str(),
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      });
      if (opened_fd < 0)
        return Error::from_errno(fmt::format("open directory {} (did the tree change?)", here));
      own.reset(opened_fd);
      fd = own.get();
      auto opened = SEALRUN_TRY(fstat_fd(fd, here));
      if ((opened.st_dev != task.seen.st_dev || opened.st_ino != task.seen.st_ino) &&
          !mount_point_seen_in_listing(task, fd, opened))
        return Error::make(fmt::format("directory {} was replaced during the walk", here));
      set_metadata(*task.entry, opened);
      if (static_cast<uint64_t>(opened.st_dev) != fs_at(fs).dev)
        fs = SEALRUN_TRY(filesystem_of(fd, opened, here));
      task.entry->fs = fs;
      task.entry->stamp = stamp_of(opened, read_at);
      if (directory_unchanged(task.cached, *task.entry, opened, fs_at(fs)))
        unchanged_.fetch_add(1, std::memory_order_relaxed);
    }
    Tally tally(*this);  // this directory's counts, added to the shared ones once, at the end
    const FsIdentity fs_id = fs_at(fs);
    const DigestCacheContent* const cache = cache_for_next_dir(index);
    const bool deferred = await_cache_ && cache == nullptr;  // compared after the walk
    const CachedEntry* const listed = listing_in_cache(cache, task, fs_id);
    if (listed != nullptr)
      names_from_cache(*cache, *listed, names, scratch.cached);
    else
      SEALRUN_TRY(list_names(fd, !task.parent, here, scratch.buffer, names));
    const size_t count = names.starts.size();
    PathArena& paths = *tree_.paths[index];
    scratch.rels.resize(count);
    if (listed == nullptr) scratch.cached.assign(count, nullptr);
    for (size_t i = 0; i < count; ++i) scratch.rels[i] = paths.join(rel, names.at(i));
    if (cache != nullptr && listed == nullptr) {
      // In batches, each in three passes whose cache misses overlap within the pass: the index
      // slots, then the entries they name, then the lookups themselves (which compare paths).
      // One lookup after another waited for two misses each (perf: most of the lookups' time).
      constexpr size_t kBatch = 16;
      scratch.hashes.resize(count);
      for (size_t begin = 0; begin < count; begin += kBatch) {
        const size_t end = std::min(count, begin + kBatch);
        for (size_t i = begin; i < end; ++i) {
          scratch.hashes[i] = DigestCacheContent::hash_of(scratch.rels[i]);
          cache->prefetch_slot(scratch.hashes[i]);
        }
        for (size_t i = begin; i < end; ++i) cache->prefetch_entry(scratch.hashes[i]);
        for (size_t i = begin; i < end; ++i)
          scratch.cached[i] = cache->find_hashed(scratch.rels[i], scratch.hashes[i]);
      }
    }
    std::shared_ptr<UniqueFd> self;  // shared by the subdirectory tasks, made on the first
    std::vector<DirTask> found;
    DirNode& node = *task.node;
    node.prefix_len = rel.empty() ? 0 : rel.size() + 1;
    node.records.reserve(count);
    StableArena<TreeEntry>& arena = *tree_.arenas[index];
    for (size_t i = 0; i < count; ++i) {
      const char* name = names.at(i);
      // A failed pool: finish() reports its error; a failed walk: another thread reports its own.
      if (pool_.failed() || failed()) return ok_status();
      if (index == 0) report_progress(false);
      struct stat st {};
      const std::string_view child_rel = scratch.rels[i];
      if (names.types[i] == DT_DIR && d_ino_is_st_ino(fs_id.type)) {
        // A directory: its own open (O_NOFOLLOW|O_DIRECTORY) and fstat give its record and check
        // its identity against d_ino, so the lstat here would only repeat them (one system call
        // in seven on /usr).
        TreeEntry& e = arena.emplace_back();
        e.path = child_rel;
        e.kind = EntryKind::kDirectory;
        node.records.push_back(&e);
        if (!self) self = share_dir(own);
        DirNode& child = nodes_[index]->emplace_back();
        node.subdirs.emplace_back(&e, &child);
        st.st_dev = static_cast<dev_t>(fs_id.dev);
        st.st_ino = static_cast<ino_t>(names.inodes[i]);
        found.push_back(DirTask{self, name, &e, &child, st, fs, scratch.cached[i], true});
        continue;
      }
      // The cache's entry is compared right after the stat, whose kernel work has likely pushed it
      // out of the CPU's caches again: fetched meanwhile.
      if (const CachedEntry* c = scratch.cached[i]) prefetch_cached_entry(c);
      if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return Error::from_errno(
            fmt::format("stat {} (did the tree change during the walk?)", display(child_rel)));
      if (exclude_ && st.st_dev == exclude_->dev && st.st_ino == exclude_->ino)
        return Error::make(
            fmt::format("{} ({}) is inside the tree being inventoried; write it outside {}",
                        exclude_->what, display(child_rel), root_display_));
      if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode))
        return Error::make(fmt::format(
            "{} is {}; semantic-tree-v1 records only regular files, directories and symlinks: "
            "remove it or inventory a copy of the tree without it",
            display(child_rel), file_kind_name(st.st_mode)));
      TreeEntry& e = arena.emplace_back();
      e.path = child_rel;
      node.records.push_back(&e);
      const CachedEntry* cached = scratch.cached[i];
      if (S_ISREG(st.st_mode)) {
        add_file(e, st, fs, fs_id, cached, deferred, tally);
      } else if (S_ISLNK(st.st_mode)) {
        e.kind = EntryKind::kSymlink;
        set_metadata(e, st);
        if (fs_id.dev == static_cast<uint64_t>(st.st_dev)) e.fs = fs;
        e.stamp = stamp_of(st, read_at);
        // A symlink's target cannot change in place (only by replacing the link), so a stamp
        // that still holds vouches for the target as for a file's bytes; and the target itself is
        // needed only for an inventory, which an unchanged tree does not form.
        if (e.fs != TreeEntry::kNoFs && record_matches(cached, e, fs_id) &&
            stamp_still_holds(cached->stamp, cache->filesystems[cached->fs], st, fs_id)) {
          ++tally.unchanged;
          e.target_later = true;
        } else {
          e.target = SEALRUN_TRY(read_link_at(fd, name, st, display(e.path)));
        }
      } else {
        e.kind = EntryKind::kDirectory;
        if (!self) self = share_dir(own);
        DirNode& child = nodes_[index]->emplace_back();
        node.subdirs.emplace_back(&e, &child);
        found.push_back(DirTask{self, name, &e, &child, st, fs, cached});
      }
    }
    if (!found.empty()) {
      {
        std::lock_guard lock(mu_);
        for (auto& t : found) pending_.push_back(std::move(t));
      }
      if (found.size() == 1)
        idle_.notify_one();
      else
        idle_.notify_all();
    }
    return ok_status();
  }

  void add_file(TreeEntry& e, const struct stat& st, uint32_t dir_fs, const FsIdentity& fs_id,
                const CachedEntry* cached, bool deferred, Tally& tally) {
    e.kind = EntryKind::kFile;
    // A file on another device than its directory (a bind-mounted file) has a file system the
    // walk never identified: it is hashed, and not cached.
    if (fs_id.dev == static_cast<uint64_t>(st.st_dev)) e.fs = dir_fs;
    const auto size = static_cast<uint64_t>(st.st_size);
    if (deferred && e.fs != TreeEntry::kNoFs) {
      // The cache is still loading: keep what the lstat said; compare_with_cache() decides.
      set_metadata(e, st);
      e.bytes = size;
      e.stamp = stamp_of(st, 0);
      return;
    }
    if (cached != nullptr && cached->kind == EntryKind::kFile && e.fs != TreeEntry::kNoFs &&
        stamp_still_holds(cached->stamp, cache()->filesystems[cached->fs], st, fs_id)) {
      set_metadata(e, st);
      e.bytes = size;
      take_from_cache(e, *cached, fs_id, tally);
      return;
    }
    files_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(size, std::memory_order_relaxed);
    pool_.submit(HashPool::Job{&e, size, st.st_dev, st.st_ino});
  }
  // A file whose stamp holds (its metadata and size set from its lstat): its digest is the cache's.
  void take_from_cache(TreeEntry& e, const CachedEntry& c, const FsIdentity& fs, Tally& tally) {
    e.sha256 = c.sha256;
    e.stamp = c.stamp;
    e.from_cache = true;
    ++tally.files;
    tally.bytes += e.bytes;
    if (record_matches(&c, e, fs)) ++tally.unchanged;
  }

  // A directory known by its listing only (d_ino) may still be what its parent listed when its
  // identity differs: at a mount point d_ino is the covered directory's, not that of the mounted
  // root that the open and lstat see. Anything else that differs was replaced.
  static bool mount_point_seen_in_listing(const DirTask& task, int fd, const struct stat& opened) {
    struct statx root {};
    struct stat now {};
    return task.seen_in_listing &&
           ::statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, 0, &root) == 0 &&
           (root.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0 &&
           (root.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0 &&
           ::fstatat(task.parent->get(), task.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISDIR(now.st_mode) && now.st_dev == opened.st_dev && now.st_ino == opened.st_ino;
  }

  // The descriptor a directory's subdirectory tasks share: its own (taken from `own`), or for the
  // root, whose descriptor belongs to the caller, a duplicate.
  std::shared_ptr<UniqueFd> share_dir(UniqueFd& own) {
    if (own) return std::make_shared<UniqueFd>(std::move(own));
    return std::make_shared<UniqueFd>(::fcntl(root_fd_, F_DUPFD_CLOEXEC, 0));
  }

  const int root_fd_;
  const std::string root_display_;
  const TreeOptions& options_;
  const std::optional<WalkExclusion>& exclude_;
  // Given, or (await_cache_) set once a walking thread sees the load over, or by
  // compare_with_cache(); never changed after it is set.
  std::atomic<const DigestCacheContent*> cache_;
  const AwaitDigestCache& await_cache_;
  const unsigned walkers_;
  // Per walking thread: how many of the entries in its arena were added while the cache was
  // loading, and so are compared after the walk (kAllDeferred until the thread sees it loaded).
  static constexpr size_t kAllDeferred = SIZE_MAX;
  std::vector<size_t> deferred_until_;
  WalkedTree tree_;
  DirNode root_node_;
  std::vector<std::unique_ptr<StableArena<DirNode, 256>>> nodes_;  // per walking thread
  std::mutex mu_;
  std::condition_variable idle_;
  std::vector<DirTask> pending_;  // a stack: the newest directory first
  size_t busy_ = 0;
  std::atomic<bool> failed_{false};  // a walking thread failed: the others stop
  std::optional<Error> error_;
  std::mutex fs_mu_;
  std::vector<FsIdentity> fs_copy_;  // tree_.filesystems, read under fs_mu_
  std::atomic<uint64_t> files_{0}, bytes_{0}, files_from_cache_{0}, bytes_from_cache_{0};
  std::atomic<uint64_t> unchanged_{0};  // entries whose record the cache vouches for
  bool walk_complete_ = false;
  int64_t last_progress_ms_ = 0;
  HashPool pool_;  // last: destroyed (joined) first, while everything its jobs point to lives
};

}  // namespace

unsigned default_hash_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

std::string tree_entry_display(const std::string& root_display, std::string_view rel) {
  return DisplayName(root_display, rel).str();
}

Result<WalkedTree> walk_and_hash(int root_fd, const std::string& root_display,
                                 const TreeOptions& options,
                                 const std::optional<WalkExclusion>& exclude,
                                 const DigestCacheContent* cache,
                                 const AwaitDigestCache& await_cache) {
  unsigned threads = options.threads == 0 ? default_hash_threads() : options.threads;
  Walker walker(root_fd, root_display, options, exclude, cache, await_cache, threads);
  return walker.run();
}

}  // namespace sealrun
