// SPDX-License-Identifier: Apache-2.0
// libpq (PostgreSQL's client library) loaded at run time by the first `index` command given a
// postgresql:// URL, not by the dynamic loader at the start of every sealrun process. Linking it
// would map libpq and, through it, libssl, libcrypto and Kerberos into every command — `sealrun
// --version` and `census` among them, which must not load libcrypto (core/crypto_library.h says
// why) — for a back end most hosts never use. Types and declarations still come from libpq-fe.h;
// each pointer's type is the header's declaration (decltype), as for libcrypto.
#pragma once

#include <libpq-fe.h>

#include "core/result.h"
#include "core/shared_library.h"

namespace sealrun::index {

// The soname loaded (Debian: package libpq5).
inline constexpr const char* kLibpqSoname = "libpq.so.5";

// X(function): every libpq function the PostgreSQL back end calls.
#define SEALRUN_LIBPQ_FUNCTIONS(X) \
  X(PQconnectdb)                   \
  X(PQstatus)                      \
  X(PQerrorMessage)                \
  X(PQfinish)                      \
  X(PQsetNoticeProcessor)          \
  X(PQexec)                        \
  X(PQexecParams)                  \
  X(PQresultStatus)                \
  X(PQresultErrorMessage)          \
  X(PQclear)                       \
  X(PQnfields)                     \
  X(PQntuples)                     \
  X(PQfname)                       \
  X(PQgetisnull)                   \
  X(PQgetvalue)                    \
  X(PQgetlength)

struct LibpqApi {
#define SEALRUN_LIBPQ_MEMBER(name) \
  decltype(&::name) name = nullptr;  // NOLINT(bugprone-macro-parentheses)
  SEALRUN_LIBPQ_FUNCTIONS(SEALRUN_LIBPQ_MEMBER)
#undef SEALRUN_LIBPQ_MEMBER
};

// The process's libpq, opened on the first call and kept until exit (a failure too); the error
// names the library and the package that ships it.
Result<const LibpqApi*> libpq_api();

}  // namespace sealrun::index
