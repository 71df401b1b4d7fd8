// SPDX-License-Identifier: Apache-2.0
// `index query`: the auditor's questions as one filtered read of the index. Filters combine (all
// must hold); none gives every run. A digest filter is driven by its index (outputs_by_sha256,
// inputs_by_digest, runs_by_admission), so a question by digest costs a few index lookups
// whatever the size of the index. Runs come back oldest first (by finish time, then node and
// ledger line), each with its pinned inputs and, when asked by output digest, the outputs that
// matched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "index/db.h"
#include "index/record.h"

namespace sealrun::index {

struct QueryFilter {
  std::optional<std::string> output_sha256;  // normalised hex
  std::optional<std::string> input_sha256;
  std::optional<std::string> admission_sha256;
  std::optional<std::string> state;
  std::optional<std::string> node;
  std::optional<std::string> since;  // "YYYY-MM-DDTHH:MM:SS.mmmZ": finished at or after
  size_t limit = 0;                  // 0: no limit
  bool newest_first = false;
};

struct QueryOptions {
  bool with_inputs = true;  // read each run's inputs (one more lookup per run)
};

// A run as the index holds it; `outputs` are the ones that matched --output-sha256 (empty
// otherwise).
using IndexedRun = RunRecord;

Result<std::vector<IndexedRun>> query_runs(Db& db, const QueryFilter& filter,
                                           const QueryOptions& options = {});

struct NodeSummary {
  std::string node, key_id, head_sha256, registered_at, ingested_at;
  uint64_t ledger_length = 0, runs = 0;
  std::vector<std::string> problems;
};
// Every node with its head, run count and recorded ingest refusals.
Result<std::vector<NodeSummary>> list_nodes(Db& db);

}  // namespace sealrun::index
