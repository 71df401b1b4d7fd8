// SPDX-License-Identifier: Apache-2.0
// SHA-256 through OpenSSL 3's EVP interface. The digest implementation is fetched from the default
// provider once per process (an implicit fetch on every EVP_DigestInit_ex costs a provider lookup,
// which shows when hashing tens of thousands of small files); each Sha256 owns one EVP_MD_CTX.
// libcrypto is reached through core/crypto_library.h's table, which the command loaded before it
// hashed; each Sha256 keeps the table's address so the per-block update is one indirect call.
#include "fingerprint/sha256.h"

#include <cstdio>
#include <cstdlib>

#include "core/crypto_library.h"
#include "core/hex.h"

namespace sealrun {
namespace {

// The fetched SHA-256 implementation, shared by every context for the life of the process. A
// failure here means OpenSSL itself is broken (no default provider): nothing in sealrun can be
// trusted without a digest, so this is the one place that aborts rather than returning an error.
const EVP_MD* sha256_md() {
  static const EVP_MD* md = [] {
    EVP_MD* fetched = loaded_crypto_api().EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (fetched == nullptr) {
      std::fputs("sealrun: OpenSSL cannot provide SHA-256 (EVP_MD_fetch failed)\n", stderr);
      std::abort();
    }
    return fetched;
  }();
  return md;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { loaded_crypto_api().EVP_MD_CTX_free(ctx); }
};

void check(int rc, const char* what) {
  // EVP digest calls only fail on allocation failure or a broken provider; see sha256_md().
  if (rc != 1) {
    std::fprintf(stderr, "sealrun: OpenSSL %s failed\n", what);
    std::abort();
  }
}

}  // namespace

struct Sha256::Ctx {
  const CryptoApi* api = &loaded_crypto_api();
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> md_ctx{api->EVP_MD_CTX_new()};
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md_ctx) check(0, "EVP_MD_CTX_new");
  check(ctx_->api->EVP_DigestInit_ex2(ctx_->md_ctx.get(), sha256_md(), nullptr),
        "EVP_DigestInit_ex2");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t size) {
  if (size == 0) return;
  check(ctx_->api->EVP_DigestUpdate(ctx_->md_ctx.get(), data, size), "EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::finish() {
  std::array<uint8_t, 32> digest{};
  unsigned int len = 0;
  check(ctx_->api->EVP_DigestFinal_ex(ctx_->md_ctx.get(), digest.data(), &len),
        "EVP_DigestFinal_ex");
  // Ready for the next message without another allocation.
  check(ctx_->api->EVP_DigestInit_ex2(ctx_->md_ctx.get(), sha256_md(), nullptr),
        "EVP_DigestInit_ex2");
  return digest;
}

std::string Sha256::finish_hex() {
  auto digest = finish();
  return to_hex(digest.data(), digest.size());
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish_hex();
}

}  // namespace sealrun
