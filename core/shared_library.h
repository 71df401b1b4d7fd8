// dlopen() and dlsym() with errors that name the library, the symbol and what to install: the
// common half of the libraries sealrun loads on first use instead of linking (libcrypto,
// core/crypto_library.h; libsystemd, containment/resgroup/sd_bus_library.h), each of which keeps a
// table of the functions it resolves with these.
#pragma once

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

}  // namespace sealrun
