// SPDX-License-Identifier: Apache-2.0
// --vary: see variations.h and docs/rebuild.md.
#include "controller/variations.h"

#include <fmt/format.h>

#include <utility>

namespace sealrun::run {

namespace {

// `path` moved below the varied build root when it is `from` or below it.
std::string moved(const std::string& path, const std::string& from) {
  if (path == from || (path.size() > from.size() && path.compare(0, from.size(), from) == 0 &&
                       path[from.size()] == '/'))
    return std::string(kVariedBuildRoot) + path;
  return path;
}

// Each name of kVariationNames and the flag it sets.
constexpr std::pair<std::string_view, bool Variations::*> kFlags[] = {
    {"hostname", &Variations::hostname},     {"umask", &Variations::umask},
    {"locale", &Variations::locale},         {"timezone", &Variations::timezone},
    {"build_path", &Variations::build_path}, {"num_cpus", &Variations::num_cpus},
    {"user_id", &Variations::user_id},
};

}  // namespace

bool Variations::any() const {
  return hostname || umask || locale || timezone || build_path || num_cpus || user_id;
}

Result<Variations> parse_variations(std::string_view list) {
  Variations v;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    bool* flag = nullptr;
    for (const auto& [known, member] : kFlags)
      if (name == known) flag = &(v.*member);
    if (name == "all") {
      for (const auto& entry : kFlags) v.*entry.second = true;
    } else if (flag != nullptr) {
      *flag = true;
    } else if (name == "time") {
      return Error::make(
          "--vary time: not offered; it needs a faked clock (faketime or a time namespace, which "
          "moves only the monotonic clocks), and sealrun does not fake the job's clock "
          "(docs/rebuild.md)");
    } else {
      std::string known = "all";
      for (auto n : kVariationNames) known += fmt::format(", {}", n);
      return Error::make(fmt::format("--vary: unknown variation {:?}; known: {}", name, known));
    }
  }
  return v;
}

uint32_t varied_umask(uint32_t controller_umask) {
  return controller_umask == kVariedUmask ? 0022 : kVariedUmask;
}

void apply_variations(const Variations& v, const std::string& source_target,
                      ContainmentSpec& spec) {
  if (v.hostname) spec.hostname = std::string(kVariedHostname);
  if (v.umask) spec.umask = varied_umask(v.base_umask);
  if (v.locale) {
    spec.env["LANG"] = std::string(kVariedLocale);
    spec.env["LC_ALL"] = std::string(kVariedLocale);
    spec.env["LANGUAGE"] = "fr_CH:fr";
  }
  if (v.timezone) spec.env["TZ"] = std::string(kVariedTimezone);
  if (v.build_path) {
    for (auto& m : spec.mounts) m.target = moved(m.target, source_target);
    spec.cwd = moved(spec.cwd, source_target);
  }
  if (v.user_id) spec.uid_in_job = kVariedUid;
}

nlohmann::json describe_variations(const Variations& v) {
  nlohmann::json out = nlohmann::json::array();
  auto add = [&out](std::string_view name, std::string how) {
    out.push_back({{"name", name}, {"how", std::move(how)}});
  };
  if (v.hostname)
    add("hostname",
        fmt::format("the job's UTS namespace is named {} (every run: sealrun), and so are its "
                    "generated /etc/hostname and /etc/hosts (bwrap)",
                    kVariedHostname));
  if (v.umask)
    add("umask", fmt::format("the job starts with umask {:04o} (the controller's: {:04o})",
                             varied_umask(v.base_umask), v.base_umask));
  if (v.locale)
    add("locale", fmt::format("LANG and LC_ALL={}, LANGUAGE=fr_CH:fr (the locale need not be "
                              "installed in the job: the variables are what programs read)",
                              kVariedLocale));
  if (v.timezone) add("timezone", fmt::format("TZ={}", kVariedTimezone));
  if (v.build_path)
    add("build_path", fmt::format("the source (and the working directory in it) is mounted "
                                  "below {}; /out and /scratch keep their admitted paths",
                                  kVariedBuildRoot));
  if (v.num_cpus)
    add("num_cpus", v.cpus_used > 0
                        ? fmt::format("the job may use {} CPU(s) (CPU affinity)", v.cpus_used)
                        : std::string("not varied: the controller may use only one CPU"));
  if (v.user_id)
    add("user_id", fmt::format("the job's uid and gid are {} inside its user namespace (bwrap "
                               "--uid/--gid), and its generated /etc/passwd and /etc/group name "
                               "them; not varied under podman, whose job is its container's root",
                               kVariedUid));
  return out;
}

}  // namespace sealrun::run
