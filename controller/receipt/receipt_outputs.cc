// SPDX-License-Identifier: Apache-2.0
// Outputs in the receipt and in outputs.jsonl: see receipt_outputs.h and docs/receipt.md.
#include "controller/receipt/receipt_outputs.h"

#include <algorithm>

#include "controller/common/display_text.h"
#include "fingerprint/sha256.h"
#include "fingerprint/tree_json.h"

namespace sealrun::receipt {

using nlohmann::json;

namespace {

// A name as is when it is valid UTF-8 (JSON then carries it exactly); otherwise the raw bytes in
// base64 under `<key>_b64` and, under `<key>`, an escaped form a person can read. So `a\377`,
// `a\376` and `a\357\277\275` (which is valid: U+FFFD) are three different records.
void put_name(json& o, const std::string& key, const std::string& raw) {
  if (tree_json::is_valid_utf8(raw)) {
    o[key] = raw;
  } else {
    o[key] = display::escape(raw);
    o[key + "_b64"] = tree_json::base64_encode(raw);
  }
}

std::string line_of(const json& item) {
  return item.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string_view output_kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::kFile:
      return "file";
    case OutputKind::kSymlink:
      return "symlink";
    case OutputKind::kFifo:
      return "fifo";
    case OutputKind::kSocket:
      return "socket";
    case OutputKind::kCharDevice:
      return "char_device";
    case OutputKind::kBlockDevice:
      return "block_device";
  }
  return "unknown";
}

json output_json(const OutputRecord& o) {
  json j = json::object();
  put_name(j, "path", o.path);
  switch (o.kind) {
    case OutputKind::kFile:
      j["size"] = o.size;
      j["sha256"] = o.sha256;
      if (!o.hardlink_of.empty()) put_name(j, "hardlink_of", o.hardlink_of);
      break;
    case OutputKind::kSymlink:
      j["kind"] = output_kind_name(o.kind);
      put_name(j, "target", o.target);
      break;
    case OutputKind::kCharDevice:
    case OutputKind::kBlockDevice:
      j["kind"] = output_kind_name(o.kind);
      j["device"] = o.device;
      break;
    default:
      j["kind"] = output_kind_name(o.kind);
  }
  return j;
}

std::string output_list_bytes(const std::vector<OutputRecord>& outputs) {
  std::string out;
  for (const auto& o : outputs) out += line_of(output_json(o));
  return out;
}

ListedOutputs::ListedOutputs(const Receipt& r) : recorded(r.outputs_recorded) {
  items.reserve(r.outputs.size());
  Sha256 list;
  for (const auto& o : r.outputs) {
    items.push_back(output_json(o));
    std::string line = line_of(items.back());
    list.update(line);
    sizes_.push_back(line.size());  // the newline stands for the separating comma
  }
  total = r.outputs.size();
  list_sha256 = list.finish_hex();
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (r.outputs[i].kind == OutputKind::kFile) priority_.push_back(i);
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (r.outputs[i].kind != OutputKind::kFile) priority_.push_back(i);
}

std::vector<size_t> ListedOutputs::select(size_t budget) const {
  std::vector<size_t> chosen;
  size_t used = 0;
  for (size_t i : priority_) {
    if (sizes_[i] > budget - used) continue;
    used += sizes_[i];
    chosen.push_back(i);
  }
  std::sort(chosen.begin(), chosen.end());
  return chosen;
}

}  // namespace sealrun::receipt
