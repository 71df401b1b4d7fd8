// SPDX-License-Identifier: Apache-2.0
// A fixture for end-to-end tests of `sealrun run`: a source tree, a toolchain tree and a state
// directory in a fresh temp dir, admissions frozen with the real `sealrun admit freeze`, runs made
// with the real binary (build/sealrun) against real bwrap and real cgroups.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {

struct Frozen {
  std::string path;
  std::string sha256;
};

class RunTest : public ::testing::Test {
 public:  // helpers are called from free functions in the tests too
  void SetUp() override;
  // Freezes an admission whose command is `/bin/sh -c script`, with extra `--set` assignments.
  // The job's view: the source, the toolchain, busybox as /bin (busybox_tree_args) and, when the
  // script names /usr/bin/python3, the python-only /usr (python_tree_args).
  // `extra`: more options of `admit freeze` (e.g. "--tree", "DIR=/data").
  Frozen freeze(const std::string& script, const std::vector<std::string>& sets = {},
                const std::string& name = "admission.json",
                const std::vector<std::string>& extra = {});
  // An admission whose job runs `script` from the busybox image (podman; the run directory's
  // parents are made searchable for rootless podman) or the busybox tree (bwrap), as freeze().
  Frozen freeze_for(const std::string& mechanism, const std::string& script,
                    const std::string& name, const std::vector<std::string>& extra = {});
  // "admit freeze --out DIR/name" with this fixture's source, toolchain (at /opt/toolchain) and
  // state directory: what every admission of these tests starts from.
  std::vector<std::string> freeze_args(const std::string& name) const;
  // Runs build/sealrun with `args`; env nullopt keeps ours.
  Captured sealrun(const std::vector<std::string>& args,
                   std::optional<std::vector<std::string>> env = std::nullopt,
                   int64_t timeout_ms = 120000);
  Captured run(const Frozen& a, const std::string& id, const std::vector<std::string>& extra = {});
  // The receipt of run `id`: where `run` printed it (a refused run's is under refusals/), else
  // results/<id>/receipt.json.
  nlohmann::json receipt(const std::string& id);
  std::string receipt_path(const std::string& id) const;
  // SpawnOptions for build/sealrun with args (for tests that signal the controller).
  SpawnOptions sealrun_options(const std::vector<std::string>& args) const;

  TempDir dir_;
  std::string src_, toolchain_, state_;
  std::map<std::string, std::string> printed_receipts_;  // id -> the path `run` printed last
};

// build/fixtures/busybox-bin: a static busybox (Debian's busybox-static) and a link per applet,
// made on first use. A job sees no host path that is not pinned (docs/view.md), so the tests pin
// this as the job's /bin (`--tree DIR=/bin`): `/bin/sh -c ...` works with nothing of the host.
Result<std::string> busybox_bin_dir();
// "--tree", "<busybox_bin_dir()>=/bin": the shell every test job gets (fails the test if absent).
std::vector<std::string> busybox_tree_args();

// Runs tests/fixtures/SCRIPT with build/fixtures as its output directory (each script makes its
// fixture there idempotently): that directory, or why the script failed.
Result<std::string> fixture_made_by(const std::string& script);

// build/fixtures/python-usr (tests/fixtures/python_usr.sh): a /usr holding only python3 and what
// it loads. "--tree", "<it>=/usr": for the tests whose job runs /usr/bin/python3.
std::vector<std::string> python_tree_args();

// The directory holding the busybox OCI image fixture (busybox.oci.tar), built there by
// tests/fixtures/busybox_image.sh on first use.
Result<std::string> busybox_fixture_dir();

// True when no process whose command line contains `marker` is alive (zombies ignored).
bool no_process_with(const std::string& marker);

// Where the job of run `id` writes its /out while it runs: the directory out/ of its result space
// (STATE/owned/<id>+out/out, docs/growth.md) when it has one, else results/<id>/out. What a test
// that watches a running job (or leaves a file for it) looks at.
std::string live_out_dir(const std::string& state, const std::string& id);

// `path` as the controller of the owned file system `fs_id` (a run id, or a run id + "+out") sees
// it: the owned file systems are mounted in the controller's private mount namespace
// (containment/ownedfs/private_ns.h), reached from here through /proc/PID/root. `path` itself
// when no record names a controller.
std::string live_path(const std::string& state, const std::string& fs_id, const std::string& path);
// The pid of the controller that made owned file system `fs_id` (its record's), or 0.
int64_t owned_fs_controller(const std::string& state, const std::string& fs_id);
// A path under STATE/owned/<fs id>/ as the controller of that file system sees it (live_path); any
// other path as it is. Resolve it again while waiting: the record appears with the file system.
std::string live(const std::string& state, const std::string& path);

}  // namespace sealrun::testing
