// SPDX-License-Identifier: Apache-2.0
// `sealrun census DIR [--json]`: one growth-census observation of a directory, the same
// measurement the census thread makes during a run.
#include <fmt/format.h>

#include "census/tree_usage.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/exit_codes.h"

namespace sealrun::cli {

void register_census(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "census",
      "One growth-census observation of DIR: logical and allocated bytes, paths, free "
      "bytes, walk time (symlinks never followed, other filesystems not crossed)");
  auto dir = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("DIR", *dir, "the directory to measure")->required();
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([=] {
    auto usage = census::measure_tree(*dir);
    if (!usage) {
      print_error("census", usage.error());
      *exit_code = kExitFailure;
      return;
    }
    auto free = census::free_bytes_at(*dir);
    if (!free) {
      print_error("census", free.error());
      *exit_code = kExitFailure;
      return;
    }
    if (*json) {
      print_json({{"path", *dir},
                  {"logical_bytes", usage->logical_bytes},
                  {"allocated_bytes", usage->allocated_bytes},
                  {"paths", usage->paths},
                  {"free_bytes", *free},
                  {"walk_ms", usage->walk_ms},
                  {"complete", usage->complete},
                  {"unreadable_dirs", usage->unreadable}});
    } else {
      fmt::print(
          "{}\n  logical bytes    {}\n  allocated bytes  {}\n  paths            {}\n"
          "  free bytes       {}\n  walk time        {} ms{}\n",
          *dir, usage->logical_bytes, usage->allocated_bytes, usage->paths, *free, usage->walk_ms,
          // Cut short or partly unreadable (a directory the user may not search): the figures
          // count only what was seen, and the reason names what was not.
          usage->measured()
              ? ""
              : fmt::format("\n  ({}: figures are lower bounds)", usage->unmeasured_reason()));
    }
    *exit_code = kExitOk;
  });
}

}  // namespace sealrun::cli
