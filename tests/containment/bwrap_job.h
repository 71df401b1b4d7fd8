// SPDX-License-Identifier: Apache-2.0
// Test support for the bwrap integration tests: runs the static `hostile` helper inside a real
// rootless bwrap through BwrapMechanism (acquire_grant + spawn + wait + cleanup, as the controller
// does) and returns its "name=result" lines. The helper's directory is bound from a descriptor
// out of a root-only (0700) temporary directory, so the job user could not reach it by path.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "containment/bwrap.h"
#include "containment/grant.h"
#include "containment/resgroup/resource_group.h"
#include "core/job_user.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {

struct JobRun {
  JobExit exit;
  std::string out, err;
  std::map<std::string, std::string> kv;  // parsed "name=value" lines of stdout
  std::vector<std::string> cleanup;
};

class BwrapFixture {
 public:
  BwrapFixture();
  // /src: the helper (ro); /toolchain: a file tree (ro); /out: owned by the job user (rw).
  const TempDir& dir() const { return dir_; }
  std::string src_dir() const { return dir_ / "src"; }
  std::string toolchain_dir() const { return dir_ / "toolchain"; }
  std::string out_dir() const { return dir_ / "out"; }
  ContainmentSpec spec(std::vector<std::string> hostile_args) const;
  // Acquires a grant and runs the job; `io` fields other than -1 replace the capture files;
  // `on_start` runs while the job is running.
  JobRun run(const ContainmentSpec& spec, resgroup::ResourceGroup* group = nullptr, JobIo io = {},
             const std::function<void(ContainedJob&)>& on_start = {});
  BwrapMechanism& mechanism() { return *mech_; }

 private:
  TempDir dir_;
  JobUser user_;
  std::unique_ptr<BwrapMechanism> mech_;
};

std::map<std::string, std::string> parse_kv(const std::string& text);
bool pidfd_has_exited(int pidfd, int timeout_ms);

}  // namespace sealrun::testing
