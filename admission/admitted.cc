// SPDX-License-Identifier: Apache-2.0
// admit(): see admitted.h. The order matters: bytes, then their digest, then the parse, then the
// pins — and the digest comparison happens before any byte of the document is interpreted.
#include "admission/admitted.h"

#include <fcntl.h>

#include <algorithm>

#include "core/bounded_file.h"
#include "fingerprint/sha256.h"

namespace sealrun::admission {

bool AdmissionReport::all_passed() const {
  return !refusal && !checks.empty() &&
         std::all_of(checks.begin(), checks.end(), [](const PinCheck& c) { return c.passed(); });
}

std::string AdmissionReport::summary() const {
  if (refusal) return refusal->message();
  std::string failed;
  std::string unreadable;  // the first pin the user may not read: its own refusal, said first
  for (const PinCheck& c : checks) {
    if (c.status == CheckStatus::kFail) failed += (failed.empty() ? "" : ", ") + c.target;
    if (c.status == CheckStatus::kUnreadable && unreadable.empty()) unreadable = c.observed;
  }
  if (!unreadable.empty())
    return failed.empty() ? unreadable : unreadable + "; pin mismatch: " + failed;
  if (failed.empty()) return all_passed() ? "every check passed" : "no check ran";
  return "pin mismatch: " + failed;
}

ReadOutcome read_admission(const std::string& path, const std::string& expected_sha256,
                           const ParseOptions& parse) {
  ReadOutcome out;
  AdmissionReport& report = out.report;
  report.path = path;
  std::string expected = expected_sha256;
  std::transform(expected.begin(), expected.end(), expected.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });

  auto bytes = read_bounded_file(AT_FDCWD, path, kMaxAdmissionBytes);
  if (!bytes.ok()) {
    Error e = std::move(bytes).error();
    report.checks.push_back({"admission", expected, "error: " + e.message(), CheckStatus::kFail});
    report.refusal = std::move(e).context("admission " + path);
    return out;
  }
  report.observed_sha256 = sha256_hex(*bytes);
  const bool digest_ok = report.observed_sha256 == expected;
  report.checks.push_back({"admission", expected, report.observed_sha256,
                           digest_ok ? CheckStatus::kPass : CheckStatus::kFail});

  auto doc = parse_admission_bytes(*bytes, parse);
  if (!doc.ok()) {
    report.refusal = std::move(doc).error().context("admission " + path);
    return out;
  }
  if (!digest_ok) {
    VerifyOptions skip;
    skip.skip_reason = "the admission's own SHA-256 does not match (see the admission check)";
    std::vector<PinCheck> pins = verify_pins(*doc, skip);
    report.checks.insert(report.checks.end(), pins.begin(), pins.end());
    return out;
  }
  out.admission.emplace(
      AuthenticatedAdmission(std::move(doc).value(), path, report.observed_sha256));
  return out;
}

AdmitOutcome verify_admission(AuthenticatedAdmission admission, AdmissionReport report,
                              const VerifyOptions& options) {
  AdmitOutcome out;
  const AdmissionDocument& doc = admission.document();
  std::vector<PinCheck> pins = verify_pins(doc, options);
  report.checks.insert(report.checks.end(), pins.begin(), pins.end());
  out.report = std::move(report);
  if (!out.report.all_passed()) return out;
  // The export (git, bundle) or snapshot (tree) when one was made, else a tree in place.
  std::string source_root = !options.source_export_dir.empty()     ? options.source_export_dir
                            : doc.source.kind == SourceKind::kTree ? doc.source.path
                                                                   : std::string();
  out.admitted.emplace(Admitted(std::move(admission.doc_), std::move(admission.path_),
                                std::move(admission.sha256_), out.report.checks,
                                std::move(source_root)));
  return out;
}

AdmitOutcome admit(const std::string& path, const std::string& expected_sha256,
                   const VerifyOptions& options) {
  ReadOutcome read = read_admission(path, expected_sha256);
  if (!read.admission) return AdmitOutcome{std::move(read.report), std::nullopt};
  return verify_admission(std::move(*read.admission), std::move(read.report), options);
}

}  // namespace sealrun::admission
