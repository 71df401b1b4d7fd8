// SPDX-License-Identifier: Apache-2.0
// `sealrun fingerprint tree|file` (and, through add_fingerprint_image_and_source, `image` and
// `source`): the user-facing side of fingerprint/. Parses the command line, shows progress
// (run_progress.h), and turns a Result into output and an exit code: 0 done, 1 failed (message on
// stderr naming the input), 2 usage.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "controller/cli/commands.h"
#include "controller/cli/printing.h"
#include "controller/run/run_progress.h"
#include "core/bytes_text.h"
#include "core/exit_codes.h"
#include "fingerprint/file_hash.h"
#include "fingerprint/tree.h"

namespace sealrun::cli {
namespace {

struct TreeArgs {
  std::string dir;
  std::string out;
  bool json = false;
  unsigned threads = 0;
};

struct FileArgs {
  std::string path;
  bool json = false;
};

int run_tree(const TreeArgs& args) {
  TreeOptions options;
  options.threads = args.threads;
  // Redrawn on a terminal, plain lines every 5 s elsewhere, none with --quiet (run_progress.h);
  // ended before the summary is printed.
  auto progress = std::make_optional<run::TerminalProgress>("tree " + args.dir);
  options.on_progress = progress->on_progress();
  auto summary = write_tree_inventory(args.dir, args.out, options);
  options.on_progress = nullptr;
  progress.reset();
  if (!summary.ok()) {
    print_error("fingerprint tree", summary.error());
    return kExitFailure;
  }
  if (args.json) {
    print_json({{"sha256", summary->sha256},
                {"entries", summary->entries},
                {"regular_bytes", summary->regular_bytes}});
  } else {
    fmt::print("tree sha256    {}  (SHA-256 of the inventory {})\n", summary->sha256, args.out);
    fmt::print("entries        {}  (records after the header, \".\" included)\n", summary->entries);
    fmt::print("regular bytes  {}  ({}, the sum of all regular file sizes)\n",
               summary->regular_bytes, binary_size_text(summary->regular_bytes));
  }
  return kExitOk;
}

int run_file(const FileArgs& args) {
  auto digest = hash_file(args.path);
  if (!digest.ok()) {
    print_error("fingerprint file", digest.error());
    return kExitFailure;
  }
  if (args.json) {
    print_json({{"path", args.path}, {"sha256", digest->sha256}, {"bytes", digest->bytes}});
  } else {
    fmt::print("{}  {}  ({} bytes)\n", digest->sha256, args.path, digest->bytes);
  }
  return kExitOk;
}

}  // namespace

void register_fingerprint(CLI::App& app, int* exit_code) {
  CLI::App* fp = app.add_subcommand(
      "fingerprint", "Prove what bytes go in: hash a tree, a file, an image archive or a source");
  fp->require_subcommand(1);

  auto tree_args = std::make_shared<TreeArgs>();
  CLI::App* tree = fp->add_subcommand(
      "tree",
      "Write the semantic-tree-v1 inventory of DIR (one JSON record per line, sorted by raw path "
      "bytes; symlinks recorded, never followed) and print {sha256, entries, regular_bytes}");
  tree->add_option("DIR", tree_args->dir, "Directory to inventory")->required();
  tree->add_option("--out", tree_args->out, "Inventory file to write (must not exist yet)")
      ->required();
  tree->add_flag("--json", tree_args->json, "Print the summary as JSON");
  tree->add_option("--threads", tree_args->threads,
                   "Hashing threads (default: one per available CPU)");
  tree->callback([tree_args, exit_code] { *exit_code = run_tree(*tree_args); });

  auto file_args = std::make_shared<FileArgs>();
  CLI::App* file = fp->add_subcommand(
      "file", "SHA-256 and size of one regular file (a symlink is refused, never followed)");
  file->add_option("PATH", file_args->path, "Regular file to hash")->required();
  file->add_flag("--json", file_args->json, "Print {path, sha256, bytes} as JSON");
  file->callback([file_args, exit_code] { *exit_code = run_file(*file_args); });

  add_fingerprint_image_and_source(*fp, exit_code);
  // Every fingerprint command takes --quiet; only `tree` has progress to leave out today.
  for (CLI::App* sub : fp->get_subcommands({}))
    sub->add_flag_callback(
        "--quiet,-q", [] { run::set_progress_quiet(true); },
        "Show no progress on stderr; errors and the result are still printed");
}

}  // namespace sealrun::cli
