// SPDX-License-Identifier: Apache-2.0
// /proc/<pid>/status security fields and libcap access: see caps.h.
#include "containment/caps.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/capability.h>

#include <cstdlib>
#include <memory>
#include <vector>

namespace sealrun {

namespace {

std::optional<std::string_view> field(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      std::string_view v = line.substr(key.size() + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      return v;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

std::optional<uint64_t> hex_field(std::string_view text, std::string_view key) {
  auto v = field(text, key);
  if (!v || v->empty()) return std::nullopt;
  std::string s(*v);
  char* end = nullptr;
  uint64_t out = std::strtoull(s.c_str(), &end, 16);
  if (end == s.c_str()) return std::nullopt;
  return out;
}

std::optional<int> int_field(std::string_view text, std::string_view key) {
  auto v = field(text, key);
  if (!v || v->empty()) return std::nullopt;
  std::string s(*v);
  char* end = nullptr;
  long out = std::strtol(s.c_str(), &end, 10);
  if (end == s.c_str()) return std::nullopt;
  return static_cast<int>(out);
}

struct CapDeleter {
  void operator()(void* p) const { cap_free(p); }
};

}  // namespace

SecurityStatus parse_security_status(std::string_view text) {
  SecurityStatus s;
  s.cap_inh = hex_field(text, "CapInh");
  s.cap_prm = hex_field(text, "CapPrm");
  s.cap_eff = hex_field(text, "CapEff");
  s.cap_bnd = hex_field(text, "CapBnd");
  s.cap_amb = hex_field(text, "CapAmb");
  s.no_new_privs = int_field(text, "NoNewPrivs");
  s.seccomp = int_field(text, "Seccomp");
  return s;
}

bool SecurityStatus::no_capabilities() const {
  return cap_prm == 0u && cap_eff == 0u && cap_bnd == 0u && cap_amb == 0u;
}

std::string SecurityStatus::problems() const {
  std::vector<std::string> out;
  auto cap = [&out](const char* name, const std::optional<uint64_t>& v) {
    if (!v)
      out.push_back(fmt::format("{} missing", name));
    else if (*v != 0)
      out.push_back(fmt::format("{} {:016x}", name, *v));
  };
  cap("CapPrm", cap_prm);
  cap("CapEff", cap_eff);
  cap("CapBnd", cap_bnd);
  cap("CapAmb", cap_amb);
  if (no_new_privs != 1)
    out.push_back(no_new_privs ? fmt::format("NoNewPrivs {}", *no_new_privs)
                               : "NoNewPrivs missing");
  return fmt::format("{}", fmt::join(out, ", "));
}

Result<std::string> own_capabilities_text() {
  std::unique_ptr<void, CapDeleter> caps(cap_get_proc());
  if (!caps) return Error::from_errno("cap_get_proc");
  std::unique_ptr<void, CapDeleter> text(cap_to_text(static_cast<cap_t>(caps.get()), nullptr));
  if (!text) return Error::from_errno("cap_to_text");
  return std::string(static_cast<char*>(text.get()));
}

}  // namespace sealrun
