// The bubblewrap command line as data: a pure function of the grant, the host's root layout and
// the descriptor numbers the spawner will use. Unit tests read it; only bwrap.cc executes it.
//
// The job's root is NOT the host's "/" made read-only: that would show it /root, /home, /var, /run
// (sockets, credentials) and every other writable or secret place, merely read-only. Instead the
// root is an empty tmpfs holding read-only binds of the system's code only (/usr and the
// merged-/usr links or directories /bin /sbin /lib*), a short list of harmless /etc files a
// toolchain needs (the loader cache, alternatives links, passwd/group for name lookups), the
// admitted mounts (each bound from a descriptor opened by the controller), a fresh /proc, a minimal
// /dev, a private /tmp, and then "/" itself remounted read-only so the job cannot even create files
// at the top level.
#pragma once

#include <string>
#include <vector>

#include "containment/grant.h"

namespace sealrun {

// How one top-level system path looks on the host.
struct RootEntry {
  std::string path;  // "/bin"
  enum class Kind { kDirectory, kSymlink, kFile } kind = Kind::kDirectory;
  std::string symlink_target;  // for kSymlink ("usr/bin")
};

// The host's system layout, found once (impure) and then used as data.
struct HostRootLayout {
  std::vector<RootEntry> system;  // /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32 that exist
  std::vector<std::string> etc;   // the /etc essentials that exist on this host
};

// The /etc entries a job may see (no secrets: no shadow, no keys, no machine-id).
const std::vector<std::string>& etc_essentials();
// Reads the host's layout of the system paths above (lstat only).
HostRootLayout read_host_root_layout();

struct BwrapFds {
  int json_status = -1;            // --json-status-fd (child pid, exit code)
  int seccomp = -1;                // --seccomp (compiled policy); -1 leaves it out
  std::vector<int> mount_sources;  // one per grant.spec.mounts entry, same order (O_PATH fds)
  // Or, instead of descriptors: staged paths, one per mount (see bwrap_launch.cc for why).
  std::vector<std::string> staged_sources;
  int block = -1;  // --block-fd: hold the set-up sandbox until a byte arrives (-1: no gate)
};

// The complete argv, bwrap path first, then the options, then "--" and the job's argv.
std::vector<std::string> build_bwrap_argv(const std::string& bwrap_path, const Grant& grant,
                                          const HostRootLayout& layout, const BwrapFds& fds);

}  // namespace sealrun
