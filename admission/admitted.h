// The gate: reading an admission file, checking its own digest, parsing it strictly and verifying
// every pin. Only when all of that passed does an `Admitted` exist — its constructor is private
// and admit() is the one place that calls it — so a later stage that takes an Admitted has proof
// in the type system that nothing was skipped (docs/style.md D1: values flow forward).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "admission/document.h"
#include "admission/verify.h"
#include "core/result.h"

namespace sealrun::admission {

struct AdmitOutcome;
struct ReadOutcome;

// Everything admit() found out, pass or fail; the receipt records `checks` as verifications[].
struct AdmissionReport {
  std::string path;
  std::string observed_sha256;   // of the exact bytes read; empty when they could not be read
  std::vector<PinCheck> checks;  // "admission" first, then verify_pins() order
  // Why the document was refused before or apart from the pins (unreadable, malformed, schema).
  std::optional<Error> refusal;
  bool all_passed() const;
  // A one-line reason for a person when !all_passed(): the refusal, else the first pin the user
  // may not read ("cannot read PATH as USER: ...", unreadable.h) and the failed targets.
  std::string summary() const;
};

// Step 1 of a run: the admission's exact bytes were read (bounded), their SHA-256 matched the one
// given, and they parsed strictly. Only read_admission() makes one; nothing has been verified
// against the world yet (that is step 2, verify_admission()).
class AuthenticatedAdmission {
 public:
  AuthenticatedAdmission(AuthenticatedAdmission&&) = default;
  AuthenticatedAdmission& operator=(AuthenticatedAdmission&&) = default;
  const AdmissionDocument& document() const { return doc_; }
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }

 private:
  friend ReadOutcome read_admission(const std::string&, const std::string&, const ParseOptions&);
  friend AdmitOutcome verify_admission(AuthenticatedAdmission, AdmissionReport,
                                       const VerifyOptions&);
  AuthenticatedAdmission(AdmissionDocument doc, std::string path, std::string sha256)
      : doc_(std::move(doc)), path_(std::move(path)), sha256_(std::move(sha256)) {}
  AdmissionDocument doc_;
  std::string path_;
  std::string sha256_;
};

struct ReadOutcome {
  AdmissionReport report;  // the "admission" check; when refused, also why (and pins skipped)
  std::optional<AuthenticatedAdmission> admission;  // set when the digest matched and it parsed
};

// Step 1: reads `path` (regular file, no symlink, <= 1 MiB), compares the SHA-256 of its exact
// bytes with `expected_sha256` first, then parses it strictly. When the digest does not match,
// the document is still parsed (bounded, harmless) so that problems are reported, and its pins
// are listed as skipped: an unauthenticated document does not get to point us at paths to hash.
// `parse`: a learning run reads an admission whose closure is still to come (ParseOptions).
ReadOutcome read_admission(const std::string& path, const std::string& expected_sha256,
                           const ParseOptions& parse = {});

class Admitted {
 public:
  Admitted(Admitted&&) = default;
  Admitted& operator=(Admitted&&) = default;
  Admitted(const Admitted&) = delete;
  Admitted& operator=(const Admitted&) = delete;

  const AdmissionDocument& document() const { return doc_; }
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }
  const std::vector<PinCheck>& verifications() const { return checks_; }
  // Where the verified source bytes are: VerifyOptions::source_export_dir when it was given (an
  // export of a git or bundle source, a snapshot of a tree), else the tree itself for kind
  // "tree" (and empty for git and bundle sources).
  const std::string& source_root() const { return source_root_; }

 private:
  friend AdmitOutcome verify_admission(AuthenticatedAdmission, AdmissionReport,
                                       const VerifyOptions&);
  Admitted(AdmissionDocument doc, std::string path, std::string sha256,
           std::vector<PinCheck> checks, std::string source_root)
      : doc_(std::move(doc)),
        path_(std::move(path)),
        sha256_(std::move(sha256)),
        checks_(std::move(checks)),
        source_root_(std::move(source_root)) {}

  AdmissionDocument doc_;
  std::string path_;
  std::string sha256_;
  std::vector<PinCheck> checks_;
  std::string source_root_;
};

struct AdmitOutcome {
  AdmissionReport report;
  std::optional<Admitted> admitted;  // set exactly when report.all_passed()
};

// Step 2: verifies every pin of an authenticated admission; `report` is step 1's, extended.
AdmitOutcome verify_admission(AuthenticatedAdmission admission, AdmissionReport report,
                              const VerifyOptions& options = {});

// Both steps: read_admission(), then, if it authenticated, verify_admission().
AdmitOutcome admit(const std::string& path, const std::string& expected_sha256,
                   const VerifyOptions& options = {});

}  // namespace sealrun::admission
