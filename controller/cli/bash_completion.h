// SPDX-License-Identifier: Apache-2.0
// The bash completion script for sealrun, rendered from the CLI model (controller/cli/cli_model.h):
// sub-commands at every depth (`sealrun receipt sh<TAB>`), each command's options, the values of
// options (choices, files, directories) and positionals, and after `--` a command and its files.
// Generated at build time by `sealrun __generate bash-completion`; installed as
// share/bash-completion/completions/sealrun. It uses bash-completion's helpers (_init_completion,
// _filedir) when they are loaded and plain `compgen` otherwise.
#pragma once

#include <string>

#include "controller/cli/cli_model.h"

namespace sealrun::cli {

std::string render_bash_completion(const CliCommand& root);

}  // namespace sealrun::cli
