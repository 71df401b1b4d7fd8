// SPDX-License-Identifier: Apache-2.0
// SHA-256 through OpenSSL's EVP interface (SHA-NI when the CPU has it). The one hashing primitive
// of sealrun: every pin, inventory and receipt digest goes through here.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace sealrun {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Finishes and returns the digest; the object is reset and can be reused.
  std::array<uint8_t, 32> finish();
  // finish() as 64 lower-case hex digits.
  std::string finish_hex();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

// SHA-256 of a byte string, as lower-case hex.
std::string sha256_hex(std::string_view bytes);

}  // namespace sealrun
