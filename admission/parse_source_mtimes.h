// SPDX-License-Identifier: Apache-2.0
// The source's timestamps in an admission (docs/admission.md, "Source timestamps"):
// source.mtimes ("fixed" or "preserved"), source.mtime_epoch (fixed: the one time of every entry,
// the same value as the top-level source_date_epoch) and, for "preserved", source.mtimes_list and
// source.mtimes_sha256. Parsed beside parse.cc with its rules (every problem reported, each with
// its JSON path). An admission written before these keys existed reads as "fixed" at its
// source_date_epoch.
#pragma once

#include <nlohmann/json.hpp>

#include "admission/document.h"
#include "admission/json_fields.h"

namespace sealrun::admission {

// `root` is the whole document (source_date_epoch lives at its top); doc->source.kind and
// doc->source_date_epoch are already read. Fills doc->source's mtimes fields and, when only
// source.mtime_epoch is given, doc->source_date_epoch.
void parse_source_mtimes(const nlohmann::json& root, AdmissionDocument* doc,
                         const ProblemSink& problem);

}  // namespace sealrun::admission
