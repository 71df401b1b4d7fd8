// SPDX-License-Identifier: Apache-2.0
// `index ingest` for one node (ingest.h): the key, the ledger against the index's head, each new
// receipt, then batched writes that move the head forward.
#include "index/ingest.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <thread>

#include "attest/dsse.h"
#include "attest/ledger.h"
#include "attest/ledger_checkpoint.h"
#include "attest/openssl_util.h"
#include "core/beneath.h"
#include "core/bounded_file.h"
#include "core/strict_json.h"
#include "core/syscall.h"
#include "index/record.h"

namespace sealrun::index {

using nlohmann::json;

namespace {

constexpr size_t kMaxReceiptBytes = 1024 * 1024;            // docs/receipt.md: a receipt's bound
constexpr size_t kMaxOutputsListBytes = 256 * 1024 * 1024;  // outputs.jsonl of a large tree

struct Head {
  std::string key_id, pem;
  uint64_t length = 0;
  std::string sha256 = attest::kGenesisPrevSha256;
  bool signed_seen = false;
};

Result<std::optional<Head>> read_head(Db& db, const std::string& node, bool for_update) {
  std::string sql =
      "SELECT key_id, public_key_pem, ledger_length, ledger_head_sha256, signed_seen FROM nodes "
      "WHERE node = $1";
  if (for_update && db.backend() == Backend::kPostgres) sql += " FOR UPDATE";
  auto rows = SEALRUN_TRY(db.query(sql, {node}));
  if (rows.rows.empty()) return std::optional<Head>();
  const auto& r = rows.rows[0];
  return std::optional<Head>(Head{r[0].value_or(""), r[1].value_or(""),
                                  std::stoull(r[2].value_or("0")), r[3].value_or(""),
                                  r[4].value_or("0") != "0"});
}

// Remembers a refusal for `index report` (once per node and text). Best effort: the refusal is
// reported to the caller whether or not this row could be written.
void record_problem(Db& db, const std::string& node, const std::string& what) {
  (void)db.insert_rows("ingest_problems", {"node", "what", "first_seen"},
                       {{node, what, utc_timestamp_now()}});
}

bool exists_at(int dirfd, const std::string& name) {
  struct stat st {};
  return ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

struct Found {
  UniqueFd dir;      // the receipt's directory
  std::string name;  // the receipt's file name in it
  std::string rel;   // results/<id>/receipt.json, for messages and the index
  std::string bytes;
};

// The receipt a line names: results/<id>/receipt.json, or one of refusals/<id>/*.json, whichever
// has the line's SHA-256.
std::optional<Found> find_receipt(int state_fd, const attest::LedgerEntry& e) {
  auto try_file = [&](UniqueFd& dir, const std::string& place,
                      const std::string& name) -> std::optional<Found> {
    auto bytes = read_bounded_file(dir.get(), name, kMaxReceiptBytes);
    if (!bytes || attest::sha256_hex_of(*bytes) != e.receipt_sha256) return std::nullopt;
    auto again = open_dir_beneath(dir.get(), ".");
    if (!again) return std::nullopt;
    return Found{std::move(*again), name, place + "/" + e.id + "/" + name, std::move(*bytes)};
  };
  if (auto dir = open_dir_beneath(state_fd, "results/" + e.id); dir)
    if (auto f = try_file(*dir, "results", "receipt.json")) return f;
  auto dir = open_dir_beneath(state_fd, "refusals/" + e.id);
  if (!dir) return std::nullopt;
  int listing_fd = ::openat(dir->get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (listing_fd < 0) return std::nullopt;
  DIR* d = ::fdopendir(listing_fd);
  if (d == nullptr) {
    ::close(listing_fd);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (dirent* ent = ::readdir(d)) {
    std::string n = ent->d_name;
    if (n.size() > 5 && n.ends_with(".json") && !n.ends_with(".dsse.json")) names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& n : names)
    if (auto f = try_file(*dir, "refusals", n)) return f;
  return std::nullopt;
}

std::string envelope_name(const std::string& receipt_name) {
  return receipt_name.substr(0, receipt_name.size() - 5) + ".dsse.json";
}

// Verifies one ledger line's receipt and reads it into a record. An Error is a refusal.
Result<RunRecord> verify_line(int state_fd, const NodeSource& src, const attest::PublicKey& key,
                              const attest::LedgerEntry& e) {
  auto found = find_receipt(state_fd, e);
  if (!found)
    return Error::make(fmt::format(
        "no receipt of run {} has the SHA-256 the ledger records ({}): it was changed or removed",
        e.id, e.receipt_sha256));
  RunRecord rec;
  rec.node = src.node;
  rec.seq = e.seq;
  rec.ledger_at = e.at;
  rec.receipt_sha256 = e.receipt_sha256;
  rec.receipt_path = src.state_dir + "/" + found->rel;
  auto doc = parse_strict_json(found->bytes);
  if (!doc || !doc->is_object()) return Error::make(found->rel + ": not a JSON object");
  std::string env = envelope_name(found->name);
  bool claims_signed = doc->contains("signing") && (*doc)["signing"].is_object();
  if (exists_at(found->dir.get(), env)) {
    auto envelope = attest::read_envelope_file(found->dir.get(), env);
    if (!envelope) return std::move(envelope).error().context(found->rel);
    auto ok = attest::verify_receipt_envelope(*envelope, key, found->bytes);
    if (!ok)
      return std::move(ok).error().context(
          fmt::format("{}: the signature does not verify with node {}'s key {}", found->rel,
                      src.node, key.key_id()));
    rec.signer = ok->key_id;
  } else if (claims_signed) {
    return Error::make(found->rel + ": the receipt says it is signed but its envelope " + env +
                       " is missing");
  }
  SEALRUN_TRY_CTX(read_receipt_fields(*doc, &rec), found->rel);
  if (rec.id != e.id)
    return Error::make(fmt::format(
        "{}: the receipt's id is \"{}\", not its directory's and the ledger line's \"{}\": a "
        "receipt copied from another run",
        found->rel, printable_text(rec.id, 80), e.id));
  if (rec.state != e.state)
    return Error::make(fmt::format("{}: state \"{}\" differs from the ledger's \"{}\"", found->rel,
                                   printable_text(rec.state, 40), e.state));
  if (found->rel.starts_with("results/") && exists_at(found->dir.get(), "outputs.jsonl")) {
    auto list = read_bounded_file(found->dir.get(), "outputs.jsonl", kMaxOutputsListBytes);
    if (!list) return std::move(list).error().context("results/" + e.id + "/outputs.jsonl");
    auto pinned = doc->find("outputs_list_sha256");
    if (pinned == doc->end() || !pinned->is_string() ||
        attest::sha256_hex_of(*list) != pinned->get<std::string>())
      return Error::make(fmt::format(
          "results/{}/outputs.jsonl is not the list the receipt pins (outputs_list_sha256): "
          "changed after the run",
          e.id));
    SEALRUN_TRY_CTX(read_outputs_jsonl(*list, &rec), "results/" + e.id + "/outputs.jsonl");
  }
  return rec;
}

Status insert_records(Db& db, const std::vector<RunRecord>& recs) {
  std::vector<Row> runs, inputs, outputs;
  for (const auto& r : recs) {
    std::string seq = std::to_string(r.seq);
    auto opt = [](const std::string& s) { return s.empty() ? Value() : Value(s); };
    runs.push_back({r.node, seq, r.id, r.state,
                    r.exit_code ? Value(std::to_string(*r.exit_code)) : Value(), opt(r.reason),
                    opt(r.started), opt(r.finished), r.ledger_at, r.signer, opt(r.admission_sha256),
                    opt(r.command), r.receipt_sha256, r.receipt_path});
    for (size_t i = 0; i < r.inputs.size(); ++i) {
      const auto& in = r.inputs[i];
      inputs.push_back(
          {r.node, seq, std::to_string(i), in.kind, in.name, opt(in.uri), in.algorithm, in.digest});
    }
    for (const auto& o : r.outputs)
      outputs.push_back({r.node, seq, o.path, std::to_string(o.size), o.sha256});
  }
  SEALRUN_TRY(db.insert_rows(
      "runs",
      {"node", "seq", "id", "state", "exit_code", "reason", "started", "finished", "ledger_at",
       "signer", "admission_sha256", "command", "receipt_sha256", "receipt_path"},
      runs));
  SEALRUN_TRY(db.insert_rows(
      "inputs", {"node", "seq", "ordinal", "kind", "name", "uri", "algorithm", "digest"}, inputs));
  SEALRUN_TRY(db.insert_rows("outputs", {"node", "seq", "path", "size", "sha256"}, outputs));
  return ok_status();
}

// One pass's view of the ledger: the lines after the index's head (at most a window of them)
// and the SHA-256 of each, so a head that moved meanwhile can be checked against them.
struct Window {
  uint64_t base = 0;                       // the index's head length this pass started from
  std::vector<attest::LedgerEntry> lines;  // lines base+1 ..
  std::vector<std::string> sha;            // their SHA-256, "\n" included
  std::string sha_at_base;                 // line `base`'s ("" when missing)
  std::string sha_of(uint64_t line) const {
    if (line == base) return sha_at_base;
    if (line > base && line - base <= sha.size()) return sha[line - base - 1];
    return "";
  }
};

class NodeIngest {
 public:
  NodeIngest(Db& db, const NodeSource& src, const IngestOptions& o, NodeOutcome* out)
      : db_(db), src_(src), opt_(o), out_(out) {}

  Status run() {
    auto head = SEALRUN_TRY(read_head(db_, src_.node, false));
    if (!choose_key(head)) return ok_status();
    out_->key_id = key_->key_id();
    auto dir = attest::open_state_dir(src_.state_dir);
    if (!dir) {
      refuse(dir.error().message());
      return ok_status();
    }
    state_fd_ = std::move(*dir);
    if (!head) SEALRUN_TRY(flush({}, Window{}));  // registers the key even with nothing to add
    if (!out_->ok()) return ok_status();
    bool first_pass = true;
    for (;;) {
      auto current = SEALRUN_TRY(read_head(db_, src_.node, false));
      Head h = current.value_or(Head{});
      signed_seen_ = h.signed_seen;
      if (first_pass) out_->already = h.length;
      first_pass = false;
      Window w;
      bool more = SEALRUN_TRY(read_window(h, &w));
      if (!out_->ok() || w.lines.empty()) {
        out_->head_length = h.length;
        out_->head_sha256 = h.sha256;
        return ok_status();
      }
      std::vector<RunRecord> batch;
      bool stopped = false;
      std::vector<std::optional<Result<RunRecord>>> verified;
      for (size_t i = 0; i < w.lines.size(); ++i) {
        const auto& e = w.lines[i];
        if (i % opt_.batch == 0) verified = verify_lines(w, i);
        auto& rec = *verified[i % opt_.batch];
        // Unsigned receipts only before the node's first signed one (in ledger order).
        if (rec && rec->signer) signed_seen_ = true;
        if (rec && !rec->signer && signed_seen_)
          rec = Error::make(rec->receipt_path.substr(src_.state_dir.size() + 1) +
                            ": unsigned, after a signed receipt of this node (a signature was "
                            "removed, or the key was taken away)");
        if (!rec) {
          SEALRUN_TRY(flush(std::move(batch), w));
          batch.clear();
          refuse(fmt::format("ledger line {} ({} {}): {}", e.seq, e.id, e.state,
                             rec.error().message()));
          stopped = true;
          break;
        }
        batch.push_back(std::move(*rec));
        if (batch.size() >= opt_.batch) {
          SEALRUN_TRY(flush(std::move(batch), w));
          batch.clear();
          if (!out_->ok()) return ok_status();
        }
      }
      if (!stopped) SEALRUN_TRY(flush(std::move(batch), w));
      if (stopped || !out_->ok() || !more) return ok_status();
    }
  }

 private:
  // Verifies lines [first, first + batch) of the window on every core: the signature checks and
  // hashing are the ingest's cost, and each line's check is independent of the others.
  std::vector<std::optional<Result<RunRecord>>> verify_lines(const Window& w, size_t first) {
    size_t n = std::min(opt_.batch, w.lines.size() - first);
    std::vector<std::optional<Result<RunRecord>>> out(n);
    size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
    threads = std::min(threads, (n + 63) / 64);  // a few lines are not worth a thread
    auto work = [&](size_t t) {
      for (size_t k = t; k < n; k += threads)
        out[k] = verify_line(state_fd_.get(), src_, *key_, w.lines[first + k]);
    };
    std::vector<std::thread> pool;
    std::vector<size_t> here = {0};  // shares this thread runs itself
    for (size_t t = 1; t < threads; ++t) {
      try {
        pool.emplace_back(work, t);
      } catch (const std::system_error&) {
        here.push_back(t);  // no thread to be had: the work is done here instead
      }
    }
    for (size_t t : here) work(t);
    for (auto& th : pool) th.join();
    return out;
  }

  bool choose_key(const std::optional<Head>& head) {
    if (head && src_.key && src_.key->key_id() != head->key_id) {
      refuse(fmt::format(
          "--key {}=...: key {} is not the key registered for node {} in the index (key {}); "
          "a node's key does not change through ingest",
          src_.node, src_.key->key_id(), src_.node, head->key_id));
      return false;
    }
    if (src_.key) {
      key_ = src_.key;
      return true;
    }
    if (!head) {
      refuse(
          fmt::format("node {} has no key registered in the index: give --key {}=PUB (the "
                      "node's public key, sealrun.pub)",
                      src_.node, src_.node));
      return false;
    }
    auto k = attest::public_key_from_pem(head->pem, "the key registered for node " + src_.node);
    if (!k) {
      refuse(k.error().message());
      return false;
    }
    key_ = std::move(*k);
    return true;
  }

  void refuse(std::string what) {
    record_problem(db_, src_.node, what);
    out_->problems.push_back(std::move(what));
  }

  // Reads the ledger whole (its chain) and keeps the lines after `h`; refuses a ledger that does
  // not extend `h`. Returns whether lines past the window remain.
  Result<bool> read_window(const Head& h, Window* w) {
    w->base = h.length;
    uint64_t last = h.length + opt_.window;
    auto report =
        attest::verify_ledger(state_fd_.get(), [&](const attest::LedgerEntry& e, uint64_t n) {
          if (n < h.length || n > last) return;
          std::string sha = attest::sha256_hex_of(attest::format_ledger_line(e));
          if (n == h.length) {
            w->sha_at_base = std::move(sha);
            return;
          }
          w->lines.push_back(e);
          w->sha.push_back(std::move(sha));
        });
    uint64_t lines = 0;
    if (!report) {
      if (report.error().err() != ENOENT) {
        refuse(src_.state_dir + "/ledger.jsonl: " + report.error().message());
        return false;
      }
    } else if (!report->ok()) {
      refuse(fmt::format(
          "{}/ledger.jsonl: the chain is broken ({}): nothing of node {} is indexed until it is "
          "repaired (sealrun receipt verify --ledger {})",
          src_.state_dir,
          report->first_problem
              ? fmt::format("line {}: {}", report->first_problem->line, report->first_problem->what)
              : fmt::format("{} torn byte(s) after the last line", report->torn_bytes),
          src_.node, src_.state_dir));
      return false;
    } else {
      lines = report->lines;
    }
    out_->ledger_lines = lines;
    if (h.length == 0) w->sha_at_base = attest::kGenesisPrevSha256;
    attest::LedgerCheckpoint seen{h.length, h.sha256, ""};
    if (auto wrong = attest::ledger_extends(seen, lines, w->sha_at_base)) {
      refuse(
          fmt::format("{}/ledger.jsonl does not extend what the index verified of node {} "
                      "({} line(s), head sha256 {}): {}; truncated, rolled back or rewritten "
                      "since — refused, nothing indexed",
                      src_.state_dir, src_.node, h.length, h.sha256, *wrong));
      w->lines.clear();
      return false;
    }
    return lines > last;
  }

  // One transaction: the node's head re-read under a lock, the records past it inserted, the
  // head moved to the last of them.
  Status flush(std::vector<RunRecord> recs, const Window& w) {
    SEALRUN_TRY(db_.begin_write());
    Status st = flush_locked(std::move(recs), w);
    if (!st || !out_->ok()) {
      db_.rollback();
      if (!out_->ok()) record_problem(db_, src_.node, out_->problems.back());
      return st;
    }
    return db_.commit();
  }

  Status flush_locked(std::vector<RunRecord> recs, const Window& w) {
    auto now = utc_timestamp_now();
    SEALRUN_TRY(db_.insert_rows(
        "nodes",
        {"node", "key_id", "public_key_pem", "ledger_length", "ledger_head_sha256", "signed_seen",
         "registered_at"},
        {{src_.node, key_->key_id(), key_->pem(), "0", attest::kGenesisPrevSha256, "0", now}}));
    auto head = SEALRUN_TRY(read_head(db_, src_.node, true));
    if (!head) return Error::make("node " + src_.node + ": its row vanished during ingest");
    if (head->key_id != key_->key_id()) {
      out_->problems.push_back(
          fmt::format("node {} was registered meanwhile with key {}, not {}: refused", src_.node,
                      head->key_id, key_->key_id()));
      return ok_status();
    }
    if (recs.empty()) return ok_status();
    if (head->length != w.base || head->sha256 != w.sha_of(w.base)) {
      // Another ingest of this node moved the head: fine if it moved along this very ledger.
      if (head->length < w.base || w.sha_of(head->length) != head->sha256) {
        out_->problems.push_back(fmt::format(
            "the index's head for node {} moved meanwhile to line {} (sha256 {}), which this "
            "ledger does not extend: refused",
            src_.node, head->length, head->sha256));
        return ok_status();
      }
      std::erase_if(recs, [&](const RunRecord& r) { return r.seq <= head->length; });
      if (recs.empty()) return ok_status();
    }
    SEALRUN_TRY(insert_records(db_, recs));
    uint64_t last = recs.back().seq;
    SEALRUN_TRY(db_.query(
        "UPDATE nodes SET ledger_length = $1, ledger_head_sha256 = $2, signed_seen = $3, "
        "ingested_at = $4 WHERE node = $5",
        {std::to_string(last), w.sha_of(last), signed_seen_ ? "1" : "0", now, src_.node}));
    out_->indexed += recs.size();
    return ok_status();
  }

  Db& db_;
  const NodeSource& src_;
  const IngestOptions& opt_;
  NodeOutcome* out_;
  std::optional<attest::PublicKey> key_;
  UniqueFd state_fd_;
  bool signed_seen_ = false;
};

}  // namespace

Result<NodeOutcome> ingest_node(Db& db, const NodeSource& source, const IngestOptions& options) {
  NodeOutcome out;
  out.node = source.node;
  out.state_dir = source.state_dir;
  NodeIngest ingest(db, source, options, &out);
  SEALRUN_TRY_CTX(ingest.run(), "node " + source.node);
  auto head = SEALRUN_TRY(read_head(db, source.node, false));
  if (head) {
    out.head_length = head->length;
    out.head_sha256 = head->sha256;
    out.key_id = head->key_id;
  }
  return out;
}

}  // namespace sealrun::index
