// See crypto_library.h. dlopen and dlsym of the libcrypto functions sealrun calls, once per
// process.
#include "core/crypto_library.h"

#include <cstdio>
#include <cstdlib>

namespace sealrun {

Result<std::unique_ptr<CryptoLibrary>> CryptoLibrary::open(const std::string& soname) {
  auto library = SEALRUN_TRY(SharedLibrary::open(
      soname,
      "sealrun hashes and signs with OpenSSL 3's libcrypto; install the Debian package libssl3"));
  std::unique_ptr<CryptoLibrary> lib(new CryptoLibrary(std::move(library)));
  // Each symbol is checked; on the first one missing, `lib` closes the library as it goes.
#define SEALRUN_CRYPTO_RESOLVE(name) SEALRUN_RESOLVE_INTO(lib->library_, lib->api_, name);
  SEALRUN_CRYPTO_FUNCTIONS(SEALRUN_CRYPTO_RESOLVE)
#undef SEALRUN_CRYPTO_RESOLVE
  return lib;
}

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
