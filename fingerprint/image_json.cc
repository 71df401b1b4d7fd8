// parse_bounded_json(): see image_json.h. Depth and duplicate keys are enforced from nlohmann's
// parser callback, which sees every object/array start and every key in document order.
#include "fingerprint/image_json.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>
#include <vector>

namespace sealrun {
namespace {

struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

Result<nlohmann::json> parse_bounded_json(std::string_view bytes, const std::string& what,
                                          size_t max_bytes, int max_depth) {
  if (bytes.size() > max_bytes)
    return Error::make(
        fmt::format("{}: {} bytes of JSON, over the limit of {}", what, bytes.size(), max_bytes));
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto callback = [&](int depth, nlohmann::json::parse_event_t event,
                      nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= max_depth)
      throw Refused(fmt::format("nested deeper than {} levels", max_depth));
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second) throw Refused(fmt::format("duplicate key \"{}\"", key));
    }
    return true;
  };
  try {
    return nlohmann::json::parse(bytes.begin(), bytes.end(), callback);
  } catch (const Refused& e) {
    return Error::make(fmt::format("{}: {}", what, e.what()));
  } catch (const nlohmann::json::exception& e) {
    return Error::make(fmt::format("{}: not valid JSON: {}", what, e.what()));
  } catch (const std::exception& e) {
    return Error::make(fmt::format("{}: {}", what, e.what()));
  }
}

}  // namespace sealrun
