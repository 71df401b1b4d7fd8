// `sealrun fingerprint image|source`: not built yet.
#include "controller/commands.h"

namespace sealrun::cli {

void add_fingerprint_image_and_source(CLI::App& /*fingerprint*/, int* /*exit_code*/) {}

}  // namespace sealrun::cli
