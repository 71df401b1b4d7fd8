// SPDX-License-Identifier: Apache-2.0
// Choosing the back end from the URL (db.h).
#include "index/db.h"

#include <fmt/format.h>

namespace sealrun::index {

std::string redact_url(std::string_view url) {
  // scheme://user:password@host: the password is between the first ':' after "//" and the '@'.
  std::string out(url);
  auto scheme = out.find("://");
  if (scheme == std::string::npos) return out;
  auto at = out.find('@', scheme + 3);
  if (at == std::string::npos) return out;
  auto colon = out.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return out;
  return out.substr(0, colon + 1) + "***" + out.substr(at);
}

Result<std::unique_ptr<Db>> open_db(const std::string& url, bool create) {
  if (url.rfind("sqlite:", 0) == 0) {
    std::string path = url.substr(7);
    if (path.empty())
      return Error::make("--db sqlite:: no file named (write sqlite:/path/to/index.sqlite)");
    return open_sqlite(path, create);
  }
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return open_postgres(url);
  return Error::make(
      fmt::format("--db {:?}: expected sqlite:PATH or postgresql://USER@HOST/DB (libpq's URI)",
                  redact_url(url)));
}

}  // namespace sealrun::index
