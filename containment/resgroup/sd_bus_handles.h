// RAII for sd-bus handles (docs/style.md rule 3): a connection, a message, a match slot and
// an sd_bus_error each have exactly one owner here, so no error path can leak a reference or skip
// sd_bus_error_free. Also the one place that turns sd-bus's negative-errno returns and D-Bus error
// names into sealrun Errors. libsystemd is loaded at run time (sd_bus_library.h), so each owner
// carries the table it releases through: a handle can only exist once that table was loaded.
#pragma once

#include <systemd/sd-bus.h>

#include <memory>
#include <string>

#include "containment/resgroup/sd_bus_library.h"
#include "core/result.h"

namespace sealrun::resgroup {

struct SdBusCloser {
  const SdBusApi* api = nullptr;
  // flush_close_unref: pending outgoing messages are written and the socket closed, not merely
  // dereferenced (sd_bus_unref would leave a connection open while other references exist).
  void operator()(sd_bus* bus) const { api->sd_bus_flush_close_unref(bus); }
};
struct SdBusMessageUnref {
  const SdBusApi* api = nullptr;
  void operator()(sd_bus_message* m) const { api->sd_bus_message_unref(m); }
};
struct SdBusSlotUnref {
  const SdBusApi* api = nullptr;
  void operator()(sd_bus_slot* s) const { api->sd_bus_slot_unref(s); }
};

using SdBusPtr = std::unique_ptr<sd_bus, SdBusCloser>;
using SdBusMessagePtr = std::unique_ptr<sd_bus_message, SdBusMessageUnref>;
using SdBusSlotPtr = std::unique_ptr<sd_bus_slot, SdBusSlotUnref>;

// An sd_bus_error that frees itself. Pass ptr() to sd-bus calls.
class SdBusError {
 public:
  explicit SdBusError(const SdBusApi& api) : api_(api) {}
  SdBusError(const SdBusError&) = delete;
  SdBusError& operator=(const SdBusError&) = delete;
  ~SdBusError() { api_.sd_bus_error_free(&error_); }

  sd_bus_error* ptr() { return &error_; }
  bool is_set() const { return api_.sd_bus_error_is_set(&error_) > 0; }
  bool has_name(const char* name) const { return api_.sd_bus_error_has_name(&error_, name) > 0; }
  std::string name() const { return error_.name ? error_.name : ""; }
  std::string message() const { return error_.message ? error_.message : ""; }

  // An Error for a failed call `what` returning r (< 0): the D-Bus error name and message when the
  // peer sent one, else the errno from r.
  Error to_error(int r, const std::string& what) const {
    if (is_set()) {
      return Error::with_errno(-r, what + ": " + name() + ": " + message());
    }
    return Error::with_errno(-r, what);
  }

 private:
  const SdBusApi& api_;
  sd_bus_error error_ = SD_BUS_ERROR_NULL;
};

}  // namespace sealrun::resgroup
