// SPDX-License-Identifier: Apache-2.0
// parse_bounded_json(): see image_json.h. A size cap in front of the project's one strict JSON
// reader (core/strict_json.h), which refuses depth bombs and duplicate keys as it parses.
#include "fingerprint/image_json.h"

#include <fmt/format.h>

#include "core/strict_json.h"

namespace sealrun {

Result<nlohmann::json> parse_bounded_json(std::string_view bytes, const std::string& what,
                                          size_t max_bytes, int max_depth) {
  if (bytes.size() > max_bytes)
    return Error::make(
        fmt::format("{}: {} bytes of JSON, over the limit of {}", what, bytes.size(), max_bytes));
  // Image metadata may carry long strings (history, labels): only the document size bounds them.
  return parse_strict_json(bytes, static_cast<size_t>(max_depth), max_bytes).context(what);
}

}  // namespace sealrun
