// SPDX-License-Identifier: Apache-2.0
// Can the job's command start in its view? (issue 29 part 6). A dynamically linked program needs
// its ELF interpreter (PT_INTERP) at the path it names, a script the program on its `#!` line: when
// the view lacks it, exec fails with ENOENT and bwrap says "execvp /bin/sh: No such file or
// directory" although /bin/sh is there. Before anything runs, argv[0] is resolved within the view
// (view_lookup.h: the pinned toolchain, trees, closure and image root, searched along the job's
// PATH for a bare name), its header read (exec_header.h), a `#!` line followed once to its
// program, and an interpreter the view certainly lacks refused with what to pin. Anything this
// check cannot be sure of (a path below /tmp, an unreadable header) passes: the exec decides.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "containment/spec.h"
#include "core/result.h"

namespace sealrun::run {

// `view`: plan_view(spec, ViewRoot::kEmptyTmpfs); argv, env and cwd the job's. An error's message
// is the refusal ("the view has no /lib64/ld-linux-x86-64.so.2 (the ELF interpreter of /bin/sh):
// pin /usr/lib64 (--tree) or learn the closure (admit freeze --learn)").
Status check_job_can_exec(const std::vector<ViewEntry>& view, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env, const std::string& cwd);

// The same for a spec a bwrap run would be given (its view planned on an empty root); a spec with
// an image (podman's root is the image, unread here) passes.
Status check_spec_can_exec(const ContainmentSpec& spec);

}  // namespace sealrun::run
