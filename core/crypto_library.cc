// See crypto_library.h. dlopen and dlsym of the libcrypto functions sealrun calls, once per
// process.
#include "core/crypto_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace sealrun {
namespace {

// dlerror() is per thread in glibc and cleared by reading it; "" when there was none.
std::string last_dl_error() {
  const char* e = dlerror();
  return e ? e : "";
}

}  // namespace

Result<std::unique_ptr<CryptoLibrary>> CryptoLibrary::open(const std::string& soname) {
  (void)dlerror();  // a stale message from an earlier call must not be reported as ours
  // RTLD_NOW: a library that cannot bind all its own symbols fails here, not in the middle of a
  // digest. RTLD_LOCAL: its symbols stay out of the global namespace, so nothing loaded later
  // binds to them by accident.
  void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return Error::make(fmt::format(
        "{} could not be loaded: {} (sealrun hashes and signs with OpenSSL's libcrypto; "
        "install the Debian package libssl3)",
        soname, last_dl_error()));
  }
  std::unique_ptr<CryptoLibrary> lib(new CryptoLibrary(handle));
  // Each symbol is checked; on the first one missing, `lib` closes the handle as it goes.
#define SEALRUN_CRYPTO_RESOLVE(name)                                               \
  {                                                                                \
    void* symbol = dlsym(handle, #name);                                           \
    if (symbol == nullptr) {                                                       \
      return Error::make(                                                          \
          fmt::format("{} has no symbol {}: {} (sealrun needs OpenSSL 3's "        \
                      "libcrypto; install the Debian package libssl3)",            \
                      soname, #name, last_dl_error()));                            \
    }                                                                              \
    /* POSIX guarantees a function's address round-trips through dlsym's void*. */ \
    lib->api_.name = reinterpret_cast<decltype(lib->api_.name)>(symbol);           \
  }
  SEALRUN_CRYPTO_FUNCTIONS(SEALRUN_CRYPTO_RESOLVE)
#undef SEALRUN_CRYPTO_RESOLVE
  return lib;
}

CryptoLibrary::~CryptoLibrary() { dlclose(handle_); }

Result<const CryptoApi*> crypto_api() {
  // A function-local static: initialised exactly once even when several threads ask at once
  // (C++11 [stmt.dcl]/4). Never deleted: libcrypto objects may still be freed by destructors that
  // run at exit, after a static's own destructor would have unmapped the library under them.
  static const auto* const loaded =
      new Result<std::unique_ptr<CryptoLibrary>>(CryptoLibrary::open(kLibcryptoSoname));
  if (!loaded->ok()) return loaded->error();
  return &loaded->value()->api();
}

const CryptoApi& loaded_crypto_api() {
  auto api = crypto_api();
  if (!api.ok()) {
    std::fprintf(stderr,
                 "sealrun: internal error (please report it): a command hashed without loading "
                 "libcrypto first: %s\n",
                 api.error().message().c_str());
    std::abort();
  }
  return **api;
}

}  // namespace sealrun
