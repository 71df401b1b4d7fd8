// SPDX-License-Identifier: Apache-2.0
// The resource_usage messages: see usage_proto.h.
#include "remote/usage_proto.h"

namespace sealrun::remote {

namespace {

void set_duration(google::protobuf::Duration* d, const struct timeval& tv) {
  d->set_seconds(tv.tv_sec);
  d->set_nanos(static_cast<int32_t>(tv.tv_usec * 1000));
}

}  // namespace

buildbarn::resourceusage::POSIXResourceUsage posix_usage(const struct rusage& u,
                                                         const std::optional<ReceiptFacts>& facts,
                                                         const Decision& decision) {
  buildbarn::resourceusage::POSIXResourceUsage p;
  set_duration(p.mutable_user_time(), u.ru_utime);
  set_duration(p.mutable_system_time(), u.ru_stime);
  if (facts && facts->peak_bytes)
    p.set_maximum_resident_set_size(static_cast<int64_t>(*facts->peak_bytes));
  else
    p.set_maximum_resident_set_size(static_cast<int64_t>(u.ru_maxrss) * 1024);  // KiB on Linux
  p.set_page_reclaims(u.ru_minflt);
  p.set_page_faults(u.ru_majflt);
  p.set_swaps(u.ru_nswap);
  p.set_block_input_operations(u.ru_inblock);
  p.set_block_output_operations(u.ru_oublock);
  p.set_messages_sent(u.ru_msgsnd);
  p.set_messages_received(u.ru_msgrcv);
  p.set_signals_received(u.ru_nsignals);
  p.set_voluntary_context_switches(u.ru_nvcsw);
  p.set_involuntary_context_switches(u.ru_nivcsw);
  p.set_termination_signal(decision.termination_signal);
  return p;
}

sealrun::remote::ReceiptReference receipt_reference(const ReceiptFacts& f,
                                                    const std::string& envelope_sha256,
                                                    const std::string& input_manifest_sha256) {
  sealrun::remote::ReceiptReference r;
  r.set_receipt_sha256(f.receipt_sha256);
  r.set_run_id(f.id);
  r.set_state(f.state);
  r.set_admission_sha256(f.admission_sha256);
  r.set_sealrun_exit(f.sealrun_exit);
  r.set_envelope_sha256(envelope_sha256);
  r.set_input_manifest_sha256(input_manifest_sha256);
  return r;
}

}  // namespace sealrun::remote
