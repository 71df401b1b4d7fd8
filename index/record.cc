// SPDX-License-Identifier: Apache-2.0
// Reading a verified receipt into the index's records (record.h).
#include "index/record.h"

#include <fmt/format.h>

#include <set>

namespace sealrun::index {

using nlohmann::json;

namespace {

std::string str(const json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Status expect(bool ok, std::string_view what) {
  if (ok) return ok_status();
  return Error::make(fmt::format("receipt field {}: unexpected type", what));
}

void add_output(const json& o, RunRecord* out) {
  if (!o.is_object()) return;
  auto sha = o.find("sha256");
  auto size = o.find("size");
  auto path = o.find("path");
  if (sha == o.end() || !sha->is_string() || path == o.end() || !path->is_string()) return;
  if (o.contains("kind")) return;  // symlink, fifo, socket, device: no bytes to find by
  out->outputs.push_back({path->get<std::string>(),
                          size != o.end() && size->is_number_unsigned() ? size->get<uint64_t>() : 0,
                          normalize_digest(sha->get<std::string>())});
}

}  // namespace

std::string normalize_digest(std::string_view text) {
  if (text.rfind("sha256:", 0) == 0) text.remove_prefix(7);
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

Status read_receipt_fields(const json& r, RunRecord* out) {
  SEALRUN_TRY(expect(r.is_object(), "(the receipt)"));
  out->id = str(r, "id");
  out->state = str(r, "state");
  if (auto e = r.find("exit"); e != r.end() && e->is_number_integer())
    out->exit_code = e->get<int64_t>();
  out->reason = str(r, "reason");
  out->started = str(r, "started");
  out->finished = str(r, "finished");
  out->admission_sha256 = normalize_digest(str(r, "admission_sha256"));
  std::set<std::pair<std::string, std::string>> seen;  // (algorithm, digest) already recorded
  auto add = [&](InputRecord in) {
    seen.emplace(in.algorithm, in.digest);
    out->inputs.push_back(std::move(in));
  };
  if (!out->admission_sha256.empty())
    add({"admission", "admission", "", "sha256", out->admission_sha256});

  auto adm = r.find("admission");
  if (adm != r.end() && !adm->is_null()) {
    SEALRUN_TRY(expect(adm->is_object(), "admission"));
    if (auto cmd = adm->find("command"); cmd != adm->end() && cmd->is_object()) {
      auto argv = cmd->find("argv");
      if (argv != cmd->end() && argv->is_array()) out->command = argv->dump();
    }
    if (auto inputs = adm->find("inputs"); inputs != adm->end()) {
      SEALRUN_TRY(expect(inputs->is_array(), "admission.inputs"));
      for (const auto& d : *inputs) {
        SEALRUN_TRY(expect(d.is_object(), "admission.inputs[]"));
        std::string kind = "input";
        if (auto a = d.find("annotations"); a != d.end() && a->is_object())
          if (auto k = a->find("kind"); k != a->end() && k->is_string()) kind = *k;
        std::string name = str(d, "name"), uri = str(d, "uri");
        if (auto dg = d.find("digest"); dg != d.end() && dg->is_object())
          for (const auto& [alg, value] : dg->items())
            if (value.is_string())
              add({kind, name, uri, alg, normalize_digest(value.get<std::string>())});
        if (kind != "image") continue;
        const auto& a = d["annotations"];
        if (auto id = a.find("image_id"); id != a.end() && id->is_string())
          add({kind, name, uri, "image_id", normalize_digest(id->get<std::string>())});
        if (auto ids = a.find("diff_ids"); ids != a.end() && ids->is_array())
          for (const auto& layer : *ids)
            if (layer.is_string())
              add({kind, name, uri, "diff_id", normalize_digest(layer.get<std::string>())});
      }
    }
  }
  if (auto view = r.find("view"); view != r.end() && view->is_array()) {
    for (const auto& v : *view) {
      if (!v.is_object()) continue;
      std::string pin = str(v, "pin");
      if (pin.rfind("sha256:", 0) != 0) continue;
      std::string hex = normalize_digest(pin);
      if (seen.count({"sha256", hex}) || seen.count({"sealrun_semanticTreeV1", hex}) ||
          seen.count({"sealrun_sourceManifestV1", hex}) || seen.count({"image_id", hex}))
        continue;
      std::string host = str(v, "host_path");
      add({str(v, "kind"), "view:" + str(v, "job_path"), host.empty() ? "" : "file://" + host,
           "sha256", hex});
    }
  }
  out->outputs.clear();
  if (auto outs = r.find("outputs"); outs != r.end() && outs->is_array())
    for (const auto& o : *outs) add_output(o, out);
  return ok_status();
}

Status read_outputs_jsonl(std::string_view bytes, RunRecord* out) {
  out->outputs.clear();
  size_t line = 0;
  while (!bytes.empty()) {
    ++line;
    size_t nl = bytes.find('\n');
    std::string_view one = bytes.substr(0, nl);
    bytes.remove_prefix(nl == std::string_view::npos ? bytes.size() : nl + 1);
    if (one.empty()) continue;
    json o = json::parse(one, nullptr, /*allow_exceptions=*/false);
    if (!o.is_object())
      return Error::make(fmt::format("outputs.jsonl line {}: not a JSON object", line));
    add_output(o, out);
  }
  return ok_status();
}

}  // namespace sealrun::index
