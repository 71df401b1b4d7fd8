// SPDX-License-Identifier: Apache-2.0
// See sd_bus_library.h. dlopen and dlsym of libsystemd's sd-bus functions, once per process.
#include "containment/resgroup/sd_bus_library.h"

namespace sealrun::resgroup {

namespace {

SEALRUN_DEFINE_RESOLVER(resolve_sd_bus, SdBusApi, SEALRUN_SD_BUS_FUNCTIONS)

Result<std::unique_ptr<SdBusLibrary>> open_process_sd_bus() {
  return open_sd_bus_library(kLibsystemdSoname);
}

}  // namespace

Result<std::unique_ptr<SdBusLibrary>> open_sd_bus_library(const std::string& soname) {
  return SdBusLibrary::open(
      soname, "the systemd back end needs libsystemd's sd-bus; Debian package libsystemd0",
      resolve_sd_bus);
}

Result<const SdBusApi*> sd_bus_api() { return process_library(open_process_sd_bus); }

}  // namespace sealrun::resgroup
