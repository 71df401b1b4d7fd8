// SPDX-License-Identifier: Apache-2.0
// Unit tests of the run-time loading of libsystemd (sd_bus_library.h): a library that does not
// exist, one with none of the sd-bus functions (the C library) and one with all but one of them
// each give an error naming the library and what is missing, without crashing; the real
// libsystemd resolves every function, its table works for real calls, the process's copy is loaded
// once for all threads, the executable under test does not link libsystemd at all, and a root
// process on a host without a system bus socket is told so without loading it.
#include "containment/resgroup/sd_bus_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>
#include <vector>

#include "containment/resgroup/sd_bus_handles.h"
#include "containment/resgroup/sd_bus_manager.h"
#include "tests/support/fresh_process.h"

namespace sealrun::resgroup {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SdBusLibrary, ALibraryThatDoesNotExistIsNamed) {
  auto lib = open_sd_bus_library("libsealrun-no-such-library.so.0");
  ASSERT_FALSE(lib.ok());
  std::string m = lib.error().message();
  EXPECT_TRUE(contains(m, "cannot load libsealrun-no-such-library.so.0")) << m;
  EXPECT_TRUE(contains(m, "libsystemd0")) << m;  // says what to install
}

TEST(SdBusLibrary, ALibraryWithoutSdBusNamesTheFirstMissingSymbol) {
  auto lib = open_sd_bus_library("libc.so.6");
  ASSERT_FALSE(lib.ok());
  std::string m = lib.error().message();
  EXPECT_TRUE(contains(m, "libc.so.6 has no symbol sd_bus_open_system")) << m;
}

TEST(SdBusLibrary, EverySymbolIsCheckedNotOnlyTheFirst) {
  // Exports all the functions but sd_bus_message_skip (helpers/partial_sd_bus.c).
  auto lib = open_sd_bus_library(PARTIAL_SD_BUS_LIBRARY);
  ASSERT_FALSE(lib.ok());
  std::string m = lib.error().message();
  EXPECT_TRUE(
      contains(m, std::string(PARTIAL_SD_BUS_LIBRARY) + " has no symbol sd_bus_message_skip"))
      << m;
  // Only that one: had another been unchecked before it, the message would name that one.
  EXPECT_FALSE(contains(m, "sd_bus_open_system")) << m;
}

TEST(SdBusLibrary, TheRealLibraryResolvesEveryFunction) {
  auto lib = open_sd_bus_library(kLibsystemdSoname);
  ASSERT_TRUE(lib.ok()) << lib.error().message();
  const SdBusApi& api = (*lib)->api();
  std::vector<std::string> unset;
#define SEALRUN_CHECK_SET(name) \
  if (api.name == nullptr) unset.push_back(#name);
  SEALRUN_SD_BUS_FUNCTIONS(SEALRUN_CHECK_SET)
#undef SEALRUN_CHECK_SET
  EXPECT_TRUE(unset.empty()) << unset.front();
}

TEST(SdBusLibrary, TheTableMakesRealCallsAndReleasesThroughIt) {
  auto api = sd_bus_api();
  ASSERT_TRUE(api.ok()) << api.error().message();
  // A bus object with an address nobody listens on: sd_bus_start fails with the kernel's answer,
  // and the handle is closed through the table when it goes out of scope.
  sd_bus* raw = nullptr;
  ASSERT_GE((*api)->sd_bus_new(&raw), 0);
  SdBusPtr bus(raw, SdBusCloser{*api});
  ASSERT_GE((*api)->sd_bus_set_address(bus.get(), "unix:path=/nonexistent/sealrun-test-bus"), 0);
  EXPECT_EQ((*api)->sd_bus_start(bus.get()), -ENOENT);
  SdBusError error(**api);
  EXPECT_FALSE(error.is_set());
}

TEST(SdBusLibrary, ConnectingToNoBusIsAnErrorNamingTheAddress) {
  auto client = SystemdManagerClient::connect("unix:path=/nonexistent/sealrun-test-bus");
  ASSERT_FALSE(client.ok());
  std::string m = client.error().message();
  EXPECT_TRUE(contains(m, "/nonexistent/sealrun-test-bus")) << m;
}

TEST(SdBusLibrary, TheProcessLoadsItOnceForAllThreads) {
  std::vector<const SdBusApi*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] {
      auto api = sd_bus_api();
      if (api.ok()) seen[i] = *api;
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_NE(seen[0], nullptr);
  for (const SdBusApi* p : seen) EXPECT_EQ(p, seen[0]);
}

TEST(SdBusLibrary, NotLoadedBeforeItIsAskedFor) {
  // Whether libsystemd is mapped at start can only be seen in a process where nothing has asked
  // for it yet.
  constexpr const char* kFresh = "SEALRUN_SD_BUS_FRESH_PROCESS";
  if (!sealrun::testing::in_fresh_process(kFresh)) {
    sealrun::testing::rerun_current_test_in_fresh_process(kFresh);
    return;
  }
  EXPECT_EQ(sealrun::testing::mapped_objects_named("libsystemd.so"), 0)
      << "libsystemd is mapped at start: it is linked, not loaded on demand";
  ASSERT_TRUE(sd_bus_api().ok());
  EXPECT_EQ(sealrun::testing::mapped_objects_named("libsystemd.so"), 1);
}

TEST(SdBusLibrary, NoSystemBusSocketIsAnsweredWithoutLoadingIt) {
  // Only the root's system bus has the shortcut; a host with a system bus loads the library.
  constexpr const char* kFresh = "SEALRUN_SD_BUS_FRESH_PROCESS";
  if (!sealrun::testing::in_fresh_process(kFresh)) {
    sealrun::testing::rerun_current_test_in_fresh_process(kFresh);
    return;
  }
  ::unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
  bool no_socket = ::geteuid() == 0 && ::access("/run/dbus/system_bus_socket", F_OK) != 0;
  auto client = SystemdManagerClient::connect("");
  if (no_socket) {
    ASSERT_FALSE(client.ok());
    EXPECT_EQ(client.error().err(), ENOENT) << client.error().message();
    EXPECT_TRUE(contains(client.error().message(), "system bus")) << client.error().message();
    EXPECT_EQ(sealrun::testing::mapped_objects_named("libsystemd.so"), 0);
  } else {
    EXPECT_EQ(sealrun::testing::mapped_objects_named("libsystemd.so"), 1);
  }
}

}  // namespace
}  // namespace sealrun::resgroup
