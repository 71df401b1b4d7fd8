// SPDX-License-Identifier: Apache-2.0
// The timestamps of the job's source (docs/admission.md, "Source timestamps"). Build systems such
// as make and automake decide what to rebuild by comparing mtimes, so the copy of the source a
// job sees must carry timestamps they accept: by default every entry gets one fixed time (the
// source's SOURCE_DATE_EPOCH), or, by explicit choice for a plain tree, the host's own mtimes,
// pinned by the SHA-256 of a canonical listing. This file owns that listing, its digest, and
// stamping a private copy (snapshot or export) with the times before the job sees it.
#pragma once

#include <time.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace sealrun {

// 1980-01-02T00:00:00Z: the fixed time of a plain tree's entries when the admission names no
// other. Zip cannot store a time before 1980-01-01 in any time zone (a day later is safe in every
// zone), and any fixed time is accepted by make as long as it is the same for every entry.
inline constexpr int64_t kDefaultSourceEpoch = 315619200;

struct MtimeEntry {
  std::string path;  // relative to the root, '/'-separated; the root itself is "."
  struct timespec mtime = {};
};

// Every directory, regular file and symlink under `root` (the root included, as "."), with its
// mtime, sorted by the raw bytes of the path. Other kinds (FIFOs, sockets, devices) are left out,
// as a source snapshot leaves them out. Walks with directory descriptors, following no symlink.
Result<std::vector<MtimeEntry>> list_mtimes(const std::string& root, size_t max_entries = 1000000);

// "SECONDS.NANOSECONDS" (nine digits), e.g. "1700000000.123456789".
std::string format_mtime(const struct timespec& t);
// The inverse of format_mtime(); nullopt for anything else.
std::optional<struct timespec> parse_mtime(const std::string& text);

// The canonical listing: one line "PATH\tSECONDS.NANOSECONDS\n" per entry, in the order given
// (list_mtimes() order). Its SHA-256 is what source.mtimes_sha256 pins.
std::string mtimes_listing(const std::vector<MtimeEntry>& entries);
std::string mtimes_digest(const std::vector<MtimeEntry>& entries);

// The first entry where two listings differ ("a/b: expected X, observed Y", "a/b: absent", ...),
// nullopt when they are equal.
std::optional<std::string> first_mtime_difference(const std::vector<MtimeEntry>& expected,
                                                  const std::vector<MtimeEntry>& observed);

// Sets the times of every entry under `root` (and of root), files, directories and symlinks
// (utimensat with AT_SYMLINK_NOFOLLOW), children before their directory. With `epoch`, mtime and
// atime become epoch; without, atime becomes the entry's own mtime (which is kept), so reading
// the copy during verification leaves no trace of when that happened.
Status stamp_tree_times(const std::string& root, std::optional<int64_t> epoch,
                        size_t max_entries = 1000000);

}  // namespace sealrun
