// SPDX-License-Identifier: Apache-2.0
// Every uid and gid some process on the host holds (real, effective, saved and file-system ids of
// each process), for the job-id registry (job_ids.h): a slot's ids are free only when no process
// holds any of them. One pass over /proc per call; no cache, since the answer is only good for the
// moment it is taken.
//
// Two ways to read a process's ids, with the same answer: the pidfd's PIDFD_GET_INFO (Linux 6.13
// and later: one open, one ioctl and a poll per process) and its /proc/<pid>/status text (the
// kernel formats some fifty lines per process to give us two: about 2.5 times the CPU). The first
// is used where the kernel has it, the second otherwise and for any process the first cannot read.
#pragma once

#include <cstdint>
#include <set>

namespace sealrun {

struct IdsInUse {
  std::set<uint64_t> uids, gids;
};

enum class IdsVia {
  kBest,        // PIDFD_GET_INFO where the kernel has it, /proc/<pid>/status otherwise
  kProcStatus,  // /proc/<pid>/status only (the older kernels' way; tests compare the two)
};

// The ids held by every process that has not exited (a zombie whose threads are all gone runs
// nothing and holds nothing: it is gone once its parent reaps it). A process that ends during the
// pass may or may not be counted; one that cannot be read at all is left out, as one that is gone.
IdsInUse ids_in_use(IdsVia via = IdsVia::kBest);

}  // namespace sealrun
