// SPDX-License-Identifier: Apache-2.0
// See libpq_library.h: dlopen and dlsym of the libpq functions the index calls, once per process.
#include "index/libpq_library.h"

namespace sealrun::index {
namespace {

using LibpqLibrary = ResolvedLibrary<LibpqApi>;

SEALRUN_DEFINE_RESOLVER(resolve_libpq, LibpqApi, SEALRUN_LIBPQ_FUNCTIONS)

Result<std::unique_ptr<LibpqLibrary>> open_process_libpq() {
  return LibpqLibrary::open(kLibpqSoname,
                            "a postgresql:// index needs PostgreSQL's client library; install the "
                            "Debian package libpq5",
                            resolve_libpq);
}

}  // namespace

Result<const LibpqApi*> libpq_api() { return process_library(open_process_libpq); }

}  // namespace sealrun::index
