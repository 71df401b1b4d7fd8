// Error::message(): the one place that joins a context chain into a sentence.
#include "core/result.h"

#include <cstring>

namespace sealrun {

std::string Error::message() const {
  std::string out;
  for (const auto& layer : chain_) {
    if (!out.empty()) out += ": ";
    out += layer;
  }
  if (err_ != 0) {
    out += ": ";
    out += std::strerror(err_);
  }
  return out;
}

}  // namespace sealrun
