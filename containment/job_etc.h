// SPDX-License-Identifier: Apache-2.0
// The job's own /etc under bwrap (docs/view.md, "The job's /etc"): /etc/passwd, /etc/group,
// /etc/hosts, /etc/hostname, /etc/nsswitch.conf and /etc/resolv.conf are made by sealrun for each
// run from the spec — the job user as the job sees it, localhost and the job's hostname, files
// only, no resolver — never taken from the host, where a `useradd` or a DHCP lease would change
// what the job reads between two runs of the same admission. Each is written below the run's owned
// root, handed to bwrap as a descriptor (--ro-bind-data: bwrap copies it into the sandbox and binds
// the copy read-only, so the job user needs no path to the owned root) and listed in the view as
// kind `generated`, pinned by the SHA-256 of its bytes. The contents are plain data from a pure
// function (job_etc_files); the rest is the little I/O around it.
//
// An admission with an image is left alone: the image's own /etc is then the pinned one, as under
// podman. Where a read-only mount covers one of the paths but has no regular file there (a pinned
// --tree /etc without /etc/hostname, or with /etc/resolv.conf a link into /run), bwrap cannot bind
// over it: that entry is left out and the job sees what the pinned tree holds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "containment/spec.h"
#include "core/job_user.h"
#include "core/result.h"
#include "core/unique_fd.h"

namespace sealrun {

// Who the job is inside its user namespace.
struct JobIdentity {
  std::string user;  // the job user's name (also its group's: one group named after the user)
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string home;  // the job's writable /scratch (the admitted scratch path)
};

struct JobEtcFile {
  std::string job_path;  // "/etc/passwd"
  std::string name;      // "passwd": its file name below <owned_root>/view
  std::string bytes;
};

// The six files, in kGeneratedEtcPaths' order. passwd: root (0), the job user, nobody (65534);
// group: root, the job user's group, nogroup (65534) — a job entry whose uid, gid or name is
// already root's or nobody's is left out (the first wins), so every name and id is listed once.
std::vector<JobEtcFile> job_etc_files(const JobIdentity& who, std::string_view hostname);

// The identity the job has under bwrap: spec.uid_in_job for both uid and gid when set (bwrap
// --uid/--gid), else `user`'s own; its home the spec's scratch mount ("/" when it has none).
JobIdentity bwrap_job_identity(const ContainmentSpec& spec, const JobUser& user);

// <owned_root>/view: where the files are written (root's, or the caller's when not root).
std::string job_etc_dir(const ContainmentSpec& spec);

// The view entries (kGenerated) for the files bwrap can bind: none with an image; each at
// <owned_root>/view/<name>, pinned "sha256:<hex>". Looks at the host only to see whether a
// read-only mount covering a path has a regular file there.
std::vector<ViewEntry> job_etc_entries(const ContainmentSpec& spec, const JobUser& user);

// One generated file, written and opened for bwrap's --ro-bind-data.
struct JobEtcFd {
  std::string job_path;
  UniqueFd fd;  // O_RDONLY, at offset 0
};
// Writes each kGenerated entry of spec.files_and_links at an /etc path (created afresh, mode 0644,
// in a new directory job_etc_dir() of this controller's user), checks the bytes against the
// entry's pin, and opens it for reading. An entry this spec would not make is refused.
Result<std::vector<JobEtcFd>> write_job_etc(const ContainmentSpec& spec, const JobUser& user);

}  // namespace sealrun
