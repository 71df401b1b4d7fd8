// One Run: see action_flow.h. The order matters: every place the answer goes is reserved before
// the run (a request that cannot be answered is refused before anything runs), and ownership of
// the input root is given back before anything of the answer is written.
#include "remote/action_flow.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "census/tree_usage.h"
#include "core/bounded_file.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"
#include "remote/action_child.h"

namespace sealrun::remote {

namespace {

constexpr size_t kMaxOutputs = 100000;                // as many as a run collects
constexpr size_t kMaxReceiptBytes = 2 * 1024 * 1024;  // receipts are <= 1 MiB by contract
constexpr size_t kMaxEnvelopeBytes = 4 * 1024 * 1024;
constexpr size_t kMaxRunStdoutBytes = 64 * 1024;  // `run --json`: one small document

// Copies the file at `path` (if it exists) to the end of `fd`; returns the bytes copied.
Result<uint64_t> append_file(const std::string& path, int fd) {
  auto in = open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW);
  if (!in) return in.error().err() == ENOENT ? Result<uint64_t>(0) : std::move(in).error();
  uint64_t copied = 0;
  for (;;) {
    auto chunk = SEALRUN_TRY(read_up_to(in->get(), 1 << 20, path));
    if (chunk.empty()) return copied;
    SEALRUN_TRY(write_all(fd, chunk, "the action's log"));
    copied += chunk.size();
  }
}

Status write_new_file_at(int dirfd, const std::string& name, std::string_view bytes) {
  auto fd = SEALRUN_TRY(open_at(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  return write_all(fd.get(), bytes, name);
}

}  // namespace

struct Reserved {
  UniqueFd stdout_fd, stderr_fd, server_logs;
};

std::string new_action_id() {
  uint32_t random = 0;
  if (::getrandom(&random, sizeof random, 0) != sizeof random)
    random = static_cast<uint32_t>(monotonic_ms());
  time_t now = ::time(nullptr);
  struct tm tm {};
  gmtime_r(&now, &tm);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%S", &tm);
  return fmt::format("reapi-{}-{:08x}", stamp, random);
}

ActionFlow::ActionFlow(FlowConfig config) : config_(std::move(config)) {}
ActionFlow::~ActionFlow() = default;

void ActionFlow::refuse(Answer answer, std::string message) {
  report_.decision.answer = answer;
  report_.decision.message = std::move(message);
}

bool ActionFlow::prepare(const ActionFields& fields) {
  auto action = check_action(fields);
  if (!action) {
    refuse(Answer::kInvalidArgument, action.error().message());
    return false;
  }
  action_ = std::move(*action);
  const BuildDir& build = *config_.build;
  auto reserve = [&]() -> Status {
    input_root_ = SEALRUN_TRY_CTX(build.directory(action_->input_root), "input_root_directory");
    if (!action_->working_directory.empty())
      SEALRUN_TRY_CTX(build.open_beneath(action_->input_root + "/" + action_->working_directory,
                                         O_PATH | O_DIRECTORY),
                      "working_directory");
    if (!action_->temporary_directory.empty())
      SEALRUN_TRY_CTX(build.open_beneath(action_->temporary_directory, O_PATH | O_DIRECTORY),
                      "temporary_directory");
    auto r = std::make_unique<Reserved>();
    r->server_logs = SEALRUN_TRY_CTX(build.open_beneath(action_->server_logs, O_PATH | O_DIRECTORY),
                                     "server_logs_directory");
    // Created now, exclusively, as bb_runner does: a request whose log files exist is refused.
    r->stdout_fd = SEALRUN_TRY_CTX(
        build.open_beneath(action_->stdout_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644),
        "stdout_path");
    r->stderr_fd = SEALRUN_TRY_CTX(
        build.open_beneath(action_->stderr_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644),
        "stderr_path");
    reserved_ = std::move(r);
    return ok_status();
  };
  if (auto st = reserve(); !st) {
    refuse(Answer::kInvalidArgument, st.error().message());
    return false;
  }
  return true;
}

void ActionFlow::run(const std::function<bool()>& cancelled) {
  int64_t started = monotonic_ms();
  report_.id = new_action_id();
  std::string dir = fmt::format("{}/runner/{}", config_.state_dir, report_.id);
  if (auto st = make_dir_at(AT_FDCWD, dir, 0700); !st) {
    refuse(Answer::kInternal, "per-action directory: " + st.error().message());
    return;
  }
  // What the input root occupies now is not output: the result guard is raised by as much.
  auto usage = census::measure_tree(input_root_);
  if (!usage || !usage->complete) {
    refuse(Answer::kFailedPrecondition,
           "the input root could not be measured: " +
               (usage ? std::string("the walk ran out of its budget") : usage.error().message()));
    return;
  }
  // The input root as it is now is what the admission pins (its per-file manifest).
  auto frozen = admission::freeze_admission(action_freeze_request(
      config_.pins, *action_, input_root_, usage->allocated_bytes, dir + "/admission.json"));
  if (!frozen) {
    refuse(Answer::kFailedPrecondition,
           "the action's admission could not be frozen: " + frozen.error().message());
    return;
  }
  report_.input_manifest_sha256 = frozen->document.source.manifest_sha256;
  if (cancelled()) {
    refuse(Answer::kCancelled, "cancelled before the run started");
    return;
  }

  ChildRequest request{config_.sealrun, frozen->path,      frozen->sha256,
                       report_.id,      config_.state_dir, dir};
  auto child = run_child(request, cancelled);
  if (!child) {
    refuse(Answer::kInternal, "could not run `sealrun run`: " + child.error().message());
    return;
  }
  report_.usage = child->usage;
  auto run_stdout = read_bounded_file(AT_FDCWD, dir + "/run.stdout", kMaxRunStdoutBytes);
  std::optional<std::string> said =
      run_stdout ? receipt_path_from_run_json(*run_stdout) : std::nullopt;
  receipt_path_ =
      said ? *said : fmt::format("{}/results/{}/receipt.json", config_.state_dir, report_.id);
  auto bytes = read_bounded_file(AT_FDCWD, receipt_path_, kMaxReceiptBytes);
  std::string receipt_problem;
  if (bytes) {
    if (auto facts = read_receipt_facts(*bytes))
      report_.facts = std::move(*facts);
    else
      receipt_problem = facts.error().message();
  }
  report_.decision = decide(report_.facts, child->status.code, child->status.signal,
                            child->cancelled, child->stderr_tail + receipt_problem);
  if (bytes && report_.facts) deliver_receipt(*bytes, dir);
  deliver_outputs();
  deliver_streams();
  report_.elapsed_ms = monotonic_ms() - started;
}

void ActionFlow::delivery_failed(const std::string& what, const Error& error) {
  if (report_.decision.answer == Answer::kResponse) report_.decision.answer = Answer::kInternal;
  report_.decision.message += fmt::format("; {}: {}", what, error.message());
}

void ActionFlow::deliver_receipt(const std::string& receipt_bytes, const std::string& action_dir) {
  int logs = reserved_->server_logs.get();
  if (auto st = write_new_file_at(logs, "receipt.json", receipt_bytes); !st)
    delivery_failed("server logs receipt.json", st.error());
  // Signed runs (docs/signing.md) leave an envelope beside it.
  std::string envelope_path = receipt_path_.substr(0, receipt_path_.size() - 5) + ".dsse.json";
  auto envelope = read_bounded_file(AT_FDCWD, envelope_path, kMaxEnvelopeBytes);
  if (envelope) {
    report_.envelope_sha256 = sha256_hex(*envelope);
    if (auto st = write_new_file_at(logs, "receipt.dsse.json", *envelope); !st)
      delivery_failed("server logs receipt.dsse.json", st.error());
  } else if (envelope.error().err() != ENOENT) {
    delivery_failed("the receipt's envelope", envelope.error());
  }
  // The admission names the pinned input root (its manifest) and the toolchain; the receipt
  // names the admission by its SHA-256.
  auto admission = read_bounded_file(AT_FDCWD, action_dir + "/admission.json", 1 << 20);
  Status copied =
      admission ? write_new_file_at(logs, "admission.json", *admission) : Status(admission.error());
  if (!copied) delivery_failed("server logs admission.json", copied.error());
}

void ActionFlow::deliver_outputs() {
  // The job changed its private copy of the input root; what it made or changed is now in the
  // run's results (outputs[] of the receipt). It goes into the input root, where bb_worker
  // collects outputs, owned like the input root so that bb_worker can upload and remove it.
  std::string out = receipt_path_.substr(0, receipt_path_.rfind('/')) + "/out";
  auto owner = lstat_at(AT_FDCWD, input_root_);
  if (!owner) return delivery_failed("the input root", owner.error());
  auto installed = install_outputs(*config_.build, action_->input_root, out, owner->st_uid,
                                   owner->st_gid, kMaxOutputs);
  if (!installed) delivery_failed("outputs into the input root", installed.error());
}

void ActionFlow::deliver_streams() {
  std::string logs = receipt_path_.substr(0, receipt_path_.rfind('/')) + "/logs/";
  auto out = append_file(logs + "job.stdout", reserved_->stdout_fd.get());
  auto err = append_file(logs + "job.stderr", reserved_->stderr_fd.get());
  if (!out) delivery_failed("stdout_path", out.error());
  if (!err) delivery_failed("stderr_path", err.error());
  // Notes for the person reading the action's stderr in their build tool.
  std::string notes;
  const auto& f = report_.facts;
  if (f && out && f->stdout_bytes > *out)
    notes += fmt::format("sealrun runner: stdout kept: the last {} of {} bytes\n", *out,
                         f->stdout_bytes);
  if (f && err && f->stderr_bytes > *err)
    notes += fmt::format("sealrun runner: stderr kept: the last {} of {} bytes\n", *err,
                         f->stderr_bytes);
  if (!f || f->state != "built") notes += "sealrun runner: " + report_.decision.message + "\n";
  if (auto st = write_all(reserved_->stderr_fd.get(), notes, "stderr_path"); !st)
    delivery_failed("stderr_path", st.error());
}

}  // namespace sealrun::remote
