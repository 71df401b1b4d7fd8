// SPDX-License-Identifier: Apache-2.0
// See libpq_library.h: dlopen and dlsym of the libpq functions the index calls, once per process.
#include "index/libpq_library.h"

namespace sealrun::index {
namespace {

using LibpqLibrary = ResolvedLibrary<LibpqApi>;

Status resolve_libpq(const SharedLibrary& library, LibpqApi& table) {
#define SEALRUN_LIBPQ_RESOLVE(name) SEALRUN_RESOLVE_INTO(library, table, name);
  SEALRUN_LIBPQ_FUNCTIONS(SEALRUN_LIBPQ_RESOLVE)
#undef SEALRUN_LIBPQ_RESOLVE
  return ok_status();
}

Result<std::unique_ptr<LibpqLibrary>> open_process_libpq() {
  return LibpqLibrary::open(kLibpqSoname,
                            "a postgresql:// index needs PostgreSQL's client library; install the "
                            "Debian package libpq5",
                            resolve_libpq);
}

}  // namespace

Result<const LibpqApi*> libpq_api() { return process_library(open_process_libpq); }

}  // namespace sealrun::index
