// SPDX-License-Identifier: Apache-2.0
// dlopen() and dlsym() with errors that name the library, the symbol and what to install: the
// common half of the libraries sealrun loads on first use instead of linking (libcrypto,
// core/crypto_library.h; libsystemd, containment/resgroup/sd_bus_library.h; libpq,
// index/libpq_library.h), each of which keeps a table of the functions it resolves with these.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "core/result.h"

namespace sealrun {

// A dlopen()ed library, dlclose()d with the object. Move-only.
class SharedLibrary {
 public:
  // dlopen(soname, RTLD_NOW | RTLD_LOCAL). `hint` ends the error: who needs it and which package
  // ships it ("cannot load libcrypto.so.3: <dlerror> (<hint>)").
  static Result<SharedLibrary> open(const std::string& soname, std::string_view hint);

  // The address of `name`, or "<soname> has no symbol <name>: <dlerror> (<hint>)".
  Result<void*> symbol(const char* name) const;

  SharedLibrary(SharedLibrary&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        soname_(std::move(other.soname_)),
        hint_(std::move(other.hint_)) {}
  SharedLibrary& operator=(SharedLibrary&&) = delete;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  const std::string& soname() const { return soname_; }

 private:
  SharedLibrary(void* handle, std::string soname, std::string hint)
      : handle_(handle), soname_(std::move(soname)), hint_(std::move(hint)) {}
  void* handle_;
  std::string soname_;
  std::string hint_;
};

// X-macro body shared by the tables: sets `table.name` to the symbol `name` of `library` (a
// SharedLibrary), typed as the table's member (taken from the header's declaration), or returns
// the error from the enclosing function. POSIX guarantees a function's address round-trips
// through dlsym's void*.
#define SEALRUN_RESOLVE_INTO(library, table, name) \
  (table).name = reinterpret_cast<decltype((table).name)>(SEALRUN_TRY((library).symbol(#name)))

// Defines `Status function(const SharedLibrary& library, Api& table)`, which resolves every
// function the X-macro `list` names (`list(F)` expands to `F(name)` for each) into `table`: the
// resolver each library's table (crypto, sd-bus, libpq) hands to ResolvedLibrary::open.
#define SEALRUN_RESOLVE_ONE_(name) SEALRUN_RESOLVE_INTO(library, table, name);
// (Api is a type in a parameter list: it cannot be parenthesised, hence the NOLINT.)
#define SEALRUN_DEFINE_RESOLVER(function, Api, list)                     \
  Status function(const SharedLibrary& library,                          \
                  Api& table) { /* NOLINT(bugprone-macro-parentheses) */ \
    list(SEALRUN_RESOLVE_ONE_) return ok_status();                       \
  }

// One dlopen()ed copy of a library with every function of its table `Api` (a struct of function
// pointers) resolved by `resolve` (SEALRUN_RESOLVE_INTO for each member). Closing it (the
// destructor) invalidates its table: only tests and load failures close one; the process's own
// copy (process_library()) is never closed.
template <typename Api>
class ResolvedLibrary {
 public:
  using Resolve = Status (*)(const SharedLibrary& library, Api& table);
  // SharedLibrary::open, then `resolve`: errors name the library and, for a symbol it lacks, the
  // symbol. On the first symbol missing, the library is closed again.
  static Result<std::unique_ptr<ResolvedLibrary>> open(const std::string& soname,
                                                       std::string_view hint, Resolve resolve) {
    auto library = SEALRUN_TRY(SharedLibrary::open(soname, hint));
    std::unique_ptr<ResolvedLibrary> lib(new ResolvedLibrary(std::move(library)));
    SEALRUN_TRY(resolve(lib->library_, lib->api_));
    return lib;
  }

  const Api& api() const { return api_; }
  const std::string& soname() const { return library_.soname(); }

 private:
  explicit ResolvedLibrary(SharedLibrary library) : library_(std::move(library)) {}
  SharedLibrary library_;
  Api api_;
};

// The process's copy of the library whose table is `Api`, opened by `open` on the first call from
// any thread and kept until exit; a failure is kept too, and every later call returns the same
// error (the library does not appear while we run, and a second dlopen would cost the same search
// again). A function-local static per `Api`: initialised exactly once even when several threads
// ask at once (C++11 [stmt.dcl]/4). Never deleted: objects of the library may still be released
// by destructors that run at exit, after a static's own destructor would have unmapped the library
// under them.
template <typename Api>
Result<const Api*> process_library(Result<std::unique_ptr<ResolvedLibrary<Api>>> (*open)()) {
  static const auto* const loaded = new Result<std::unique_ptr<ResolvedLibrary<Api>>>(open());
  if (!loaded->ok()) return loaded->error();
  return &loaded->value()->api();
}

}  // namespace sealrun
