// SPDX-License-Identifier: Apache-2.0
// `sealrun ledger checkpoint --state-dir STATE --out FILE [--signing-key KEY] [--json]`: writes
// down the ledger's length and the SHA-256 of its last line (attest/ledger_checkpoint.h), signed
// with the state directory's key when it has one, so that `receipt verify --ledger STATE
// --checkpoint FILE` can later tell a truncated, rolled-back or rewritten ledger from one that only
// grew. The file is kept away from the state directory (docs/ledger.md, "Checkpoints"). FILE is
// never overwritten: each checkpoint is a record of its own.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "attest/keys.h"
#include "attest/ledger.h"
#include "attest/ledger_checkpoint.h"
#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "core/exit_codes.h"
#include "core/syscall.h"

namespace sealrun::cli {

namespace {

struct CheckpointOptions {
  std::string state_dir;
  std::string out;
  std::string signing_key;
  bool json = false;
};

struct Written {
  attest::LedgerCheckpoint checkpoint;
  std::string key_id;  // "" when unsigned
};

// The key: --signing-key, else STATE/keys/sealrun.key when it exists, else none.
Result<std::optional<attest::SigningKey>> checkpoint_key(const CheckpointOptions& o, int state_fd) {
  if (!o.signing_key.empty())
    return std::optional<attest::SigningKey>(
        SEALRUN_TRY_CTX(attest::load_signing_key(o.signing_key), "--signing-key"));
  struct stat st {};
  if (::fstatat(state_fd, attest::kDefaultKeyInState, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return std::optional<attest::SigningKey>();
  return std::optional<attest::SigningKey>(SEALRUN_TRY(attest::load_signing_key_at(
      state_fd, attest::kDefaultKeyInState, "STATE/" + std::string(attest::kDefaultKeyInState))));
}

Result<Written> write_checkpoint(const CheckpointOptions& o) {
  auto state = SEALRUN_TRY_CTX(attest::open_state_dir(o.state_dir), "--state-dir " + o.state_dir);
  auto key = SEALRUN_TRY(checkpoint_key(o, state.get()));
  Written w;
  w.checkpoint = SEALRUN_TRY(attest::take_checkpoint(state.get()));
  std::string bytes =
      SEALRUN_TRY(attest::checkpoint_file_bytes(w.checkpoint, key ? &*key : nullptr));
  if (key) w.key_id = key->key_id();
  // O_EXCL: an earlier checkpoint is evidence; it is never replaced.
  auto fd = open_at(AT_FDCWD, o.out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
  if (!fd) {
    if (fd.error().err() == EEXIST)
      return Error::make(
          fmt::format("--out {}: exists; a checkpoint is never overwritten (choose "
                      "a new name, e.g. with the date)",
                      o.out));
    return std::move(fd).error().context("--out " + o.out);
  }
  SEALRUN_TRY(write_all(fd->get(), bytes, o.out));
  if (::fsync(fd->get()) != 0) return Error::from_errno("fsync " + o.out);
  return w;
}

}  // namespace

void register_ledger(CLI::App& app, int* exit_code) {
  auto* ledger = app.add_subcommand("ledger", "The ledger of receipts (STATE/ledger.jsonl)");
  ledger->require_subcommand(1);
  auto* cmd = ledger->add_subcommand(
      "checkpoint",
      "Write the ledger's length and the SHA-256 of its last line to FILE, signed with the state "
      "directory's key when it has one (STATE/keys/sealrun.key). Keep FILE elsewhere: `receipt "
      "verify --ledger STATE --checkpoint FILE` fails when the ledger was truncated, rolled back "
      "or rewritten since");
  auto o = std::make_shared<CheckpointOptions>();
  cmd->add_option("--state-dir", o->state_dir, "the state directory")->required();
  cmd->add_option("--out", o->out, "the checkpoint file to write (never overwritten)")->required();
  cmd->add_option("--signing-key", o->signing_key,
                  "sign with this Ed25519 key instead of STATE/keys/sealrun.key");
  cmd->add_flag("--json", o->json, "print {out, length, head_sha256, at, key_id} as JSON");
  cmd->callback([o, exit_code] {
    auto w = write_checkpoint(*o);
    if (!w) {
      print_error("ledger checkpoint", w.error());
      *exit_code = kExitFailure;
      return;
    }
    const auto& c = w->checkpoint;
    if (o->json) {
      print_json(
          {{"out", o->out},
           {"length", c.length},
           {"head_sha256", c.head_sha256},
           {"at", c.at},
           {"key_id", w->key_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(w->key_id)}});
    } else {
      fmt::print("{}: {} line(s), head sha256 {}, {}\n", o->out, c.length, c.head_sha256,
                 w->key_id.empty() ? "unsigned (the state directory has no key)"
                                   : "signed, key " + w->key_id);
    }
    *exit_code = kExitOk;
  });
}

}  // namespace sealrun::cli
