// SPDX-License-Identifier: Apache-2.0
// Ed25519 keys: see keys.h. PEM text is classified by its one BEGIN label before libcrypto sees
// it, so each wrong kind of file gets a message that says what it is (a public key, an encrypted
// key, an OpenSSH key, a certificate) rather than OpenSSL's "no start line".
#include "attest/keys.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/key_file.h"
#include "core/syscall.h"

namespace sealrun::attest {

struct OpensslFree {
  // OPENSSL_free, written out: the macro calls CRYPTO_free directly.
  void operator()(unsigned char* p) const { ssl().CRYPTO_free(p, __FILE__, __LINE__); }
};

class KeyAccess {
 public:
  // A PublicKey from any EVP_PKEY holding an Ed25519 key: its SubjectPublicKeyInfo DER is both
  // the key id's input and, read back, a key object that holds no private half.
  static Result<PublicKey> public_from(EVP_PKEY* pkey, std::string_view name) {
    unsigned char* raw_der = nullptr;
    int len = ssl().i2d_PUBKEY(pkey, &raw_der);
    if (len <= 0)
      return Error::make(
          fmt::format("{}: cannot encode the public key: {}", name, openssl_errors()));
    std::unique_ptr<unsigned char, OpensslFree> der(raw_der);
    std::string bytes(reinterpret_cast<char*>(der.get()), static_cast<size_t>(len));
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
    EVP_PKEY* pub = ssl().d2i_PUBKEY(nullptr, &p, len);
    if (pub == nullptr)
      return Error::make(
          fmt::format("{}: cannot decode the public key: {}", name, openssl_errors()));
    PublicKey out;
    out.pkey_ = std::shared_ptr<EVP_PKEY>(pub, PkeyFree{});
    out.key_id_ = sha256_hex_of(bytes);
    return out;
  }
  static Result<SigningKey> signing_from(PkeyPtr pkey, std::string_view name) {
    SigningKey out;
    out.public_key_ = SEALRUN_TRY(public_from(pkey.get(), name));
    out.pkey_ = std::move(pkey);
    return out;
  }
};

namespace {

// The label of the only PEM block in `text` ("PRIVATE KEY"), or an error saying what the text is.
Result<std::string> pem_label(std::string_view text, std::string_view name) {
  constexpr std::string_view kBegin = "-----BEGIN ";
  size_t at = text.find(kBegin);
  if (at == std::string_view::npos)
    return Error::make(fmt::format("{}: is not a PEM key file (no \"-----BEGIN\" line)", name));
  if (text.find(kBegin, at + 1) != std::string_view::npos)
    return Error::make(
        fmt::format("{}: holds more than one PEM block; a key file holds exactly one key", name));
  size_t start = at + kBegin.size();
  size_t end = text.find("-----", start);
  if (end == std::string_view::npos || end - start > 64)
    return Error::make(fmt::format("{}: has a malformed PEM BEGIN line", name));
  return std::string(text.substr(start, end - start));
}

// No passphrase prompt, ever: an encrypted key is refused (the label check catches PKCS#8 ones;
// this catches legacy "Proc-Type: 4,ENCRYPTED" blocks) instead of reading the terminal.
int refuse_passphrase(char*, int, int, void*) { return -1; }

std::string key_type_name(EVP_PKEY* pkey) {
  const char* type = ssl().EVP_PKEY_get0_type_name(pkey);
  return type != nullptr ? type : "unknown";
}

Status require_ed25519(EVP_PKEY* pkey, std::string_view name) {
  if (ssl().EVP_PKEY_is_a(pkey, "ED25519") == 1) return ok_status();
  return Error::make(
      fmt::format("{}: is an {} key; sealrun signs and verifies with Ed25519 only "
                  "(make one with `sealrun key generate`)",
                  name, key_type_name(pkey)));
}

BioPtr memory_bio(std::string_view text) {
  return BioPtr(ssl().BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

Result<PkeyPtr> parse_private(std::string_view pem, std::string_view name) {
  auto bio = memory_bio(pem);
  if (!bio) return Error::make(fmt::format("{}: out of memory", name));
  ssl().ERR_clear_error();
  PkeyPtr pkey(ssl().PEM_read_bio_PrivateKey(bio.get(), nullptr, refuse_passphrase, nullptr));
  if (!pkey)
    return Error::make(
        fmt::format("{}: is not a readable private key ({})", name, openssl_errors()));
  return pkey;
}

Result<PkeyPtr> parse_public(std::string_view pem, std::string_view name) {
  auto bio = memory_bio(pem);
  if (!bio) return Error::make(fmt::format("{}: out of memory", name));
  ssl().ERR_clear_error();
  PkeyPtr pkey(ssl().PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!pkey)
    return Error::make(
        fmt::format("{}: is not a readable public key ({})", name, openssl_errors()));
  return pkey;
}

bool is_private_label(const std::string& label) {
  return label == "PRIVATE KEY" || label == "RSA PRIVATE KEY" || label == "EC PRIVATE KEY" ||
         label == "DSA PRIVATE KEY";
}

// Refusals for labels that are neither a usable private nor a public key.
Error wrong_label(const std::string& label, std::string_view name) {
  if (label == "ENCRYPTED PRIVATE KEY")
    return Error::make(
        fmt::format("{}: is passphrase-encrypted; sealrun reads an unencrypted PKCS#8 key "
                    "protected by its file "
                    "mode (0600)",
                    name));
  if (label == "OPENSSH PRIVATE KEY")
    return Error::make(fmt::format(
        "{}: is an OpenSSH-format key; sealrun reads PKCS#8 PEM (make one with `sealrun key "
        "generate`)",
        name));
  return Error::make(fmt::format("{}: holds a PEM \"{}\" block, not a key", name, label));
}

// Writes `bytes` to a new temporary file in `dirfd` and renames it to `final_name` without ever
// replacing an existing entry. The temporary is removed on every failure.
Status write_new_file(int dirfd, const std::string& final_name, std::string_view bytes, mode_t mode,
                      const std::string& display) {
  std::string tmp = fmt::format(".{}.tmp-{}", final_name, ::getpid());
  auto fd = SEALRUN_TRY(open_at(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode));
  auto fail = [&](Error e) -> Status {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return e;
  };
  // The umask can only take bits away; fchmod makes the mode exactly what the contract names.
  if (::fchmod(fd.get(), mode) != 0) return fail(Error::from_errno("fchmod " + display));
  if (auto st = write_all(fd.get(), bytes, display); !st) return fail(std::move(st).error());
  if (::fsync(fd.get()) != 0) return fail(Error::from_errno("fsync " + display));
  fd.reset();
  if (::renameat2(dirfd, tmp.c_str(), dirfd, final_name.c_str(), RENAME_NOREPLACE) != 0) {
    if (errno == EEXIST)
      return fail(Error::make(fmt::format(
          "{}: already exists (created meanwhile); sealrun never overwrites a key", display)));
    return fail(Error::from_errno("rename to " + display));
  }
  return ok_status();
}

Result<std::string> pem_of(EVP_PKEY* pkey, bool private_half) {
  BioPtr bio(ssl().BIO_new(ssl().BIO_s_mem()));
  if (!bio) return Error::make("out of memory");
  // PEM_write_bio_PrivateKey writes PKCS#8 ("BEGIN PRIVATE KEY") in OpenSSL 3; no cipher.
  int ok = private_half ? ssl().PEM_write_bio_PrivateKey(bio.get(), pkey, nullptr, nullptr, 0,
                                                         nullptr, nullptr)
                        : ssl().PEM_write_bio_PUBKEY(bio.get(), pkey);
  if (ok != 1) return Error::make("cannot encode the key as PEM: " + openssl_errors());
  char* data = nullptr;
  // BIO_get_mem_data, written out: the macro calls BIO_ctrl directly.
  long len =  // NOLINT(google-runtime-int): OpenSSL's type
      ssl().BIO_ctrl(bio.get(), BIO_CTRL_INFO, 0, reinterpret_cast<char*>(&data));
  return std::string(data, static_cast<size_t>(len));
}

}  // namespace

std::string PublicKey::pem() const {
  auto text = pem_of(pkey_.get(), false);
  return text ? *text : std::string();
}

Status PublicKey::verify(std::string_view message, std::string_view signature) const {
  if (signature.size() != kEd25519SignatureBytes)
    return Error::make(fmt::format("the signature is {} bytes; an Ed25519 signature is {}",
                                   signature.size(), kEd25519SignatureBytes));
  MdCtxPtr ctx(ssl().EVP_MD_CTX_new());
  if (!ctx) return Error::make("out of memory");
  ssl().ERR_clear_error();
  // Ed25519 takes no digest (PureEdDSA): md must be NULL and the one-shot call must be used.
  if (ssl().EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey_.get()) != 1)
    return Error::make("cannot start verification: " + openssl_errors());
  int rc = ssl().EVP_DigestVerify(
      ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
      reinterpret_cast<const unsigned char*>(message.data()), message.size());
  openssl_errors();  // a failed verification leaves an entry; drop it
  if (rc != 1)
    return Error::make(fmt::format("the signature does not verify with key {}", key_id_));
  return ok_status();
}

Result<std::string> SigningKey::sign(std::string_view message) const {
  MdCtxPtr ctx(ssl().EVP_MD_CTX_new());
  if (!ctx) return Error::make("out of memory");
  ssl().ERR_clear_error();
  if (ssl().EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, pkey_.get()) != 1)
    return Error::make("cannot start signing: " + openssl_errors());
  std::string sig(kEd25519SignatureBytes, '\0');
  size_t len = sig.size();
  if (ssl().EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                           reinterpret_cast<const unsigned char*>(message.data()),
                           message.size()) != 1)
    return Error::make("signing failed: " + openssl_errors());
  sig.resize(len);
  return sig;
}

Result<SigningKey> signing_key_from_pem(std::string_view pem, std::string_view name) {
  (void)SEALRUN_TRY(crypto_api());
  auto label = SEALRUN_TRY(pem_label(pem, name));
  if (label == "PUBLIC KEY")
    return Error::make(
        fmt::format("{}: holds a public key; signing needs the private key ({}, not {})", name,
                    kPrivateKeyFile, kPublicKeyFile));
  if (!is_private_label(label)) return wrong_label(label, name);
  auto pkey = SEALRUN_TRY(parse_private(pem, name));
  SEALRUN_TRY(require_ed25519(pkey.get(), name));
  return KeyAccess::signing_from(std::move(pkey), name);
}

Result<PublicKey> public_key_from_pem(std::string_view pem, std::string_view name) {
  (void)SEALRUN_TRY(crypto_api());
  auto label = SEALRUN_TRY(pem_label(pem, name));
  PkeyPtr pkey;
  if (label == "PUBLIC KEY") {
    pkey = SEALRUN_TRY(parse_public(pem, name));
  } else if (is_private_label(label)) {
    pkey = SEALRUN_TRY(parse_private(pem, name));
  } else {
    return wrong_label(label, name);
  }
  SEALRUN_TRY(require_ed25519(pkey.get(), name));
  return KeyAccess::public_from(pkey.get(), name);
}

Result<SigningKey> load_signing_key(const std::string& path) {
  auto text = SEALRUN_TRY(read_key_file(AT_FDCWD, path, KeySecrecy::kPrivate));
  return signing_key_from_pem(text, "key file " + path);
}

Result<SigningKey> load_signing_key_at(int dirfd, const std::string& path,
                                       const std::string& display) {
  auto text = read_key_file(dirfd, path, KeySecrecy::kPrivate);
  if (!text) return std::move(text).error().context(display);
  return signing_key_from_pem(*text, "key file " + display);
}

Result<PublicKey> load_public_key(const std::string& path) {
  auto text = SEALRUN_TRY(read_key_file(AT_FDCWD, path, KeySecrecy::kPublic));
  return public_key_from_pem(text, "key file " + path);
}

Result<GeneratedKeyPair> generate_key_pair(const std::string& out_dir) {
  if (out_dir.empty()) return Error::make("--out-dir: an empty path");
  (void)SEALRUN_TRY(crypto_api());  // before anything is created
  // Only the last component is created: a typo in a parent should fail, not grow a tree.
  if (::mkdir(out_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Error::from_errno(fmt::format("create {}", out_dir));
  auto dirfd = SEALRUN_TRY(open_at(AT_FDCWD, out_dir, O_RDONLY | O_DIRECTORY));
  GeneratedKeyPair out;
  out.key_path = out_dir + "/" + kPrivateKeyFile;
  out.pub_path = out_dir + "/" + kPublicKeyFile;
  for (const char* name : {kPrivateKeyFile, kPublicKeyFile}) {
    struct stat st {};
    if (::fstatat(dirfd.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      return Error::make(fmt::format(
          "{}/{}: already exists; sealrun never overwrites a key (remove both files first, or "
          "choose another --out-dir)",
          out_dir, name));
    if (errno != ENOENT) return Error::from_errno(fmt::format("stat {}/{}", out_dir, name));
  }
  ssl().ERR_clear_error();
  PkeyPtr pkey(ssl().EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
  if (!pkey) return Error::make("generating an Ed25519 key failed: " + openssl_errors());
  auto priv_pem = SEALRUN_TRY(pem_of(pkey.get(), true));
  auto pub_pem = SEALRUN_TRY(pem_of(pkey.get(), false));
  auto pub = SEALRUN_TRY(KeyAccess::public_from(pkey.get(), out.key_path));
  out.key_id = pub.key_id();
  SEALRUN_TRY(write_new_file(dirfd.get(), kPrivateKeyFile, priv_pem, 0600, out.key_path));
  if (auto st = write_new_file(dirfd.get(), kPublicKeyFile, pub_pem, 0644, out.pub_path); !st) {
    // Half a pair is worse than none: the private key we just made has no published half.
    ::unlinkat(dirfd.get(), kPrivateKeyFile, 0);
    return std::move(st).error();
  }
  if (::fsync(dirfd.get()) != 0) return Error::from_errno("fsync " + out_dir);
  return out;
}

}  // namespace sealrun::attest
