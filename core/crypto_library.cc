// SPDX-License-Identifier: Apache-2.0
// See crypto_library.h. dlopen and dlsym of the libcrypto functions sealrun calls, once per
// process.
#include "core/crypto_library.h"

#include <cstdio>
#include <cstdlib>

namespace sealrun {

namespace {

SEALRUN_DEFINE_RESOLVER(resolve_crypto, CryptoApi, SEALRUN_CRYPTO_FUNCTIONS)

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
