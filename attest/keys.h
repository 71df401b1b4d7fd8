// Ed25519 keys through OpenSSL 3's EVP interface: generating a key pair into a directory, loading
// a signing key (refusing every file an auditor should not trust, key_file.h) or a public key,
// signing and verifying raw messages. The key id is the hex SHA-256 of the public key's DER
// (SubjectPublicKeyInfo) bytes: `openssl pkey -pubin -in sealrun.pub -outform DER | sha256sum`.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "attest/openssl_util.h"
#include "core/result.h"

namespace sealrun::attest {

inline constexpr char kPrivateKeyFile[] = "sealrun.key";
inline constexpr char kPublicKeyFile[] = "sealrun.pub";
// The default signing key below the state directory (docs/signing.md: STATE/keys/sealrun.key).
inline constexpr char kDefaultKeyInState[] = "keys/sealrun.key";
inline constexpr size_t kEd25519SignatureBytes = 64;

// An Ed25519 public key. Copyable (libcrypto reference-counts the key).
class PublicKey {
 public:
  const std::string& key_id() const { return key_id_; }
  // SubjectPublicKeyInfo PEM ("-----BEGIN PUBLIC KEY-----").
  std::string pem() const;
  // Checks an Ed25519 signature over `message`; the error says the signature does not verify with
  // this key id (never why beyond that: a failed verification has no better explanation).
  Status verify(std::string_view message, std::string_view signature) const;

 private:
  friend class KeyAccess;
  std::shared_ptr<EVP_PKEY> pkey_;
  std::string key_id_;
};

// An Ed25519 private key, loaded only through the checks of key_file.h. Move-only.
class SigningKey {
 public:
  const std::string& key_id() const { return public_key_.key_id(); }
  const PublicKey& public_key() const { return public_key_; }
  // The 64-byte Ed25519 signature of `message` (PureEdDSA: the message itself, not a digest).
  Result<std::string> sign(std::string_view message) const;

 private:
  friend class KeyAccess;
  PkeyPtr pkey_;
  PublicKey public_key_;
};

struct GeneratedKeyPair {
  std::string key_path;  // DIR/sealrun.key, PKCS#8 PEM, mode 0600
  std::string pub_path;  // DIR/sealrun.pub, SubjectPublicKeyInfo PEM, mode 0644
  std::string key_id;
};

// Generates a new key pair into `out_dir` (created with mode 0700 when it does not exist; its
// parent must). Refuses when either file already exists, in any form (a dangling symlink too):
// a key is never overwritten. Each file is written to a temporary name, fsynced and renamed with
// RENAME_NOREPLACE, so a crash leaves no half key and a racing writer cannot be overwritten.
Result<GeneratedKeyPair> generate_key_pair(const std::string& out_dir);

// Loads a signing key from the user's path (a symlink as its last component is refused).
Result<SigningKey> load_signing_key(const std::string& path);
// Loads a signing key below a directory fd (e.g. kDefaultKeyInState below the state directory),
// no symlink anywhere on the way. `display` names the file in messages ("STATE/keys/sealrun.key").
Result<SigningKey> load_signing_key_at(int dirfd, const std::string& path,
                                       const std::string& display);
// Loads a public key: a SubjectPublicKeyInfo PEM (sealrun.pub), or the public half of an Ed25519
// private key file.
Result<PublicKey> load_public_key(const std::string& path);

// The parsers behind the loaders, over PEM text; `name` names the source in messages.
Result<SigningKey> signing_key_from_pem(std::string_view pem, std::string_view name);
Result<PublicKey> public_key_from_pem(std::string_view pem, std::string_view name);

}  // namespace sealrun::attest
