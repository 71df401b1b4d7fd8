// SPDX-License-Identifier: Apache-2.0
// validate_spec(): table-driven. Each row changes one thing in a valid spec and says whether it
// must be accepted, and if not, a word the error must contain (so the message names the problem).
#include "containment/spec.h"

#include <gtest/gtest.h>

#include <functional>

namespace sealrun {
namespace {

ContainmentSpec valid_spec() {
  ContainmentSpec s;
  s.run_id = "run-1.a_b";
  s.owned_root = "/var/lib/sealrun/owned/run-1";
  s.argv = {"/usr/bin/make", "all"};
  s.env = {{"SOURCE_DATE_EPOCH", "0"}, {"PATH", "/usr/bin:/bin"}};
  s.mounts = {{"/work/src", "/src", MountSpec::Access::kReadOnly},
              {"/work/tc", "/usr/lib/toolchain", MountSpec::Access::kReadOnly},
              {"/state/owned/run-1/out", "/out", MountSpec::Access::kWritable},
              {"/state/owned/run-1/scratch", "/scratch", MountSpec::Access::kWritable}};
  s.requested = DimensionSet::all();
  s.required = {Dimension::kFilesystem, Dimension::kNetwork};
  return s;
}

struct Row {
  const char* name;
  std::function<void(ContainmentSpec&)> change;
  const char* error;  // nullptr: must be accepted
};

MountSpec rw(const char* target) { return {"/state/x", target, MountSpec::Access::kWritable}; }
MountSpec ro(const char* target) { return {"/state/x", target, MountSpec::Access::kReadOnly}; }

const Row kRows[] = {
    {"valid as is", [](ContainmentSpec&) {}, nullptr},
    {"run id empty", [](auto& s) { s.run_id = ""; }, "run id"},
    {"run id 65 chars", [](auto& s) { s.run_id = std::string(65, 'a'); }, "run id"},
    {"run id 64 chars", [](auto& s) { s.run_id = std::string(64, 'a'); }, nullptr},
    {"run id with slash", [](auto& s) { s.run_id = "a/b"; }, "run id"},
    {"run id dotdot", [](auto& s) { s.run_id = ".."; }, "run id"},
    {"run id with space", [](auto& s) { s.run_id = "a b"; }, "run id"},
    {"argv empty", [](auto& s) { s.argv.clear(); }, "argv"},
    {"argv[0] empty", [](auto& s) { s.argv = {""}; }, "argv"},
    {"argv NUL", [](auto& s) { s.argv.push_back(std::string("a\0b", 3)); }, "NUL"},
    {"required not requested",
     [](auto& s) {
       s.requested = {Dimension::kFilesystem};
       s.required = {Dimension::kFilesystem, Dimension::kNetwork};
     },
     "network"},
    {"memory_max zero", [](auto& s) { s.memory_max_bytes = 0; }, "memory_max_bytes"},
    {"memory_high zero", [](auto& s) { s.memory_high_bytes = 0; }, "memory_high_bytes"},
    {"pids zero", [](auto& s) { s.pids_max = 0; }, "pids_max"},
    {"pids wrapped negative", [](auto& s) { s.pids_max = static_cast<uint64_t>(-1); }, "pids_max"},
    {"wall clock negative", [](auto& s) { s.wall_clock_ms = -5; }, "wall_clock_ms"},
    {"grace zero", [](auto& s) { s.stop_grace_ms = 0; }, "stop_grace_ms"},
    {"high above max", [](auto& s) { s.memory_high_bytes = s.memory_max_bytes + 1; }, "exceeds"},
    {"env name digit first", [](auto& s) { s.env["1X"] = "v"; }, "1X"},
    {"env name with =", [](auto& s) { s.env["A=B"] = "v"; }, "A=B"},
    {"env name empty", [](auto& s) { s.env[""] = "v"; }, "environment name"},
    {"env name dash", [](auto& s) { s.env["A-B"] = "v"; }, "A-B"},
    {"env underscore ok", [](auto& s) { s.env["_a1"] = ""; }, nullptr},
    {"env value NUL", [](auto& s) { s.env["X"] = std::string("a\0b", 3); }, "NUL"},
    {"mount target relative", [](auto& s) { s.mounts.push_back(ro("out2")); }, "absolute"},
    {"mount source relative",
     [](auto& s) {
       s.mounts.push_back({"state", "/x", MountSpec::Access::kReadOnly});
     },
     "absolute"},
    {"mount target dotdot", [](auto& s) { s.mounts.push_back(rw("/out/../etc")); }, ".."},
    {"mount target dot", [](auto& s) { s.mounts.push_back(rw("/out/./x")); }, "\".\""},
    {"mount target double slash", [](auto& s) { s.mounts.push_back(rw("/out2//x")); }, "//"},
    {"mount source double slash",
     [](auto& s) {
       s.mounts.push_back({"/a//b", "/x", MountSpec::Access::kReadOnly});
     },
     "//"},
    {"mount target trailing slash", [](auto& s) { s.mounts.push_back(rw("/out2/")); }, "trailing"},
    {"mount target root ro", [](auto& s) { s.mounts.push_back(ro("/")); }, "reserved"},
    {"writable /etc", [](auto& s) { s.mounts.push_back(rw("/etc")); }, "reserved"},
    {"writable below /etc", [](auto& s) { s.mounts.push_back(rw("/etc/cron.d")); }, "reserved"},
    {"writable /usr/local/bin", [](auto& s) { s.mounts.push_back(rw("/usr/local/bin")); },
     "reserved"},
    {"writable /proc", [](auto& s) { s.mounts.push_back(rw("/proc")); }, "reserved"},
    {"writable /dev/shm", [](auto& s) { s.mounts.push_back(rw("/dev/shm")); }, "reserved"},
    {"writable /sys/fs/cgroup", [](auto& s) { s.mounts.push_back(rw("/sys/fs/cgroup")); },
     "reserved"},
    {"writable /bin", [](auto& s) { s.mounts.push_back(rw("/bin")); }, "reserved"},
    {"writable /sbin", [](auto& s) { s.mounts.push_back(rw("/sbin")); }, "reserved"},
    {"writable /lib64/x", [](auto& s) { s.mounts.push_back(rw("/lib64/x")); }, "reserved"},
    {"writable /libx32", [](auto& s) { s.mounts.push_back(rw("/libx32")); }, "reserved"},
    {"writable /boot", [](auto& s) { s.mounts.push_back(rw("/boot")); }, "reserved"},
    {"writable /run/user", [](auto& s) { s.mounts.push_back(rw("/run/user")); }, "reserved"},
    {"writable /var/tmp", [](auto& s) { s.mounts.push_back(rw("/var/tmp")); }, "reserved"},
    {"read-only below /usr ok", [](auto& s) { s.mounts.push_back(ro("/usr/lib/tc2")); }, nullptr},
    {"writable /etcetera ok (not below /etc)", [](auto& s) { s.mounts.push_back(rw("/etcetera")); },
     nullptr},
    {"writable /library (every top-level lib* is reserved)",
     [](auto& s) { s.mounts.push_back(rw("/library")); }, "reserved"},
    {"writable /scratch2 ok", [](auto& s) { s.mounts.push_back(rw("/scratch2")); }, nullptr},
    {"target twice", [](auto& s) { s.mounts.push_back(ro("/src")); }, "twice"},
    {"cwd relative", [](auto& s) { s.cwd = "src"; }, "working directory"},
    {"owned root dotdot", [](auto& s) { s.owned_root = "/a/../b"; }, "owned root"},
    {"image id malformed",
     [](auto& s) {
       s.image = ImageRef{"/a.tar", "sha256:abc"};
     },
     "image id"},
};

class ValidateSpec : public ::testing::TestWithParam<Row> {};

TEST_P(ValidateSpec, AcceptsOrNamesTheProblem) {
  const Row& row = GetParam();
  ContainmentSpec s = valid_spec();
  row.change(s);
  Status st = validate_spec(s);
  if (row.error == nullptr) {
    EXPECT_TRUE(st.ok()) << row.name << ": " << st.error().message();
  } else {
    ASSERT_FALSE(st.ok()) << row.name << " was accepted";
    EXPECT_NE(st.error().message().find(row.error), std::string::npos)
        << row.name << ": \"" << st.error().message() << "\" does not mention \"" << row.error
        << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ValidateSpec, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& info) {
                           std::string n;
                           for (const char* c = info.param.name; *c; ++c)
                             n += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                           return n + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace sealrun
