// SPDX-License-Identifier: Apache-2.0
// The run plan: everything the pipeline derives from a verified admission and the command line,
// as plain values (the containment spec, the group limits, the census configuration, the layout of
// the state directory). Pure, so unit tests read it without running anything.
#pragma once

#include <string>
#include <vector>

#include "admission/admitted.h"
#include "census/census_thread.h"
#include "containment/ownedfs/ownedfs.h"
#include "containment/resgroup/resource_group.h"
#include "containment/spec.h"
#include "controller/run/variations.h"
#include "core/result.h"

namespace sealrun::run {

// Where one run lives in the state directory (docs/state-directory.md): owned/<id>, results/<id>.
struct RunLayout {
  std::string state_dir;
  std::string owned_root;    // <state>/owned/<id>        (0700, marker file)
  std::string scratch_dir;   // <owned>/scratch           -> /scratch (writable)
  std::string logs_dir;      // <owned>/logs              job stdout/stderr as written
  std::string results_root;  // <state>/results/<id>
  std::string output_dir;    // <results>/out             -> /out (writable)
  // What the job's /out is: output_dir, or the run's result space (run_result_space.h), whose
  // contents are copied into output_dir after the job.
  std::string job_output_dir;
  // What the job's writable /src is, when not the admitted source copy: the run's result space
  // holding a copy of it (run_result_space.h). Empty: the admitted source root.
  std::string job_source_dir;
  std::string receipt_path;  // <results>/receipt.json
};
RunLayout layout_for(const std::string& state_dir, const std::string& id);

// <prefix>-20261130T120102Z-4242: unique on this host, sorted by time, a valid run id (for a
// `run` or `rebuild` without --id).
std::string generated_run_id(std::string_view prefix);

// A run id is a file name (core/run_id.h); the error names the bad id and the rule.
Status validate_run_id(const std::string& id);

// The job's PATH when the admission sets none: the toolchain's bin directory where the job sees it,
// then the usual system directories of the job's view.
std::string default_job_path(const admission::AdmissionDocument& doc);

// The job's environment: exactly SOURCE_DATE_EPOCH and the admitted variables, and
// default_job_path() as PATH when the admission sets none (the receipt's notes say so).
std::map<std::string, std::string> job_environment(const admission::AdmissionDocument& doc);

// `vary`: what a rebuild changes about the job's world (variations.h); by default nothing.
ContainmentSpec containment_spec(const admission::Admitted& admitted, const RunLayout& layout,
                                 const std::string& id, GrantMode mode,
                                 const Variations& vary = {});
struct LearningRun;  // run_pipeline.h
// A learning run's host trees, bound read-only before (under) the admitted mounts.
void add_learning_mounts(const LearningRun& learning, ContainmentSpec& spec);
resgroup::GroupLimits group_limits(const admission::Limits& limits);
// The census of this run: the owned space walked as a directory, or (fs given) sampled with one
// statfs as the file system of its own it is.
census::CensusConfig census_config(const admission::Limits& limits, const RunLayout& layout,
                                   const ownedfs::OwnedFs* fs, uint64_t owned_max_inodes);

}  // namespace sealrun::run
