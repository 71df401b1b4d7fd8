// SPDX-License-Identifier: Apache-2.0
// See shared_library.h.
#include "core/shared_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace sealrun {
namespace {

// dlerror() is per thread in glibc and cleared by reading it; "" when there was none.
std::string last_dl_error() {
  const char* e = dlerror();
  return e ? e : "";
}

}  // namespace

Result<SharedLibrary> SharedLibrary::open(const std::string& soname, std::string_view hint) {
  (void)dlerror();  // a stale message from an earlier call must not be reported as ours
  // RTLD_NOW: a library that cannot bind all its own symbols fails here, not in the middle of a
  // call. RTLD_LOCAL: its symbols (and its chain's) stay out of the global namespace, so nothing
  // loaded later binds to them by accident.
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr)
    return Error::make(fmt::format("cannot load {}: {} ({})", soname, last_dl_error(), hint));
  return SharedLibrary(handle, soname, std::string(hint));
}

Result<void*> SharedLibrary::symbol(const char* name) const {
  (void)dlerror();
  void* address = dlsym(handle_, name);
  if (address == nullptr)
    return Error::make(
        fmt::format("{} has no symbol {}: {} ({})", soname_, name, last_dl_error(), hint_));
  return address;
}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace sealrun
