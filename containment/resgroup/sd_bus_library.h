// SPDX-License-Identifier: Apache-2.0
// libsystemd loaded at run time, only by the systemd back end, only when it is used.
//
// Why: linked at build time, libsystemd and its chain (libgcrypt, liblzma, libzstd, liblz4,
// libgpg-error: six of the executable's shared libraries) were mapped and relocated by the dynamic
// loader at the start of every sealrun process — `sealrun --version`, `census`, each sealrun a run
// starts — although only a run whose resource group is a systemd scope ever talks to the bus.
// Here the library is dlopen()ed on the first connection to a manager and its sd_bus_* functions
// are resolved into a table of pointers; everything else about sd-bus (its types, constants and
// SD_BUS_ERROR_NULL) still comes from <systemd/sd-bus.h> at compile time, and the pointer types are
// taken from its declarations (decltype), so a signature can never drift from the header.
//
// Only non-variadic functions are in the table: sd_bus_message_append/read/call_method are replaced
// by their per-value forms (append_basic, read_basic, new_method_call + call), which need no
// va_list and keep every argument's C type visible at the call site.
#pragma once

#include <systemd/sd-bus.h>

#include <memory>
#include <string>

#include "core/result.h"
#include "core/shared_library.h"

namespace sealrun::resgroup {

// The soname of the library the systemd back end uses (the runtime package libsystemd0 ships it).
inline constexpr const char* kLibsystemdSoname = "libsystemd.so.0";

// X(function): every sd-bus function sealrun calls. One list makes the table's members and the
// symbols resolved for it the same set. A function missing here has no member to call, and calling
// the header's own declaration instead fails to link: libsystemd is not linked.
#define SEALRUN_SD_BUS_FUNCTIONS(X) \
  X(sd_bus_open_system)             \
  X(sd_bus_open_user)               \
  X(sd_bus_new)                     \
  X(sd_bus_set_address)             \
  X(sd_bus_set_bus_client)          \
  X(sd_bus_start)                   \
  X(sd_bus_flush_close_unref)       \
  X(sd_bus_process)                 \
  X(sd_bus_wait)                    \
  X(sd_bus_call)                    \
  X(sd_bus_match_signal)            \
  X(sd_bus_slot_unref)              \
  X(sd_bus_get_property_trivial)    \
  X(sd_bus_get_property_string)     \
  X(sd_bus_message_new_method_call) \
  X(sd_bus_message_unref)           \
  X(sd_bus_message_append_basic)    \
  X(sd_bus_message_append_array)    \
  X(sd_bus_message_append_strv)     \
  X(sd_bus_message_open_container)  \
  X(sd_bus_message_close_container) \
  X(sd_bus_message_enter_container) \
  X(sd_bus_message_exit_container)  \
  X(sd_bus_message_read_basic)      \
  X(sd_bus_message_skip)            \
  X(sd_bus_error_free)              \
  X(sd_bus_error_is_set)            \
  X(sd_bus_error_has_name)

// The resolved functions, each named as in <systemd/sd-bus.h> (api.sd_bus_call(...)). A table
// handed out by this module has every member set.
struct SdBusApi {
  // `name` is a declarator here, which cannot be parenthesised.
#define SEALRUN_SD_BUS_MEMBER(name) \
  decltype(&::name) name = nullptr;  // NOLINT(bugprone-macro-parentheses)
  SEALRUN_SD_BUS_FUNCTIONS(SEALRUN_SD_BUS_MEMBER)
#undef SEALRUN_SD_BUS_MEMBER
};

// One dlopen()ed copy of a library with every function of SdBusApi resolved (shared_library.h).
using SdBusLibrary = ResolvedLibrary<SdBusApi>;

// dlopen(soname, RTLD_NOW | RTLD_LOCAL) and dlsym of each function. Errors name the library and,
// for a symbol it lacks, the symbol: "libsystemd.so.0 has no symbol sd_bus_call: ...".
Result<std::unique_ptr<SdBusLibrary>> open_sd_bus_library(const std::string& soname);

// The process's libsystemd (kLibsystemdSoname), opened on the first call from any thread and kept
// until exit, a failure too (process_library(), shared_library.h).
Result<const SdBusApi*> sd_bus_api();

}  // namespace sealrun::resgroup
