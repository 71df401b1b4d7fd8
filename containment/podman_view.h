// SPDX-License-Identifier: Apache-2.0
// What rootless podman itself puts into the job's view, made known and pinned (docs/view.md,
// "Podman's own entries"). Seen in a container's /proc/self/mountinfo (podman 4.3, runc,
// --network=none, --read-only): besides the image root and the planned mounts, podman adds /proc,
// /dev and /sys (kernel-made), its --init binary at /run/podman-init (the host's catatonit) and
// the files it generates, /etc/hostname, /etc/hosts and /run/.containerenv (the last two name
// the container; --network=none leaves /etc/resolv.conf out). sealrun turns off /etc/hosts
// (--no-hosts: the image's own, if any), writes /etc/hostname and /run/.containerenv itself from
// the spec and binds them (podman leaves its own out where a mount is given), and binds the init
// binary by the resolved path it hashed. Each is a view entry with a pin; /sys is recorded as
// kernel-made like /proc.
#pragma once

#include <string>
#include <vector>

#include "containment/podman_argv.h"
#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::podman {

// The entries: /sys (kSys), each generated_files() entry (kGenerated, pinned by the SHA-256 of its
// bytes), and with facts.have_init the init binary (kInit at /run/podman-init, host_path its
// resolved path, pinned by its SHA-256 now). Fails when the init binary cannot be hashed.
Result<std::vector<ViewEntry>> own_view_entries(const ContainmentSpec& spec,
                                                const HostFacts& facts);

// Writes the generated files that `spec.files_and_links` holds (root's directory, mode 0755;
// files 0644, created afresh) and checks each against its pin. Run as root before `podman run`.
Status write_generated_files(const ContainmentSpec& spec, std::vector<std::string>& actions);

}  // namespace sealrun::podman
