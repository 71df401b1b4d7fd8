// SPDX-License-Identifier: Apache-2.0
// libcrypto (OpenSSL 3) loaded at run time, by the first command that hashes or signs, not by the
// dynamic loader at the start of every process. It lives in core/ because its two users,
// fingerprint/ (Sha256, the hot one) and attest/ (keys, signatures), both link sealrun_core and
// nothing else in common: attest/ does not depend on fingerprint/.
//
// Why: Debian's libcrypto.so.3 is linked `-z now`, so mapping it costs some 3,400 eager symbol
// bindings — 0.6 ms of the ~3 ms that `sealrun census DIR` or `sealrun --version` took to start,
// although neither hashes anything. Here the library is dlopen()ed once and the libcrypto
// functions sealrun calls are resolved into a table of pointers; OpenSSL's types, constants and
// declarations still come from its headers at compile time, and each pointer's type is taken from
// the header's declaration (decltype), so a signature can never drift from the header.
//
// OpenSSL macros that expand to calls (OPENSSL_free → CRYPTO_free, BIO_get_mem_data → BIO_ctrl)
// are written out at their call sites as calls through this table: libcrypto is not linked, so a
// direct call, spelled out or hidden in a macro, fails to link.
//
// How a missing library surfaces: every sealrun command that may hash loads it up front
// (controller/cli/crypto_gate.cc) and stops with this module's error; functions that already return
// a Result (attest/) call crypto_api() themselves. Sha256, which cannot return an error, then finds
// the table loaded (loaded_crypto_api()).
#pragma once

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

#include "core/result.h"
#include "core/shared_library.h"

namespace sealrun {

// The soname sealrun loads (Debian: package libssl3, which ships libcrypto.so.3).
inline constexpr const char* kLibcryptoSoname = "libcrypto.so.3";

// X(function): every libcrypto function sealrun calls. One list makes the table's members and the
// symbols resolved for it the same set.
#define SEALRUN_CRYPTO_FUNCTIONS(X) \
  X(EVP_MD_fetch)                   \
  X(EVP_MD_CTX_new)                 \
  X(EVP_MD_CTX_free)                \
  X(EVP_DigestInit_ex2)             \
  X(EVP_DigestUpdate)               \
  X(EVP_DigestFinal_ex)             \
  X(EVP_Digest)                     \
  X(EVP_sha256)                     \
  X(EVP_DigestSignInit)             \
  X(EVP_DigestSign)                 \
  X(EVP_DigestVerifyInit)           \
  X(EVP_DigestVerify)               \
  X(EVP_PKEY_Q_keygen)              \
  X(EVP_PKEY_free)                  \
  X(EVP_PKEY_get0_type_name)        \
  X(EVP_PKEY_is_a)                  \
  X(PEM_read_bio_PrivateKey)        \
  X(PEM_read_bio_PUBKEY)            \
  X(PEM_write_bio_PrivateKey)       \
  X(PEM_write_bio_PUBKEY)           \
  X(i2d_PUBKEY)                     \
  X(d2i_PUBKEY)                     \
  X(BIO_new)                        \
  X(BIO_new_mem_buf)                \
  X(BIO_s_mem)                      \
  X(BIO_ctrl)                       \
  X(BIO_free)                       \
  X(CRYPTO_free)                    \
  X(ERR_get_error)                  \
  X(ERR_error_string_n)             \
  X(ERR_clear_error)

// The resolved functions, each named as in OpenSSL's headers (api.EVP_DigestUpdate(...)). A table
// handed out by this module has every member set.
struct CryptoApi {
  // `name` is a declarator here, which cannot be parenthesised.
#define SEALRUN_CRYPTO_MEMBER(name) \
  decltype(&::name) name = nullptr;  // NOLINT(bugprone-macro-parentheses)
  SEALRUN_CRYPTO_FUNCTIONS(SEALRUN_CRYPTO_MEMBER)
#undef SEALRUN_CRYPTO_MEMBER
};

// One dlopen()ed copy of a library with every function of CryptoApi resolved (shared_library.h).
using CryptoLibrary = ResolvedLibrary<CryptoApi>;

// dlopen(soname, RTLD_NOW | RTLD_LOCAL) and dlsym of each function. Errors name the library and,
// for a symbol it lacks, the symbol: "libcrypto.so.3 has no symbol EVP_DigestUpdate: ...".
Result<std::unique_ptr<CryptoLibrary>> open_crypto_library(const std::string& soname);

// The process's libcrypto (kLibcryptoSoname), opened on the first call from any thread and kept
// until exit, a failure too (process_library(), shared_library.h).
Result<const CryptoApi*> crypto_api();

// The table for code that cannot return an error (Sha256, deleters of objects libcrypto made). It
// loads the library if nothing has yet; when that fails, sealrun's invariant — every command that
// hashes asked crypto_api() first and stopped on its error — was broken, and this is the one place
// that aborts, naming the library and the error, rather than hash nothing.
const CryptoApi& loaded_crypto_api();

}  // namespace sealrun
