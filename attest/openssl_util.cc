// SPDX-License-Identifier: Apache-2.0
// openssl_errors() and sha256_hex_of(): see openssl_util.h.
#include "attest/openssl_util.h"

#include <cstdio>
#include <cstdlib>

#include "core/hex.h"

namespace sealrun::attest {

std::string openssl_errors() {
  std::string out;
  unsigned long code;  // NOLINT(google-runtime-int): OpenSSL's type
  while ((code = ssl().ERR_get_error()) != 0) {
    char buf[256];
    ssl().ERR_error_string_n(code, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out;
}

std::string sha256_hex_of(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // EVP_Digest with SHA-256 fails only when libcrypto itself is broken (no default provider):
  // nothing can be trusted without a digest, so, as in fingerprint/sha256.cc, this aborts.
  if (ssl().EVP_Digest(bytes.data(), bytes.size(), md, &len, ssl().EVP_sha256(), nullptr) != 1) {
    std::fprintf(stderr, "sealrun: OpenSSL cannot compute SHA-256: %s\n", openssl_errors().c_str());
    std::abort();
  }
  return to_hex(md, len);
}

}  // namespace sealrun::attest
