// SPDX-License-Identifier: Apache-2.0
// sealrun-runner, the helper `sealrun runner` execs (remote/cmd_runner.cc): serves Buildbarn's
// runner protocol until SIGTERM, SIGINT or SIGHUP. Each Run becomes one admitted, contained,
// receipted `sealrun run` of the sealrun that exec'd it (--sealrun, hidden; docs/scale-out.md).
// On a stop signal, new calls are refused, runs in flight are cancelled — each stops its job and
// writes its receipt — and the runner exits 0 once they have all answered. Its own executable so
// that gRPC, protobuf and abseil are loaded by the runner only, not by every `sealrun run`.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <thread>

#include "controller/cli/printing.h"
#include "controller/common/host_config.h"
#include "core/exit_codes.h"
#include "remote/runner_cli.h"
#include "remote/runner_service.h"

namespace sealrun::cli {
namespace {

struct RunnerOptions {
  remote::RunnerArgs args;
  remote::RunnerConfig config;
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
  o.config.build_dir = o.args.build_dir;
  o.config.state_dir = o.args.state_dir;
  o.config.concurrency = o.args.concurrency;
  o.config.pins.sets = o.args.sets;
  o.config.pins.trees = o.args.trees;
  if (o.args.toolchains.size() != 1)
    return Error::make(
        fmt::format("--toolchain: give exactly one (an admission pins one toolchain today; got {})",
                    o.args.toolchains.size()));
  const std::string& t = o.args.toolchains[0];
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
  auto address = listen_address(o.args.listen);
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

}  // namespace sealrun::cli

int main(int argc, char** argv) {
  using namespace sealrun;
  // A closed pipe (the operator's log reader gone) should give a write error, not kill us.
  ::signal(SIGPIPE, SIG_IGN);
  try {
    CLI::App app{remote::kRunnerDescription, "sealrun runner"};
    cli::RunnerOptions o;
    remote::add_runner_options(&app, o.args);
    // Hidden: the sealrun executable each action runs as `sealrun run` (given by `sealrun
    // runner`; run alone, the helper has no sealrun of its own to name).
    o.config.sealrun.clear();  // not /proc/self/exe: that is this helper, which has no `run`
    app.add_option("--sealrun", o.config.sealrun, "")->group("");
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      int rc = app.exit(e);
      return rc == 0 ? kExitOk : kExitUsage;
    }
    if (o.config.sealrun.empty()) {
      cli::print_error("runner",
                       "--sealrun PATH is missing: start the runner as `sealrun runner ...`, "
                       "which names itself as the sealrun each action runs");
      return kExitUsage;
    }
    return cli::serve(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sealrun runner: internal error (please report it): %s\n", e.what());
    return kExitFailure;
  }
}
