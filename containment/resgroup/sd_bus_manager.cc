// SPDX-License-Identifier: Apache-2.0
// See sd_bus_manager.h. Bus calls to org.freedesktop.systemd1, each bounded in time.
#include "containment/resgroup/sd_bus_manager.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "core/syscall.h"

namespace sealrun::resgroup {
namespace {

constexpr const char* kDestination = "org.freedesktop.systemd1";
constexpr const char* kManagerPath = "/org/freedesktop/systemd1";
constexpr const char* kManagerInterface = "org.freedesktop.systemd1.Manager";
constexpr uint64_t kCallTimeoutUs = 30ULL * 1000 * 1000;
constexpr const char* kSystemBusSocket = "/run/dbus/system_bus_socket";

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

// Appends one (sv) entry of a property array.
int append_property(const SdBusApi& api, sd_bus_message* m, const systemd::UnitProperty& p) {
  std::string sig = p.signature();
  int r = api.sd_bus_message_open_container(m, SD_BUS_TYPE_STRUCT, "sv");
  if (r < 0) return r;
  if ((r = api.sd_bus_message_append_basic(m, 's', p.name.c_str())) < 0) return r;
  if ((r = api.sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, sig.c_str())) < 0) return r;
  if (const auto* u = std::get_if<uint64_t>(&p.value)) {
    r = api.sd_bus_message_append_basic(m, 't', u);
  } else if (const auto* b = std::get_if<bool>(&p.value)) {
    int boolean = *b ? 1 : 0;  // D-Bus 'b' is a 32-bit int in sd-bus's C interface
    r = api.sd_bus_message_append_basic(m, 'b', &boolean);
  } else if (const auto* s = std::get_if<std::string>(&p.value)) {
    r = api.sd_bus_message_append_basic(m, 's', s->c_str());
  } else {
    const auto& pids = std::get<std::vector<uint32_t>>(p.value);
    r = api.sd_bus_message_append_array(m, 'u', pids.data(), pids.size() * sizeof(uint32_t));
  }
  if (r < 0) return r;
  if ((r = api.sd_bus_message_close_container(m)) < 0) return r;
  return api.sd_bus_message_close_container(m);
}

}  // namespace

SystemdManagerClient::SystemdManagerClient(const SdBusApi& api, SdBusPtr bus, std::string address)
    : api_(&api),
      jobs_(std::make_unique<JobWatch>(JobWatch{&api, {}})),
      bus_(std::move(bus)),
      address_(std::move(address)),
      job_removed_slot_(nullptr, SdBusSlotUnref{&api}) {}

int SystemdManagerClient::on_job_removed(sd_bus_message* m, void* userdata,
                                         sd_bus_error* /*ret_error*/) {
  auto* watch = static_cast<JobWatch*>(userdata);
  const SdBusApi& api = *watch->api;
  uint32_t id = 0;
  const char* job = nullptr;
  const char* unit = nullptr;
  const char* result = nullptr;
  if (api.sd_bus_message_read_basic(m, 'u', &id) > 0 &&
      api.sd_bus_message_read_basic(m, 'o', &job) > 0 &&
      api.sd_bus_message_read_basic(m, 's', &unit) > 0 &&
      api.sd_bus_message_read_basic(m, 's', &result) > 0 && job && result) {
    watch->finished[job] = result;
  }
  return 0;
}

Result<SystemdManagerClient> SystemdManagerClient::connect(const std::string& address) {
  bool root = geteuid() == 0;
  // Without a system bus socket sd_bus_open_system can only fail as below, and loading libsystemd
  // to be told so costs 0.7 ms of every run on a host without systemd: the same answer first.
  // (libsystemd's own rule: $DBUS_SYSTEM_BUS_ADDRESS, else this path.)
  if (address.empty() && root && std::getenv("DBUS_SYSTEM_BUS_ADDRESS") == nullptr &&
      ::access(kSystemBusSocket, F_OK) != 0 && errno == ENOENT)
    return Error::with_errno(ENOENT, "connect to the system bus");
  const SdBusApi* api = SEALRUN_TRY(sd_bus_api());
  sd_bus* raw = nullptr;
  if (address.empty()) {
    int r = root ? api->sd_bus_open_system(&raw) : api->sd_bus_open_user(&raw);
    SdBusPtr bus(raw, SdBusCloser{api});
    if (r < 0) {
      return Error::with_errno(-r, root ? "connect to the system bus" : "connect to the user bus");
    }
    return SystemdManagerClient(*api, std::move(bus), root ? "system bus" : "user bus");
  }
  int r = api->sd_bus_new(&raw);
  SdBusPtr bus(raw, SdBusCloser{api});
  if (r < 0) return Error::with_errno(-r, "sd_bus_new");
  if ((r = api->sd_bus_set_address(bus.get(), address.c_str())) < 0) {
    return Error::with_errno(-r, fmt::format("bus address \"{}\"", address));
  }
  if ((r = api->sd_bus_set_bus_client(bus.get(), 1)) < 0) {
    return Error::with_errno(-r, "sd_bus_set_bus_client");
  }
  if ((r = api->sd_bus_start(bus.get())) < 0) {
    return Error::with_errno(-r, fmt::format("connect to the bus at \"{}\"", address));
  }
  return SystemdManagerClient(*api, std::move(bus), address);
}

int SystemdManagerClient::new_manager_call(const char* method, SdBusMessagePtr& call) {
  sd_bus_message* raw = nullptr;
  int r = api_->sd_bus_message_new_method_call(bus_.get(), &raw, kDestination, kManagerPath,
                                               kManagerInterface, method);
  call = SdBusMessagePtr(raw, SdBusMessageUnref{api_});
  return r;
}

int SystemdManagerClient::send_call(const SdBusMessagePtr& call, uint64_t timeout_us,
                                    SdBusError& error, SdBusMessagePtr& reply) {
  sd_bus_message* raw = nullptr;
  int r = api_->sd_bus_call(bus_.get(), call.get(), timeout_us, error.ptr(), &raw);
  reply = SdBusMessagePtr(raw, SdBusMessageUnref{api_});
  return r;
}

int SystemdManagerClient::call_manager(const char* method, std::initializer_list<Arg> args,
                                       SdBusError& error, SdBusMessagePtr& reply) {
  SdBusMessagePtr call(nullptr, SdBusMessageUnref{api_});
  int r = new_manager_call(method, call);
  if (r < 0) return r;
  for (const Arg& a : args) {
    if ((r = api_->sd_bus_message_append_basic(call.get(), a.type, a.value)) < 0) return r;
  }
  // Timeout 0: sd-bus's default (25 s), the bound sd_bus_call_method gave these calls.
  return send_call(call, 0, error, reply);
}

Result<std::string> SystemdManagerClient::version() {
  return get_string(kManagerPath, kManagerInterface, "Version").context("systemd manager version");
}

Status SystemdManagerClient::ensure_job_watch() {
  if (job_removed_slot_) return ok_status();
  sd_bus_slot* slot = nullptr;
  int r = api_->sd_bus_match_signal(bus_.get(), &slot, kDestination, kManagerPath,
                                    kManagerInterface, "JobRemoved", on_job_removed, jobs_.get());
  if (r < 0) return Error::with_errno(-r, "watch the manager's JobRemoved signal");
  job_removed_slot_.reset(slot);
  if (subscribed_) return ok_status();
  // Subscribe makes the manager emit job signals even where it would not track us as the job's
  // requester (e.g. a private connection). Once per connection: a second call is an error.
  SdBusError error(*api_);
  SdBusMessagePtr reply;
  r = call_manager("Subscribe", {}, error, reply);
  if (r < 0 && !error.has_name("org.freedesktop.systemd1.AlreadySubscribed")) {
    return error.to_error(r, "Subscribe to the systemd manager");
  }
  subscribed_ = true;
  return ok_status();
}

void SystemdManagerClient::end_job_watch() {
  // Between our own jobs nobody reads the bus, so other units' JobRemoved signals would pile up
  // in sd-bus's read queue for the whole run: watch only while waiting.
  job_removed_slot_.reset();
  jobs_->finished.clear();
}

Result<std::string> SystemdManagerClient::wait_for_job(const std::string& job_path,
                                                       int64_t timeout_ms,
                                                       const std::string& what) {
  int64_t deadline = monotonic_ms() + timeout_ms;
  for (;;) {
    auto it = jobs_->finished.find(job_path);
    if (it != jobs_->finished.end()) {
      std::string result = it->second;
      jobs_->finished.erase(it);
      return result;
    }
    int r = api_->sd_bus_process(bus_.get(), nullptr);
    if (r < 0) return Error::with_errno(-r, what + ": processing the bus");
    if (r > 0) continue;
    int64_t left = deadline - monotonic_ms();
    if (left <= 0) {
      return Error::make(
          fmt::format("{}: job {} did not finish within {} ms", what, job_path, timeout_ms));
    }
    r = api_->sd_bus_wait(bus_.get(), static_cast<uint64_t>(left) * 1000);
    if (r < 0 && r != -EINTR) return Error::with_errno(-r, what + ": waiting on the bus");
  }
}

Result<std::string> SystemdManagerClient::start_transient_unit(
    const std::string& name, const std::vector<systemd::UnitProperty>& properties,
    int64_t timeout_ms, bool* submitted) {
  if (submitted) *submitted = false;
  std::string what = fmt::format("StartTransientUnit {}", name);
  SEALRUN_TRY_CTX(ensure_job_watch(), what);
  const SdBusApi& api = *api_;
  SdBusMessagePtr call(nullptr, SdBusMessageUnref{api_});
  int r = new_manager_call("StartTransientUnit", call);
  if (r < 0) return Error::with_errno(-r, what);
  r = api.sd_bus_message_append_basic(call.get(), 's', name.c_str());
  if (r >= 0) r = api.sd_bus_message_append_basic(call.get(), 's', "fail");
  if (r >= 0) r = api.sd_bus_message_open_container(call.get(), SD_BUS_TYPE_ARRAY, "(sv)");
  for (const auto& p : properties) {
    if (r < 0) break;
    r = append_property(api, call.get(), p);
    if (r < 0) return Error::with_errno(-r, fmt::format("{}: property {}", what, p.name));
  }
  if (r >= 0) r = api.sd_bus_message_close_container(call.get());
  // No auxiliary units: an empty a(sa(sv)).
  if (r >= 0) r = api.sd_bus_message_open_container(call.get(), SD_BUS_TYPE_ARRAY, "(sa(sv))");
  if (r >= 0) r = api.sd_bus_message_close_container(call.get());
  if (r < 0) return Error::with_errno(-r, what + ": building the message");

  SdBusError error(api);
  SdBusMessagePtr reply;
  r = send_call(call, kCallTimeoutUs, error, reply);
  if (r < 0) return error.to_error(r, what);
  const char* job = nullptr;
  r = api.sd_bus_message_read_basic(reply.get(), 'o', &job);
  if (r < 0 || !job) return Error::with_errno(-r, what + ": reading the job path");
  if (submitted) *submitted = true;
  auto result = wait_for_job(job, timeout_ms, what);
  end_job_watch();
  return result;
}

Status SystemdManagerClient::kill_unit(const std::string& name, const std::string& who,
                                       int signal) {
  SdBusError error(*api_);
  SdBusMessagePtr reply;
  int32_t sig = signal;
  int r = call_manager("KillUnit", {{'s', name.c_str()}, {'s', who.c_str()}, {'i', &sig}}, error,
                       reply);
  if (r < 0) return error.to_error(r, fmt::format("KillUnit {} {} signal {}", name, who, signal));
  return ok_status();
}

Result<std::string> SystemdManagerClient::stop_unit(const std::string& name, int64_t timeout_ms) {
  std::string what = fmt::format("StopUnit {}", name);
  SEALRUN_TRY_CTX(ensure_job_watch(), what);
  SdBusError error(*api_);
  SdBusMessagePtr reply;
  int r = call_manager("StopUnit", {{'s', name.c_str()}, {'s', "replace"}}, error, reply);
  if (r < 0) return error.to_error(r, what);
  const char* job = nullptr;
  r = api_->sd_bus_message_read_basic(reply.get(), 'o', &job);
  if (r < 0 || !job) return Error::with_errno(-r, what + ": reading the job path");
  auto result = wait_for_job(job, timeout_ms, what);
  end_job_watch();
  return result;
}

Status SystemdManagerClient::reset_failed_unit(const std::string& name) {
  SdBusError error(*api_);
  SdBusMessagePtr reply;
  int r = call_manager("ResetFailedUnit", {{'s', name.c_str()}}, error, reply);
  if (r < 0) return error.to_error(r, fmt::format("ResetFailedUnit {}", name));
  return ok_status();
}

Result<std::optional<std::string>> SystemdManagerClient::unit_path(const std::string& name) {
  SdBusError error(*api_);
  SdBusMessagePtr reply;
  int r = call_manager("GetUnit", {{'s', name.c_str()}}, error, reply);
  if (r < 0) {
    if (error.has_name("org.freedesktop.systemd1.NoSuchUnit")) {
      return std::optional<std::string>();
    }
    return error.to_error(r, fmt::format("GetUnit {}", name));
  }
  const char* path = nullptr;
  r = api_->sd_bus_message_read_basic(reply.get(), 'o', &path);
  if (r < 0 || !path) return Error::with_errno(-r, fmt::format("GetUnit {}: reply", name));
  return std::optional<std::string>(path);
}

Result<std::vector<std::string>> SystemdManagerClient::list_units(const std::string& pattern) {
  std::string what = fmt::format("ListUnitsByPatterns {}", pattern);
  const SdBusApi& api = *api_;
  SdBusMessagePtr call(nullptr, SdBusMessageUnref{api_});
  int r = new_manager_call("ListUnitsByPatterns", call);
  if (r < 0) return Error::with_errno(-r, what);
  const char* patterns[] = {pattern.c_str(), nullptr};
  r = api.sd_bus_message_append_strv(call.get(), nullptr);  // any state
  if (r >= 0) r = api.sd_bus_message_append_strv(call.get(), const_cast<char**>(patterns));
  if (r < 0) return Error::with_errno(-r, what + ": building the message");
  SdBusError error(api);
  SdBusMessagePtr reply;
  r = send_call(call, kCallTimeoutUs, error, reply);
  if (r < 0) return error.to_error(r, what);
  r = api.sd_bus_message_enter_container(reply.get(), SD_BUS_TYPE_ARRAY, "(ssssssouso)");
  if (r < 0) return Error::with_errno(-r, what + ": reply");
  std::vector<std::string> names;
  // Each unit is a struct of ten fields; only its first, the name, is kept: read it, skip the
  // other nine, leave the struct. enter_container returns 0 at the end of the array.
  while ((r = api.sd_bus_message_enter_container(reply.get(), SD_BUS_TYPE_STRUCT, "ssssssouso")) >
         0) {
    const char* name = nullptr;
    if ((r = api.sd_bus_message_read_basic(reply.get(), 's', &name)) < 0) break;
    if ((r = api.sd_bus_message_skip(reply.get(), "sssssouso")) < 0) break;
    if ((r = api.sd_bus_message_exit_container(reply.get())) < 0) break;
    if (name) names.emplace_back(name);
  }
  if (r < 0) return Error::with_errno(-r, what + ": reply");
  return names;
}

Result<uint64_t> SystemdManagerClient::get_u64(const std::string& path,
                                               const std::string& interface,
                                               const std::string& property) {
  SdBusError error(*api_);
  uint64_t value = 0;
  int r =
      api_->sd_bus_get_property_trivial(bus_.get(), kDestination, path.c_str(), interface.c_str(),
                                        property.c_str(), error.ptr(), 't', &value);
  if (r < 0) return error.to_error(r, fmt::format("property {} of {}", property, path));
  return value;
}

Result<std::string> SystemdManagerClient::get_string(const std::string& path,
                                                     const std::string& interface,
                                                     const std::string& property) {
  SdBusError error(*api_);
  char* raw = nullptr;
  int r = api_->sd_bus_get_property_string(bus_.get(), kDestination, path.c_str(),
                                           interface.c_str(), property.c_str(), error.ptr(), &raw);
  std::unique_ptr<char, FreeDeleter> value(raw);
  if (r < 0) return error.to_error(r, fmt::format("property {} of {}", property, path));
  return std::string(value ? value.get() : "");
}

}  // namespace sealrun::resgroup
