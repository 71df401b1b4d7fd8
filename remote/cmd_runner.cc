// `sealrun runner --listen unix:PATH|HOST:PORT --build-dir DIR [--state-dir DIR] --toolchain DIR
// [--set KEY=VALUE]... [--concurrency N]`: serves Buildbarn's runner protocol until SIGTERM, SIGINT
// or SIGHUP. Each Run becomes one admitted, contained, receipted `sealrun run` (docs/scale-out.md).
// On a stop signal, new calls are refused, runs in flight are cancelled — each stops its job and
// writes its receipt — and the runner exits 0 once they have all answered.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <memory>
#include <thread>

#include "controller/commands.h"
#include "controller/host_config.h"
#include "controller/output.h"
#include "remote/runner_service.h"

namespace sealrun::cli {
namespace {

struct RunnerOptions {
  std::string listen;
  remote::RunnerConfig config;
  std::vector<std::string> toolchains;
  std::vector<std::string> trees;
};

// "unix:PATH" (PATH absolute) or "HOST:PORT", as gRPC spells them.
Result<std::string> listen_address(const std::string& listen) {
  if (listen.rfind("unix:", 0) == 0) {
    if (listen.size() < 7 || listen[5] != '/')
      return Error::make(fmt::format("--listen {}: expected unix:/absolute/path", listen));
    return listen;
  }
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size())
    return Error::make(fmt::format("--listen {}: expected unix:PATH or HOST:PORT", listen));
  return listen;
}

Status configure(RunnerOptions& o) {
  o.config.pins.trees = o.trees;
  if (o.toolchains.size() != 1)
    return Error::make(
        fmt::format("--toolchain: give exactly one (an admission pins one toolchain today; got {})",
                    o.toolchains.size()));
  const std::string& t = o.toolchains[0];
  size_t eq = t.find('=');
  o.config.pins.toolchain = t.substr(0, eq);
  if (eq != std::string::npos) o.config.pins.toolchain_mount = t.substr(eq + 1);
  return ok_status();
}

int serve(RunnerOptions& o) {
  if (auto st = configure(o); !st) {
    print_error("runner", st.error());
    return 2;
  }
  auto address = listen_address(o.listen);
  if (!address) {
    print_error("runner", address.error());
    return 2;
  }
  // Before any thread exists: the stop signals are taken by sigwait below, not by a handler, and
  // every thread gRPC starts inherits the mask (children get a clean one from spawn()).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop_signals, sig);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  o.config.mechanism_context = mechanism_context();
  o.config.log = [](const std::string& line) {
    std::fprintf(stderr, "sealrun runner: %s\n", line.c_str());
  };
  auto service = remote::RunnerService::create(o.config);
  if (!service) {
    print_error("runner", service.error());
    return 1;
  }
  grpc::ServerBuilder builder;
  // Calls beyond the slots wait on a thread each; bound them, so a flood of calls is refused
  // (RESOURCE_EXHAUSTED) instead of growing threads without end.
  grpc::ResourceQuota quota("sealrun-runner");
  quota.SetMaxThreads(static_cast<int>(std::min<size_t>(2 * o.config.concurrency + 16, 1024)));
  builder.SetResourceQuota(quota);
  int port = 0;
  builder.AddListeningPort(*address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service->get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    print_error("runner", fmt::format("cannot listen on {}", *address));
    return 1;
  }
  std::fprintf(stderr,
               "sealrun runner: listening on %s (build dir %s, state dir %s, %zu at a time)\n",
               address->c_str(), o.config.build_dir.c_str(), o.config.state_dir.c_str(),
               o.config.concurrency);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "sealrun runner: %s: stopping the runs in flight\n", sigabbrev_np(sig));
  (*service)->stop_accepting();
  // A deadline of now cancels every call in flight at once; Shutdown returns when each has
  // answered, i.e. when each run has stopped its job and written its receipt.
  server->Shutdown(std::chrono::system_clock::now());
  server->Wait();
  std::fprintf(stderr, "sealrun runner: stopped\n");
  return 0;
}

}  // namespace

void register_runner(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "runner",
      "Serve Buildbarn's runner protocol (buildbarn.runner.Runner) for bb_worker: each "
      "remote-execution action is admitted (its input root pinned), run contained through the "
      "same pipeline as `sealrun run`, and receipted (the receipt goes to its server logs)");
  auto o = std::make_shared<RunnerOptions>();
  o->config.state_dir = "./sealrun-state";
  o->config.concurrency = std::max(1u, std::thread::hardware_concurrency());
  cmd->add_option("--listen", o->listen, "unix:/path/to/socket or HOST:PORT")->required();
  cmd->add_option("--build-dir", o->config.build_dir,
                  "the build directory shared with bb_worker (request paths are relative to it)")
      ->required();
  cmd->add_option("--state-dir", o->config.state_dir,
                  "holds results/<id>/ (receipts), owned/<id>/ and runner/<id>/admission.json")
      ->capture_default_str();
  cmd->add_option("--toolchain", o->toolchains,
                  "DIR[=JOB_PATH]: the toolchain every action's admission pins (read-only)")
      ->required();
  cmd->add_option("--tree", o->trees,
                  "HOST_DIR[=JOB_PATH]: a host tree every action's admission pins, read-only "
                  "(repeatable); actions see no other host path");
  cmd->add_option("--set", o->config.pins.sets,
                  "KEY=VALUE for every action's admission: limits.*, containment.*, "
                  "mounts.output|scratch|tmp, expires_at");
  cmd->add_option("--concurrency", o->config.concurrency, "actions run at once (default: cores)")
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = serve(*o); });
}

}  // namespace sealrun::cli
