// `sealrun demo`: not built yet (see the open issues); registers nothing so far.
#include "controller/commands.h"

namespace sealrun::cli {

void register_demo(CLI::App& /*app*/, int* /*exit_code*/) {}

}  // namespace sealrun::cli
