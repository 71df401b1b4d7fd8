// The job's view, planned once (docs/view.md): every path
// the job can see outside the kernel-made /proc, /dev and the private /tmp comes from a pinned
// input — the source, the toolchain, host trees pinned with --tree, a learned closure (single
// files and links), the image's root — or is a writable place of the run (/out, /scratch). There
// are no implicit host paths. Both mechanisms build their command lines from plan_view() (bwrap:
// an empty read-only tmpfs root holding these entries; podman: the image is the root and the
// other entries are extra mounts), and the receipt records the same list as view[], so what the
// receipt says the job saw is what the command line gave it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "containment/spec.h"

namespace sealrun {

// What the job's root is: an empty tmpfs (bwrap without an image) or the pinned image (podman).
enum class ViewRoot { kEmptyTmpfs, kImage };

// `path` is `dir` or lies below it ("/usr/bin" and "/usr", not "/usrx"): where a view entry at
// `path` would be covered by a mount at `dir`.
bool at_or_below(std::string_view path, std::string_view dir);

// The whole view in mount order: the root (an image), /proc, /dev, /tmp, then the spec's mounts
// (mount_index set), then its closure files and links (links only in an empty-tmpfs root: an
// image has its own layout).
std::vector<ViewEntry> plan_view(const ContainmentSpec& spec, ViewRoot root);

// A merged-/usr host's compatibility link (/bin -> usr/bin): a top-level symlink into /usr.
struct CompatLink {
  std::string path;    // "/bin"
  std::string target;  // "usr/bin"
};
// The host's top-level links among /bin /sbin /lib /lib32 /lib64 /libx32 (lstat + readlink).
std::vector<CompatLink> read_host_compat_links();

// Adds to spec.files_and_links each compatibility link whose target the view already has (a mount
// at or above the target's path whose host tree holds it, or a mount or closure entry below it)
// and whose own path the view leaves free,
// so a pinned /usr works as on the host and an unpinned /usr leaves no dangling links.
void add_compat_links(const std::vector<CompatLink>& host, ContainmentSpec* spec);

}  // namespace sealrun
