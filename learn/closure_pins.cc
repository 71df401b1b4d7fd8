// SPDX-License-Identifier: Apache-2.0
// pin_closure() and the closure's admission fields: see closure_pins.h.
#include "learn/closure_pins.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <deque>

#include "admission/canonical_json.h"
#include "admission/document.h"
#include "core/hex.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "fingerprint/tree_hash_pool.h"
#include "fingerprint/tree_walk.h"

namespace sealrun::learn {

using nlohmann::json;

Result<PinnedClosure> pin_closure(const Closure& closure, uint64_t max_bytes,
                                  const std::function<void(uint64_t, uint64_t)>& progress) {
  PinnedClosure out;
  out.links = closure.links;
  out.dirs = closure.dirs;
  // Paths relative to "/" for the pool (it opens beneath its root); they must outlive it.
  std::vector<std::string> relative;
  std::deque<TreeEntry> entries;
  std::vector<HashPool::Job> jobs;
  uint64_t total = 0;
  relative.reserve(closure.files.size());
  for (const std::string& path : closure.files) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return Error::from_errno(path).context("hash closure");
    if (!S_ISREG(st.st_mode)) return Error::make(path + ": not a regular file any more");
    total += static_cast<uint64_t>(st.st_size);
    if (total > max_bytes)
      return Error::make(fmt::format(
          "the learned closure holds more than {} bytes to hash (--learn-max-bytes); learn a "
          "narrower command or raise the limit",
          max_bytes));
    relative.push_back(path.substr(1));
    entries.emplace_back();
    entries.back().path = relative.back();
    jobs.push_back({&entries.back(), static_cast<uint64_t>(st.st_size), st.st_dev, st.st_ino});
  }
  auto root = SEALRUN_TRY(open_at(AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  const std::string display = "/";
  {
    HashPool pool(root.get(), display, default_hash_threads());
    for (const HashPool::Job& job : jobs) pool.submit(job);
    pool.walk_finished();
    SEALRUN_TRY_CTX(pool.finish([&] {
      if (progress) progress(pool.done_bytes(), total);
    }),
                    "hashing the learned closure");
  }
  for (size_t i = 0; i < closure.files.size(); ++i) {
    const TreeEntry& e = entries[i];
    out.files.push_back({closure.files[i], to_hex(e.sha256.data(), e.sha256.size()), e.bytes});
  }
  out.bytes = total;
  return out;
}

json closure_fields(const PinnedClosure& pinned) {
  json files = json::array();
  for (const PinnedFile& f : pinned.files)
    files.push_back({{"path", f.path}, {"sha256", f.sha256}});
  json links = json::array();
  for (const HostLink& l : pinned.links) links.push_back({{"path", l.path}, {"target", l.target}});
  return {{"host_files", std::move(files)},
          {"host_links", std::move(links)},
          {"host_dirs", pinned.dirs}};
}

Result<std::string> learned_admission_bytes(std::string_view base, const PinnedClosure& pinned) {
  json doc = SEALRUN_TRY_CTX(parse_strict_json(base), "the admission to add the closure to");
  if (!doc.is_object()) return Error::make("the admission to add the closure to is not an object");
  json fields = closure_fields(pinned);  // a named value: items() of a temporary would dangle
  for (auto& [key, value] : fields.items()) {
    // Like the admission's own writer, an empty list is left out (so the bytes read back alike).
    if (value.empty()) continue;
    if (doc.contains(key))
      return Error::make(fmt::format("the admission already has {}; learning writes it", key));
    doc[key] = value;
  }
  return admission::canonical_json_bytes(doc);
}

Result<std::string> checked_admission_bytes(std::string_view base, const PinnedClosure& pinned) {
  std::string bytes = SEALRUN_TRY(learned_admission_bytes(base, pinned));
  if (bytes.size() > admission::kMaxAdmissionBytes)
    return Error::make(fmt::format(
        "the admission would be {} bytes ({} host files), over the admission limit of {} bytes; "
        "learn a narrower command, or pin a large tree with --tree or --toolchain instead; "
        "nothing was written",
        bytes.size(), pinned.files.size(), admission::kMaxAdmissionBytes));
  auto reread = admission::parse_admission_bytes(bytes);
  if (!reread)
    return std::move(reread).error().context("the admission does not parse; nothing was written");
  if (admission::canonical_admission_bytes(*reread) != bytes)
    return Error::make("the admission does not read back to the same bytes; nothing was written");
  return bytes;
}

}  // namespace sealrun::learn
