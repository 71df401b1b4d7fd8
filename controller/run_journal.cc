// RunJournal: the run's grant record, written before what it names exists (run_context.h).
#include <fmt/format.h>

#include "controller/run_context.h"

namespace sealrun::run {

void RunJournal::open(const std::string& state_dir, GrantRecord first,
                      std::vector<std::string>& warnings) {
  record_ = std::move(first);
  auto journal = GrantJournal::open(state_dir);
  if (!journal) {
    warnings.push_back("grant journal: " + journal.error().message());
    return;
  }
  journal_.emplace(std::move(*journal));
  if (auto st = journal_->record(record_); st)
    recorded_ = true;
  else
    warnings.push_back("grant journal: " + st.error().message());
}

void RunJournal::update(const std::function<void(GrantRecord&)>& change,
                        std::vector<std::string>& warnings) {
  change(record_);
  if (!journal_) return;
  if (auto st = journal_->record(record_); st)
    recorded_ = true;
  else
    warnings.push_back("grant journal: " + st.error().message());
}

Status RunJournal::forget() {
  if (!journal_ || !recorded_) return ok_status();
  SEALRUN_TRY(journal_->forget(record_.id));
  recorded_ = false;
  return ok_status();
}

}  // namespace sealrun::run
