// SPDX-License-Identifier: Apache-2.0
// The sealrun executable and libcrypto, run as a user would: `sealrun --version` and `sealrun
// census DIR --json` never load it (the dynamic loader's own record, LD_DEBUG=files, is read; a
// hashing command in the same harness does show the load, so the probe is live); and a command
// that hashes or signs, given a libcrypto.so.3 that lacks a function (helpers/partial_libcrypto.c,
// found first through LD_LIBRARY_PATH), stops at once with exit 1 and a message naming the library
// and the function, having written nothing — while census, which needs no digest, still works.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/process.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using sealrun::testing::TempDir;
using sealrun::testing::write_text;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs build/sealrun with `extra_env` added to this process's environment.
Captured sealrun_cli(std::vector<std::string> args, std::vector<std::string> extra_env = {}) {
  SpawnOptions o;
  o.argv = {SEALRUN_BINARY_DIR "/sealrun"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  o.env = env;
  auto c = run_capture(o, 60 * 1000);
  EXPECT_TRUE(c) << c.error().message();
  return c ? *c : Captured{};
}

// Whether the dynamic loader loaded libcrypto into the process (its LD_DEBUG=files trace names
// every object it maps, at start and by dlopen).
bool loads_libcrypto(std::vector<std::string> args, int expected_exit = 0) {
  auto c = sealrun_cli(std::move(args), {"LD_DEBUG=files"});
  EXPECT_EQ(c.status.code, expected_exit) << c.err.substr(0, 4000);
  // The probe is live only when the trace is there at all.
  EXPECT_TRUE(contains(c.err, "file=libc.so.6")) << c.err.substr(0, 2000);
  return contains(c.err, "file=libcrypto.so");
}

TEST(CryptoLibraryCli, VersionAndCensusDoNotLoadLibcrypto) {
  TempDir tmp;
  std::filesystem::create_directory(tmp / "empty");
  EXPECT_FALSE(loads_libcrypto({"--version"}));
  EXPECT_FALSE(loads_libcrypto({"census", tmp / "empty", "--json"}));
  write_text(tmp / "file", "abc");
  EXPECT_TRUE(loads_libcrypto({"fingerprint", "file", tmp / "file"}));
}

std::string partial_libcrypto_dir() {
  return std::filesystem::path(PARTIAL_LIBCRYPTO).parent_path().string();
}

TEST(CryptoLibraryCli, ALibcryptoLackingAFunctionStopsHashingCommandsWithItsName) {
  TempDir tmp;
  write_text(tmp / "file", "abc");
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + partial_libcrypto_dir()};
  // The same command with the real library: it works, so the failure below is the library's.
  auto real = sealrun_cli({"fingerprint", "file", tmp / "file"});
  ASSERT_EQ(real.status.code, 0) << real.err;
  EXPECT_TRUE(contains(real.out, "ba7816bf")) << real.out;

  auto c = sealrun_cli({"fingerprint", "file", tmp / "file"}, env);
  EXPECT_EQ(c.status.code, 1) << c.err;
  EXPECT_EQ(c.status.signal, 0);
  EXPECT_TRUE(contains(c.err, "sealrun fingerprint file: ")) << c.err;
  EXPECT_TRUE(contains(c.err, "libcrypto.so.3 has no symbol ERR_clear_error")) << c.err;
  EXPECT_TRUE(contains(c.err, "libssl3")) << c.err;
  EXPECT_EQ(c.out, "");

  // A signing command stops before it creates anything.
  auto key = sealrun_cli({"key", "generate", "--out-dir", tmp / "keys"}, env);
  EXPECT_EQ(key.status.code, 1) << key.err;
  EXPECT_TRUE(contains(key.err, "sealrun key generate: ")) << key.err;
  EXPECT_TRUE(contains(key.err, "has no symbol ERR_clear_error")) << key.err;
  EXPECT_FALSE(std::filesystem::exists(tmp / "keys"));

  // census needs no digest and does not even look.
  std::filesystem::create_directory(tmp / "empty");
  auto census = sealrun_cli({"census", tmp / "empty", "--json"}, env);
  EXPECT_EQ(census.status.code, 0) << census.err;
}

}  // namespace
}  // namespace sealrun
