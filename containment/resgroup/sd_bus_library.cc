// See sd_bus_library.h. dlopen and dlsym of libsystemd's sd-bus functions, once per process.
#include "containment/resgroup/sd_bus_library.h"

namespace sealrun::resgroup {

Result<std::unique_ptr<SdBusLibrary>> SdBusLibrary::open(const std::string& soname) {
  auto library = SEALRUN_TRY(SharedLibrary::open(
      soname, "the systemd back end needs libsystemd's sd-bus; Debian package libsystemd0"));
  std::unique_ptr<SdBusLibrary> lib(new SdBusLibrary(std::move(library)));
  // Each symbol is checked; on the first one missing, `lib` closes the library as it goes.
#define SEALRUN_SD_BUS_RESOLVE(name) SEALRUN_RESOLVE_INTO(lib->library_, lib->api_, name);
  SEALRUN_SD_BUS_FUNCTIONS(SEALRUN_SD_BUS_RESOLVE)
#undef SEALRUN_SD_BUS_RESOLVE
  return lib;
}

Result<const SdBusApi*> sd_bus_api() {
  // A function-local static: initialised exactly once even when several threads ask at once
  // (C++11 [stmt.dcl]/4). Never deleted: sd-bus objects may still be released by destructors that
  // run at exit, after a static's own destructor would have unmapped the library under them.
  static const auto* const loaded =
      new Result<std::unique_ptr<SdBusLibrary>>(SdBusLibrary::open(kLibsystemdSoname));
  if (!loaded->ok()) return loaded->error();
  return &loaded->value()->api();
}

}  // namespace sealrun::resgroup
