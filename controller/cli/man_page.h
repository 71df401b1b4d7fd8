// SPDX-License-Identifier: Apache-2.0
// sealrun(1), the manual page, rendered in roff (man(7) macros) from the CLI model
// (controller/cli/cli_model.h): every command with its synopsis, description, options and defaults,
// then exit status, environment and files. Generated at build time by `sealrun __generate man`.
#pragma once

#include <string>

#include "controller/cli/cli_model.h"

namespace sealrun::cli {

// `version` goes in the page's footer ("sealrun 0.2.0"). No date: the page is reproducible.
std::string render_man_page(const CliCommand& root, const std::string& version);

// Text made safe for roff: backslashes, hyphens of options, and a leading '.' or '\''.
std::string roff_escape(const std::string& text);

}  // namespace sealrun::cli
