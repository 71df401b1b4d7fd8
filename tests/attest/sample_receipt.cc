// SPDX-License-Identifier: Apache-2.0
// sample_pins() / sample_receipt(): see sample_receipt.h.
#include "tests/attest/sample_receipt.h"

namespace sealrun::attest::testing {

using nlohmann::json;

AdmissionPins sample_pins() {
  AdmissionPins p;
  SourcePin s;
  s.kind = "git";
  s.path = "/home/dev/src/hello world";
  s.commit = std::string(40, '1');
  s.tree = std::string(40, '2');
  s.manifest_sha256 = std::string(64, '3');
  p.source = s;
  p.toolchains.push_back({"/usr/lib/gcc/x86_64-linux-gnu/12", "/usr/lib/gcc/x86_64-linux-gnu/12",
                          std::string(64, '4')});
  p.toolchains.push_back({"/opt/cross", "/opt/cross", std::string(64, '5')});
  p.trees.push_back({"/usr/include", "/usr/include", std::string(64, '6')});
  p.image = ImagePin{"/var/images/busybox.oci.tar",
                     std::string(64, '7'),
                     "sha256:" + std::string(64, '8'),
                     {"sha256:" + std::string(64, '9')}};
  p.host_tools.push_back({"/usr/bin/bwrap", std::string(64, 'a')});
  p.closure.push_back({"/usr/lib/x86_64-linux-gnu/libc.so.6", std::string(64, 'b')});
  return p;
}

json sample_receipt() {
  json inputs = *inputs_from_pins(sample_pins());
  return {
      {"schema", "sealrun-receipt-v1"},
      {"id", "run-42"},
      {"state", "built"},
      {"exit", 0},
      {"reason", ""},
      {"admission_sha256", std::string(64, 'c')},
      {"started", "2026-01-02T03:04:05.678Z"},
      {"finished", "2026-01-02T03:04:09.001Z"},
      {"sealrun_version", {{"version", "0.2.0"}, {"commit", std::string(40, 'd')}}},
      {"admission",
       {{"sha256", std::string(64, 'c')},
        {"command",
         {{"argv", {"/usr/bin/gcc", "-O2", "-o", "/out/hello", "hello.c"}}, {"cwd", "/src"}}},
        {"env", {{"LANG", "C.UTF-8"}, {"PATH", "/usr/bin:/bin"}}},
        {"source_date_epoch", 0},
        {"limits", {{"memory_max_bytes", 8589934592}, {"pids_max", 4096}, {"wall_clock_s", 1500}}},
        {"containment",
         {{"required", {"filesystem", "network", "memory"}},
          {"mechanism", "auto"},
          {"network", "none"}}},
        {"inputs", inputs}}},
      {"grant",
       {{"mechanism", "bwrap"},
        {"mode", "enforcing"},
        {"enforced", {"filesystem", "network", "memory"}},
        {"degraded", json::array()},
        {"required", {"filesystem", "network", "memory"}},
        {"unenforced_required", json::array()},
        {"tried", {"bwrap"}}}},
      {"commands",
       {{{"label", "job"},
         {"argv", {"/usr/bin/gcc"}},
         {"exit", 0},
         {"stdout", {{"sha256", std::string(64, 'e')}, {"size", 0}, {"tail", ""}}},
         {"stderr", {{"sha256", std::string(64, 'f')}, {"size", 0}, {"tail", ""}}}}}},
      {"outputs",
       {{{"path", "hello"}, {"size", 16000}, {"sha256", std::string(64, '0')}},
        {{"path", "odd-\xef\xbf\xbd.bin"},
         {"path_b64", "b2RkLf8uYmlu"},  // "odd-\xff.bin"
         {"size", 3},
         {"sha256", std::string(63, '0') + "1"}}}},
      {"stop_confirmed", true},
      {"truncated", json::array()},
  };
}

std::string receipt_bytes(const json& receipt) { return receipt.dump(2) + "\n"; }

}  // namespace sealrun::attest::testing
