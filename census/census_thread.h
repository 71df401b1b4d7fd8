// SPDX-License-Identifier: Apache-2.0
// The growth-census thread: every interval it measures the owned and result trees and the free
// space, keeps a bounded, decimated list of samples, and calls the stop callback once when a guard
// trips and once when the census could not measure (the trip "census_failed": a census that cannot
// measure is not a zero). It has no authority beyond that callback (docs/style.md D6): the
// controller decides what stopping means (in enforcing mode a census failure stops the job; in
// report-only mode it is recorded).
//
// The owned space is either a directory on a shared filesystem (measured by a walk) or a file
// system of its own (containment/ownedfs: measured by one statfs). Problems met while sampling are
// kept as notes: data for the receipt, repeated problems folded into one note with a count.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "census/guards.h"
#include "census/sample.h"
#include "census/tree_usage.h"

namespace sealrun::census {

enum class OwnedKind {
  kDirectory,   // walked every interval
  kFilesystem,  // its own file system mounted at owned_root: one statfs per sample
};

struct CensusConfig {
  std::string owned_root;
  OwnedKind owned_kind = OwnedKind::kDirectory;
  // kFilesystem: the device of the owned file system (ownedfs::OwnedFs::device; 0: whatever is
  // mounted at owned_root at start), and the inodes in use on it that are not the owned space's
  // (OwnedFs::reserved_inodes), subtracted from statfs's figure.
  dev_t owned_dev = 0;
  uint64_t owned_reserved_inodes = 0;
  std::string result_root;
  // Where the job's /out is a file system of its own (the run's result space), mounted outside
  // result_root: its statfs figure is added to the result tree's. Empty: none.
  std::string result_fs_root;
  // Whose filesystem's free space the free guard watches: the host filesystem that holds the state
  // directory. Empty: owned_root's (right for a directory; for a file system of its own, pass the
  // directory that holds its image).
  std::string free_root;
  GuardLimits limits;
  int64_t interval_ms = 5000;
  WalkBudget budget;
  size_t max_samples = 4096;  // in memory; decimated to half when full
  size_t max_notes = 32;      // distinct problems kept; later ones are counted in notes_dropped()
  // The resource group's memory in use, read at every sample into Sample::memory_bytes (empty:
  // not sampled). Called from start(), the census thread and stop(), never at once; it must not
  // block (memory_usage.h reads one cgroup file through a descriptor).
  std::function<std::optional<uint64_t>()> memory_usage;
};

// A problem met while sampling, for the receipt. The same problem in later samples raises `count`
// and `last_ms` instead of adding a note.
struct CensusNote {
  std::string tree;  // "owned", "result" or "free space"
  std::string kind;  // "unreadable", "cut_short", "root_error", "statfs_error"
  std::string what;  // the first occurrence, for a person
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  uint64_t count = 0;
};

class CensusThread {
 public:
  // Called at most twice: once for the first guard trip, once for the first census failure.
  using StopCallback = std::function<void(const GuardTrip&)>;
  CensusThread(CensusConfig config, StopCallback on_trip);
  ~CensusThread();
  CensusThread(const CensusThread&) = delete;
  CensusThread& operator=(const CensusThread&) = delete;

  // Checks the roots (an owned file system must be mounted), takes the first sample on the calling
  // thread, then starts sampling. A root that cannot be opened fails here.
  Status start();
  // Takes one last sample, stops and joins. Idempotent.
  void stop();

  std::vector<Sample> samples() const;
  uint64_t dropped() const;
  // The first guard that tripped.
  std::optional<GuardTrip> trip() const;
  // The first sample that could not be measured, as a trip named kCensusFailed.
  std::optional<GuardTrip> census_failure() const;
  // The problems met, as data for the receipt (repeats folded into one note with a count).
  std::vector<CensusNote> note_records() const;
  uint64_t notes_dropped() const;
  // The same, one line each for a person: "owned: 1 entry could not be read (...) (3 samples)".
  std::vector<std::string> notes() const;

 private:
  Sample observe();
  void note(Sample& s, const char* tree, const char* kind, const std::string& what);
  void record(const Sample& s);
  void loop();

  CensusConfig config_;
  StopCallback on_trip_;
  int64_t started_ms_ = 0;
  dev_t owned_dev_ = 0;   // kFilesystem: the device of the owned file system
  dev_t result_dev_ = 0;  // the device of the result file system, when there is one
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<Sample> samples_;
  uint64_t dropped_ = 0;
  std::optional<GuardTrip> trip_;
  std::optional<GuardTrip> failure_;
  std::vector<CensusNote> notes_;
  uint64_t notes_dropped_ = 0;
  std::thread thread_;
};

}  // namespace sealrun::census
