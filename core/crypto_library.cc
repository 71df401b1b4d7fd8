// SPDX-License-Identifier: Apache-2.0
// See crypto_library.h. dlopen and dlsym of the libcrypto functions sealrun calls, once per
// process.
#include "core/crypto_library.h"

#include <cstdio>
#include <cstdlib>

namespace sealrun {

namespace {

Status resolve_crypto(const SharedLibrary& library, CryptoApi& table) {
#define SEALRUN_CRYPTO_RESOLVE(name) SEALRUN_RESOLVE_INTO(library, table, name);
  SEALRUN_CRYPTO_FUNCTIONS(SEALRUN_CRYPTO_RESOLVE)
#undef SEALRUN_CRYPTO_RESOLVE
  return ok_status();
}

Result<std::unique_ptr<CryptoLibrary>> open_process_crypto() {
  return open_crypto_library(kLibcryptoSoname);
}

}  // namespace

Result<std::unique_ptr<CryptoLibrary>> open_crypto_library(const std::string& soname) {
  return CryptoLibrary::open(
      soname,
      "sealrun hashes and signs with OpenSSL 3's libcrypto; install the Debian package libssl3",
      resolve_crypto);
}

Result<const CryptoApi*> crypto_api() { return process_library(open_process_crypto); }

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
