// SPDX-License-Identifier: Apache-2.0
// probe_to_json(): see probe_json.h.
#include "containment/probe_json.h"

namespace sealrun {

nlohmann::json probe_to_json(const MechanismProbe& p) {
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& d : p.dimensions)
    dims.push_back({{"dimension", std::string(dimension_name(d.dimension))},
                    {"enforceable", d.enforceable},
                    {"why", d.why}});
  return {{"name", p.name},
          {"available", p.available},
          {"path", p.path},
          {"version", p.version},
          {"unavailable_reason", p.unavailable_reason},
          {"enforceable", p.enforceable().names()},
          {"dimensions", dims}};
}

}  // namespace sealrun
