// SPDX-License-Identifier: Apache-2.0
// Unit tests of check_action(): a well-formed bb_worker request becomes the job's argv, env and
// cwd; each broken field is refused with a message that names it (table-driven).
#include "remote/action_request.h"

#include <gtest/gtest.h>

#include <functional>

namespace sealrun::remote {
namespace {

ActionFields good() {
  ActionFields f;
  f.arguments = {"/bin/sh", "-c", "true"};
  f.environment_variables = {{"PATH", "/usr/bin:/bin"}};
  f.working_directory = "pkg/sub";
  f.stdout_path = "a1/stdout";
  f.stderr_path = "a1/stderr";
  f.input_root_directory = "a1/root";
  f.temporary_directory = "a1/tmp";
  f.server_logs_directory = "a1/server_logs";
  return f;
}

TEST(CheckAction, AGoodRequestBecomesTheJob) {
  auto a = check_action(good());
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->argv, good().arguments);
  EXPECT_EQ(a->cwd, "/src/pkg/sub");
  EXPECT_EQ(a->env.at("PATH"), "/usr/bin:/bin");
  EXPECT_EQ(a->env.at("TMPDIR"), "/tmp");  // the job's private tmp, not the host's directory
  EXPECT_EQ(a->source_date_epoch, 0);
  EXPECT_EQ(a->input_root, "a1/root");
}

TEST(CheckAction, EmptyWorkingDirectoryIsTheInputRoot) {
  ActionFields f = good();
  f.working_directory.clear();
  f.temporary_directory.clear();
  auto a = check_action(f);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->cwd, "/src");
}

TEST(CheckAction, TheActionsOwnTmpdirAndEpochAreKept) {
  ActionFields f = good();
  f.environment_variables["TMPDIR"] = "/scratch";
  f.environment_variables["SOURCE_DATE_EPOCH"] = "1700000000";
  auto a = check_action(f);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_EQ(a->env.at("TMPDIR"), "/scratch");
  EXPECT_EQ(a->source_date_epoch, 1700000000);
  EXPECT_EQ(a->env.count("SOURCE_DATE_EPOCH"), 0u);  // the admission pins it as a number
}

struct Broken {
  const char* name;
  std::function<void(ActionFields&)> mutate;
  const char* message;  // must appear in the error
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

class CheckActionRefuses : public ::testing::TestWithParam<Broken> {};

TEST_P(CheckActionRefuses, NamingTheField) {
  ActionFields f = good();
  GetParam().mutate(f);
  auto a = check_action(f);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message().find(GetParam().message), std::string::npos) << a.error().message();
}

const Broken kBroken[] = {
    {"no_arguments", [](ActionFields& f) { f.arguments.clear(); }, "arguments: empty"},
    {"empty_program", [](ActionFields& f) { f.arguments = {""}; }, "arguments: empty"},
    {"nul_argument", [](ActionFields& f) { f.arguments.push_back(std::string("a\0b", 3)); },
     "arguments[3]: contains a NUL byte"},
    {"too_many_arguments", [](ActionFields& f) { f.arguments.assign(5000, "x"); },
     "more than the limit of 4096"},
    {"huge_argument", [](ActionFields& f) { f.arguments.push_back(std::string(300 << 10, 'x')); },
     "bytes, more than the limit"},
    {"too_many_variables",
     [](ActionFields& f) {
       for (int i = 0; i < 300; ++i) f.environment_variables["V" + std::to_string(i)] = "x";
     },
     "environment_variables: 301 of them"},
    {"bad_variable_name", [](ActionFields& f) { f.environment_variables["A=B"] = "x"; },
     "not a variable name"},
    {"nul_in_value", [](ActionFields& f) { f.environment_variables["A"] = std::string("x\0y", 3); },
     "environment_variables A: the value contains a NUL byte"},
    {"bad_epoch", [](ActionFields& f) { f.environment_variables["SOURCE_DATE_EPOCH"] = "-5"; },
     "SOURCE_DATE_EPOCH"},
    {"absolute_input_root", [](ActionFields& f) { f.input_root_directory = "/etc"; },
     "input_root_directory \"/etc\": absolute"},
    {"escaping_input_root", [](ActionFields& f) { f.input_root_directory = "a/../../etc"; },
     "input_root_directory"},
    {"empty_input_root", [](ActionFields& f) { f.input_root_directory.clear(); },
     "input_root_directory: empty"},
    {"escaping_working_directory", [](ActionFields& f) { f.working_directory = ".."; },
     "working_directory"},
    {"nul_in_stdout_path", [](ActionFields& f) { f.stdout_path = std::string("a\0b", 3); },
     "stdout_path: contains a NUL byte"},
    {"control_character_path", [](ActionFields& f) { f.stderr_path = "a/\x1b[2J"; }, "stderr_path"},
    {"double_slash", [](ActionFields& f) { f.server_logs_directory = "a//logs"; },
     "server_logs_directory"},
    {"absolute_tmp", [](ActionFields& f) { f.temporary_directory = "/tmp"; },
     "temporary_directory"},
    {"same_streams", [](ActionFields& f) { f.stderr_path = f.stdout_path; },
     "stdout_path and stderr_path: the same file"},
    // Confined to the action's directory (a1/, the parent of its input root a1/root).
    {"stdout_in_another_actions_root", [](ActionFields& f) { f.stdout_path = "a2/root/x"; },
     "stdout_path \"a2/root/x\": outside the action's directory \"a1\""},
    {"stderr_in_own_root", [](ActionFields& f) { f.stderr_path = "a1/root/err"; },
     "stderr_path \"a1/root/err\": in or around the input root"},
    {"logs_outside", [](ActionFields& f) { f.server_logs_directory = "logs"; },
     "server_logs_directory \"logs\": outside the action's directory"},
    {"tmp_is_root", [](ActionFields& f) { f.temporary_directory = "a1/root"; },
     "temporary_directory \"a1/root\": in or around the input root"},
    {"root_at_top", [](ActionFields& f) { f.input_root_directory = "a1"; },
     "its parent is the build directory itself"},
};

INSTANTIATE_TEST_SUITE_P(Table, CheckActionRefuses, ::testing::ValuesIn(kBroken),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CheckBuildPath, ReadinessPathRules) {
  EXPECT_TRUE(check_build_path("path", "check_readiness").ok());
  EXPECT_FALSE(check_build_path("path", "").ok());
  EXPECT_TRUE(check_build_path("path", "", true).ok());
  EXPECT_FALSE(check_build_path("path", "../x").ok());
  EXPECT_FALSE(check_build_path("path", "/x").ok());
  EXPECT_FALSE(check_build_path("path", "x/").ok());
}

}  // namespace
}  // namespace sealrun::remote
