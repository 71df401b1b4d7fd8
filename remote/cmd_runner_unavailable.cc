// SPDX-License-Identifier: Apache-2.0
// `sealrun runner` in a build without gRPC C++ (libgrpc++-dev, protobuf-compiler-grpc): the
// command exists, says why it cannot serve, and exits 1, so a script gets a clear answer.
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"

namespace sealrun::cli {

void register_runner(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "runner", "Serve Buildbarn's runner protocol (unavailable: built without gRPC)");
  cmd->allow_extras();
  cmd->callback([exit_code] {
    print_error("runner",
                "this sealrun was built without gRPC C++; install libgrpc++-dev and "
                "protobuf-compiler-grpc and rebuild (docs/scale-out.md)");
    *exit_code = 1;
  });
}

}  // namespace sealrun::cli
