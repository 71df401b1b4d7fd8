// SPDX-License-Identifier: Apache-2.0
// A client of systemd's Manager over sd-bus: the handful of org.freedesktop.systemd1 calls the
// systemd back end makes (StartTransientUnit and waiting for its job, KillUnit, StopUnit,
// ResetFailedUnit, GetUnit, property reads). Every call is bounded by a timeout, every handle is
// owned (sd_bus_handles.h), and errors name the unit and the D-Bus error the manager sent. The
// first connect() loads libsystemd (sd_bus_library.h); when it cannot, connect() fails like an
// unreachable bus, and the systemd back end is unavailable for the same kind of reason.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "containment/resgroup/sd_bus_handles.h"
#include "containment/resgroup/systemd_readback.h"
#include "core/result.h"

namespace sealrun::resgroup {

class SystemdManagerClient {
 public:
  // `address` as sd_bus_set_address takes it ("unix:path=/run/dbus/system_bus_socket"); empty:
  // the system bus when we are root, else the user bus.
  static Result<SystemdManagerClient> connect(const std::string& address);

  SystemdManagerClient(SystemdManagerClient&&) noexcept = default;
  SystemdManagerClient& operator=(SystemdManagerClient&&) noexcept = default;

  const std::string& address() const { return address_; }
  Result<std::string> version();

  // StartTransientUnit(name, "fail", properties, []) and waits (at most timeout_ms) for the
  // JobRemoved signal of the job it returns. Returns the job's result ("done" on success).
  // *submitted (if given) says whether the manager accepted the call, i.e. whether a unit of
  // this name may now exist because of us (a refused call, e.g. UnitExists, made nothing).
  Result<std::string> start_transient_unit(const std::string& name,
                                           const std::vector<systemd::UnitProperty>& properties,
                                           int64_t timeout_ms, bool* submitted = nullptr);
  // KillUnit(name, who, signal).
  Status kill_unit(const std::string& name, const std::string& who, int signal);
  // StopUnit(name, "replace") and waits for its job; returns the job result.
  Result<std::string> stop_unit(const std::string& name, int64_t timeout_ms);
  Status reset_failed_unit(const std::string& name);
  // GetUnit(name): the unit's object path, or nullopt when the manager has no such unit loaded.
  Result<std::optional<std::string>> unit_path(const std::string& name);

  // ListUnitsByPatterns([], [pattern]): names of the loaded units matching a glob.
  Result<std::vector<std::string>> list_units(const std::string& pattern);

  Result<uint64_t> get_u64(const std::string& path, const std::string& interface,
                           const std::string& property);
  Result<std::string> get_string(const std::string& path, const std::string& interface,
                                 const std::string& property);

 private:
  SystemdManagerClient(const SdBusApi& api, SdBusPtr bus, std::string address);
  // sd_bus_call_method without its varargs (see sd_bus_library.h): a call of `method` on the
  // manager object with `args`, each as sd_bus_message_append_basic takes it.
  struct Arg {
    char type;          // a D-Bus basic type: 's', 'i', ...
    const void* value;  // for 's' and 'o' the string itself, else a pointer to the value
  };
  int call_manager(const char* method, std::initializer_list<Arg> args, SdBusError& error,
                   SdBusMessagePtr& reply);
  // The steps every call to the manager shares: a new method call of `method` on the manager
  // object (owned by `call`), and sending it (`timeout_us` 0: sd-bus's default), the reply owned
  // by `reply`. Both return sd-bus's result (negative errno).
  int new_manager_call(const char* method, SdBusMessagePtr& call);
  int send_call(const SdBusMessagePtr& call, uint64_t timeout_us, SdBusError& error,
                SdBusMessagePtr& reply);
  // Calls Subscribe once and installs the JobRemoved match, so no job's end can be missed.
  Status ensure_job_watch();
  void end_job_watch();
  Result<std::string> wait_for_job(const std::string& job_path, int64_t timeout_ms,
                                   const std::string& what);

  // What the JobRemoved callback is given as userdata: the table to read the signal with and the
  // results of finished jobs (object path → result) seen on the bus.
  struct JobWatch {
    const SdBusApi* api;
    std::map<std::string, std::string> finished;
  };

  // The match callback of JobRemoved (signature "uoss"): records the job's result in the JobWatch
  // it is given as userdata.
  static int on_job_removed(sd_bus_message* m, void* userdata, sd_bus_error* ret_error);

  const SdBusApi* api_;
  // A unique_ptr so the address given to sd-bus as userdata survives moves of this object;
  // declared before the bus and the slot so that it is destroyed last, after the match slot that
  // points at it.
  std::unique_ptr<JobWatch> jobs_;
  SdBusPtr bus_;
  std::string address_;
  SdBusSlotPtr job_removed_slot_;
  bool subscribed_ = false;
};

}  // namespace sealrun::resgroup
