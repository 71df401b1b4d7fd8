// SPDX-License-Identifier: Apache-2.0
// OpenSSL handles owned by RAII and the two small things every attest file needs from libcrypto:
// the text of OpenSSL's error queue (for messages) and a one-shot SHA-256. attest/ links only
// core, so it does not borrow fingerprint's Sha256; a one-shot EVP_Digest is all it needs.
// libcrypto is reached through core/crypto_library.h's table; the entry points that return a
// Result load it (crypto_api()) and everything here runs after one of them has.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/crypto_library.h"

namespace sealrun::attest {

// The table, for code that runs only once libcrypto made the object it works on.
inline const CryptoApi& ssl() { return loaded_crypto_api(); }

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { ssl().EVP_PKEY_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { ssl().BIO_free(p); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* p) const { ssl().EVP_MD_CTX_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

// Drains OpenSSL's (thread-local) error queue into one line, "" when it is empty. Every failing
// libcrypto call is followed by this, so a stale error never leaks into a later message.
std::string openssl_errors();

// SHA-256 of `bytes`, 64 lower-case hex digits.
std::string sha256_hex_of(std::string_view bytes);

}  // namespace sealrun::attest
