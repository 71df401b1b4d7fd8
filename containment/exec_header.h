// SPDX-License-Identifier: Apache-2.0
// What the kernel needs besides a file to exec it (issue 29 part 6): a dynamically linked ELF
// executable names its ELF interpreter (the loader, PT_INTERP: /lib64/ld-linux-x86-64.so.2), a
// script its interpreter on the `#!` line. When the job's view lacks that file, exec fails with
// ENOENT, which bwrap reports as "execvp /bin/sh: No such file or directory" although /bin/sh is
// there; reading the header first lets the run say what is missing before the job starts.
//
// The file is the job's (it may come from anywhere the admission pins), so reading it is bounded
// the way the kernel bounds it: a `#!` line within the first 256 bytes, program headers of the
// size the ELF class says and at most 64 KiB of them, an interpreter name of at most 4096 bytes
// that ends in NUL within its segment, every offset inside the file. A header this code cannot
// read is an error, never a guess: the caller then leaves the diagnosis to the exec itself.
#pragma once

#include <string>

#include "core/result.h"

namespace sealrun {

struct ExecHeader {
  enum class Kind {
    kElf,     // interpreter: PT_INTERP's path, "" for a static executable
    kScript,  // interpreter: the path on its `#!` line
    kOther,   // neither (the kernel would refuse it with ENOEXEC): interpreter ""
  };
  Kind kind = Kind::kOther;
  std::string interpreter;
};

// Reads the header of the regular file open at `fd` (pread: its offset is not moved).
Result<ExecHeader> read_exec_header(int fd);

}  // namespace sealrun
