// See sd_bus_library.h. dlopen and dlsym of libsystemd's sd-bus functions, once per process.
#include "containment/resgroup/sd_bus_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace sealrun::resgroup {
namespace {

// dlerror() is per thread in glibc and cleared by reading it; "" when there was none.
std::string last_dl_error() {
  const char* e = dlerror();
  return e ? e : "";
}

}  // namespace

Result<std::unique_ptr<SdBusLibrary>> SdBusLibrary::open(const std::string& soname) {
  (void)dlerror();  // a stale message from an earlier call must not be reported as ours
  // RTLD_NOW: a library that cannot bind all its own symbols fails here, not in the middle of a
  // bus call. RTLD_LOCAL: its symbols (and its chain's) stay out of the global namespace, so
  // nothing loaded later binds to them by accident.
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Error::make(
        fmt::format("cannot load {}: {} (the systemd back end needs libsystemd's "
                    "sd-bus; Debian package libsystemd0)",
                    soname, last_dl_error()));
  }
  std::unique_ptr<SdBusLibrary> lib(new SdBusLibrary(handle, soname));
  // Each symbol is checked; on the first one missing, `lib` closes the handle as it goes.
#define SEALRUN_SD_BUS_RESOLVE(name)                                                              \
  {                                                                                               \
    void* symbol = dlsym(handle, #name);                                                          \
    if (symbol == nullptr) {                                                                      \
      return Error::make(fmt::format("{} has no symbol {}: {}", soname, #name, last_dl_error())); \
    }                                                                                             \
    /* POSIX guarantees a function's address round-trips through dlsym's void*. */                \
    lib->api_.name = reinterpret_cast<decltype(lib->api_.name)>(symbol);                          \
  }
  SEALRUN_SD_BUS_FUNCTIONS(SEALRUN_SD_BUS_RESOLVE)
#undef SEALRUN_SD_BUS_RESOLVE
  return lib;
}

SdBusLibrary::~SdBusLibrary() { dlclose(handle_); }

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
