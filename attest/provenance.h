// SPDX-License-Identifier: Apache-2.0
// A receipt as an in-toto Statement v1 carrying SLSA provenance v1 (docs/build-type.md): the
// outputs are the subjects; the admission (command, environment, limits, required containment) is
// `externalParameters`; every pinned input is a `resolvedDependency` with a uri and a digest; the
// grant and the run's outcome are `internalParameters`; the receipt itself is a byproduct.
//
// Only a `built` receipt exports by default. With include_failed, another receipt exports too,
// and says so where a consumer cannot miss it: `runDetails.builder.id` is the "unsuccessful"
// builder (a policy that accepts sealrun's enforcing builder rejects it) and
// `internalParameters.outcome` holds the state, exit and reason.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "attest/keys.h"
#include "core/result.h"

namespace sealrun::attest {

inline constexpr char kStatementType[] = "https://in-toto.io/Statement/v1";
inline constexpr char kSlsaProvenanceV1[] = "https://slsa.dev/provenance/v1";
// The stable sealrun namespace for type and builder URIs: the page that defines them.
#define SEALRUN_BUILD_TYPE_PAGE "https://github.com/sealrun/sealrun/blob/main/docs/build-type.md"
inline constexpr char kBuildTypeUri[] = SEALRUN_BUILD_TYPE_PAGE "#run-v1";
inline constexpr char kBuilderEnforcing[] = SEALRUN_BUILD_TYPE_PAGE "#builder-enforcing-v1";
inline constexpr char kBuilderReportOnly[] = SEALRUN_BUILD_TYPE_PAGE "#builder-report-only-v1";
inline constexpr char kBuilderUnsuccessful[] = SEALRUN_BUILD_TYPE_PAGE "#builder-unsuccessful-v1";
#undef SEALRUN_BUILD_TYPE_PAGE

struct ExportOptions {
  bool include_failed = false;  // export a receipt whose state is not `built`
};

// The Statement for a parsed receipt; `receipt_sha256` is the SHA-256 of the receipt file's exact
// bytes (the byproduct's digest). Refuses, naming the field: a state other than built (unless
// include_failed), a receipt without `admission` or `sealrun_version` (written before 0.2.0), no
// outputs (a Statement needs a subject), an output without a valid sha256, two outputs with one
// name, an input without uri or digest.
Result<nlohmann::json> receipt_to_statement(const nlohmann::json& receipt,
                                            const std::string& receipt_sha256,
                                            const ExportOptions& options);

// The same from the receipt file's bytes (parsed strictly, digest computed here), as JSON text:
// keys sorted, two-space indent, a trailing newline.
Result<std::string> export_statement(std::string_view receipt_bytes, const ExportOptions& options);

// The Statement (compact JSON) signed into a DSSE envelope of type application/vnd.in-toto+json.
Result<std::string> export_signed_statement(std::string_view receipt_bytes,
                                            const ExportOptions& options, const SigningKey& key);

}  // namespace sealrun::attest
