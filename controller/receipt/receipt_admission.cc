// SPDX-License-Identifier: Apache-2.0
// admission_summary(): see receipt_admission.h.
#include "controller/receipt/receipt_admission.h"

#include "attest/inputs.h"

namespace sealrun::receipt {

namespace {

attest::AdmissionPins pins_of(const admission::AdmissionDocument& doc) {
  attest::AdmissionPins pins;
  attest::SourcePin src;
  src.kind = std::string(admission::source_kind_name(doc.source.kind));
  src.path = doc.source.path;
  src.commit = doc.source.commit;
  src.tree = doc.source.tree;
  src.manifest_sha256 = doc.source.manifest_sha256;
  src.path_sha256 = doc.source.path_sha256;
  src.job_path = doc.mounts.source;
  src.mtimes = std::string(admission::source_mtimes_name(doc.source.mtimes));
  src.mtime_epoch = doc.source_date_epoch;
  src.mtimes_sha256 = doc.source.mtimes_sha256;
  pins.source = src;
  if (doc.toolchain)  // without one, the closure below is the toolchain (verifications say so)
    pins.toolchains.push_back(
        {doc.toolchain->root, doc.toolchain->mount_path, doc.toolchain->tree_sha256});
  if (doc.image)
    pins.image = attest::ImagePin{doc.image->archive, doc.image->archive_sha256,
                                  doc.image->image_id, doc.image->diff_ids};
  for (const auto& t : doc.host_tools) pins.host_tools.push_back({t.path, t.sha256});
  for (const auto& t : doc.trees) pins.trees.push_back({t.host_path, t.job_path, t.tree_sha256});
  for (const auto& f : doc.host_files) pins.closure.push_back({f.path, f.sha256});
  return pins;
}

}  // namespace

Result<nlohmann::json> admission_summary(const admission::Admitted& admitted) {
  const auto& doc = admitted.document();
  nlohmann::json full = admission::admission_to_json(doc);
  nlohmann::json inputs = SEALRUN_TRY(attest::inputs_from_pins(pins_of(doc)));
  return nlohmann::json{
      {"sha256", admitted.sha256()}, {"command", full["command"]},
      {"env", full["env"]},          {"source_date_epoch", doc.source_date_epoch},
      {"limits", full["limits"]},    {"containment", full["containment"]},
      {"mounts", full["mounts"]},    {"inputs", inputs},
  };
}

void annotate_source_view(nlohmann::json* view, const admission::AdmissionDocument& doc) {
  if (!view->is_array()) return;
  for (nlohmann::json& e : *view) {
    if (!e.is_object() || e.value("kind", "") != "source") continue;
    e["mtimes"] = std::string(admission::source_mtimes_name(doc.source.mtimes));
    if (doc.source.mtimes == admission::SourceMtimes::kFixed)
      e["mtime_epoch"] = doc.source_date_epoch;
    else
      e["mtimes_sha256"] = doc.source.mtimes_sha256;
  }
}

}  // namespace sealrun::receipt
