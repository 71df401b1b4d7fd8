// SPDX-License-Identifier: Apache-2.0
// RunJournal: the run's grant record, written before what it names exists (run_context.h).
#include <fmt/format.h>

#include "controller/run/run_context.h"

namespace sealrun::run {

Status RunJournal::open(const StateDir& state, GrantRecord first) {
  record_ = std::move(first);
  journal_.emplace(SEALRUN_TRY(GrantJournal::open_in(state.fd(), state.path())));
  SEALRUN_TRY(journal_->record(record_));
  recorded_ = true;
  return ok_status();
}

Status RunJournal::update(const std::function<void(GrantRecord&)>& change,
                          RecordDurability durability) {
  change(record_);
  if (!journal_) return Error::make("grant journal: not open");
  SEALRUN_TRY(journal_->record(record_, durability));
  recorded_ = true;
  return ok_status();
}

Status RunJournal::forget() {
  if (!journal_ || !recorded_) return ok_status();
  SEALRUN_TRY(journal_->forget(record_.id));
  recorded_ = false;
  return ok_status();
}

}  // namespace sealrun::run
