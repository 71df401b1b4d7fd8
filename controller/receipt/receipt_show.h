// SPDX-License-Identifier: Apache-2.0
// `receipt show`'s text beyond the verdict and the details receipt_review.cc prints: what ran (the
// sealrun that wrote the receipt, `rebuild_of`, argv, cwd, environment), with which inputs and
// their digests, a summary of the job's view, the limits the run reached, and the signature (the
// signer's key id, and whether the envelope verified). `--verbose` lists everything: every input,
// view entry, environment variable, output, admitted limit and census sample. Sizes are in binary
// units; every string from the receipt is escaped for the terminal (display_text.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace sealrun::receipt {

struct ShowOptions {
  bool verbose = false;
  // The signature as check_signature() found it: "pass", "FAIL" or "note", and its detail.
  std::string signature_result;
  std::string signature_detail;
};

// summary_text() (with every output when verbose), then the sections above.
std::string show_text(const nlohmann::json& receipt, const ShowOptions& options);

}  // namespace sealrun::receipt
