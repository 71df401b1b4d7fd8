// SPDX-License-Identifier: Apache-2.0
// What the `index` sub-commands share (controller/cli/cmd_index*.cc): opening the index with its
// schema brought up to date, and the default index when no --db is given.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "index/db.h"

namespace sealrun::cli {

// query and report read this index when no --db is given: the default state directory's.
inline constexpr char kDefaultIndexUrl[] = "sqlite:sealrun-state/index.sqlite";

// Opens `url` (index::open_db) and migrates its schema (index/schema.h).
Result<std::unique_ptr<index::Db>> open_index(const std::string& url, bool create);

}  // namespace sealrun::cli
