// A client of systemd's Manager over sd-bus: the handful of org.freedesktop.systemd1 calls the
// systemd back end makes (StartTransientUnit and waiting for its job, KillUnit, StopUnit,
// ResetFailedUnit, GetUnit, property reads). Every call is bounded by a timeout, every handle is
// owned (sd_bus_handles.h), and errors name the unit and the D-Bus error the manager sent.
#pragma once

#include <cstdint>
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
  SystemdManagerClient(SdBusPtr bus, std::string address);
  // Calls Subscribe once and installs the JobRemoved match, so no job's end can be missed.
  Status ensure_job_watch();
  void end_job_watch();
  Result<std::string> wait_for_job(const std::string& job_path, int64_t timeout_ms,
                                   const std::string& what);

  // Results of finished jobs (object path → result) seen on the bus. A unique_ptr so the address
  // given to sd-bus as userdata survives moves of this object; declared first so that it is
  // destroyed last, after the match slot that points at it.
  std::unique_ptr<std::map<std::string, std::string>> finished_jobs_;
  SdBusPtr bus_;
  std::string address_;
  SdBusSlotPtr job_removed_slot_;
  bool subscribed_ = false;
};

}  // namespace sealrun::resgroup
