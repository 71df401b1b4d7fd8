// SPDX-License-Identifier: Apache-2.0
// The hash-chained ledger: see ledger.h and docs/ledger.md.
#include "attest/ledger.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attest/openssl_util.h"
#include "core/bounded_file.h"
#include "core/syscall.h"

namespace sealrun::attest {
namespace {

// Opens a file directly in the state directory; O_NOFOLLOW refuses a symlink planted there.
Result<UniqueFd> open_in_state(int dirfd, const char* name, int flags, mode_t mode = 0) {
  auto fd = open_at(dirfd, name, flags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, mode);
  if (!fd) {
    if (fd.error().err() == ELOOP)
      return Error::make(
          fmt::format("STATE/{}: is a symlink; refused (the state directory may "
                      "be writable by someone else)",
                      name));
    return std::move(fd).error();
  }
  auto st = SEALRUN_TRY(fstat_fd(fd->get(), name));
  if (!S_ISREG(st.st_mode))
    return Error::make(fmt::format("STATE/{}: is {}, not a regular file; refused", name,
                                   file_kind_name(st.st_mode)));
  // O_NONBLOCK was only there so that opening a planted FIFO cannot hang; drop it again.
  if (::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) & ~O_NONBLOCK) != 0)
    return Error::from_errno(fmt::format("fcntl STATE/{}", name));
  return fd;
}

// flock(2) with a deadline: another sealrun appending holds the lock for milliseconds, so a lock
// still held after the timeout belongs to something stuck, and we say so.
Status lock_with_deadline(int fd, int operation, int timeout_ms = kLedgerLockTimeoutMs) {
  int64_t deadline = monotonic_ms() + timeout_ms;
  while (::flock(fd, operation | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return Error::from_errno("flock STATE/ledger.lock");
    if (monotonic_ms() >= deadline)
      return Error::make(
          fmt::format("STATE/{}: still locked after {} ms by another process (a stuck sealrun?)",
                      kLedgerLockFile, timeout_ms));
    ::poll(nullptr, 0, 1);  // the lock is held for a read and a write: it is free again soon
  }
  return ok_status();
}

Result<UniqueFd> take_lock(int dirfd, bool exclusive, int timeout_ms = kLedgerLockTimeoutMs) {
  auto fd = SEALRUN_TRY(open_in_state(dirfd, kLedgerLockFile, O_RDWR | O_CREAT, 0600));
  SEALRUN_TRY(lock_with_deadline(fd.get(), exclusive ? LOCK_EX : LOCK_SH, timeout_ms));
  return fd;
}

Result<std::string> pread_exact(int fd, uint64_t offset, size_t size) {
  std::string buf(size, '\0');
  size_t got = 0;
  while (got < size) {
    ssize_t n = retry_eintr([&] {
      return ::pread(fd, buf.data() + got, size - got, static_cast<off_t>(offset + got));
    });
    if (n < 0) return Error::from_errno("read STATE/ledger.jsonl");
    if (n == 0) return Error::make("STATE/ledger.jsonl: shrank while being read");
    got += static_cast<size_t>(n);
  }
  return buf;
}

struct Tail {
  std::optional<LedgerEntry> last;  // nullopt: empty ledger
  std::string last_line_sha256 = kGenesisPrevSha256;
};

// Reads and checks only the last line: appending stays O(1) however long the ledger grows (the
// whole chain is verify_ledger's job).
Result<Tail> read_tail(int fd, uint64_t size) {
  Tail tail;
  if (size == 0) return tail;
  size_t window = static_cast<size_t>(std::min<uint64_t>(size, kMaxLedgerLineBytes + 1));
  auto buf = SEALRUN_TRY(pread_exact(fd, size - window, window));
  if (buf.back() != '\n') {
    size_t nl = buf.rfind('\n');
    uint64_t torn = nl == std::string::npos ? window : window - nl - 1;
    return Error::make(fmt::format(
        "STATE/{}: the last line is incomplete ({}{} bytes after the last newline: a crash during "
        "an append?); nothing was appended. See `sealrun receipt verify --ledger` and "
        "docs/ledger.md (\"A torn last line\")",
        kLedgerFile, torn == window && size > window ? "over " : "", torn));
  }
  size_t start = buf.rfind('\n', buf.size() - 2);
  if (start == std::string::npos) {
    if (size > window)
      return Error::make(fmt::format("STATE/{}: the last line is longer than {} bytes", kLedgerFile,
                                     kMaxLedgerLineBytes));
    start = 0;
  } else {
    ++start;
  }
  std::string_view line(buf.data() + start, buf.size() - start);
  auto entry = parse_ledger_line(line.substr(0, line.size() - 1));
  if (!entry)
    return std::move(entry).error().context(
        fmt::format("STATE/{}: the last line does not parse; nothing was appended", kLedgerFile));
  tail.last = std::move(*entry);
  tail.last_line_sha256 = sha256_hex_of(line);
  return tail;
}

// The walk shared by verify and list: one pass, 64 KiB at a time, never more than one line held.
class ChainWalker {
 public:
  ChainWalker(LedgerReport* report, const LedgerVisitor& each) : report_(report), each_(each) {}

  // Feeds one complete line (without its "\n").
  void line(std::string_view text, bool too_long) {
    uint64_t n = ++report_->lines;
    if (too_long) {
      // Neither its hash nor its seq is known: the next line is checked by its own claims only.
      chain_known_ = seq_known_ = false;
      return problem(n, fmt::format("longer than {} bytes", kMaxLedgerLineBytes));
    }
    std::string line_sha = sha256_hex_of(std::string(text) + "\n");
    auto entry = parse_ledger_line(text);
    if (!entry) {
      prev_sha_ = line_sha;
      chain_known_ = true;
      seq_known_ = false;
      return problem(n, entry.error().message());
    }
    if (seq_known_ && entry->seq != expected_seq_) {
      problem(n, fmt::format("seq is {}, expected {} (a line was deleted, duplicated or reordered)",
                             entry->seq, expected_seq_));
    } else if (chain_known_ && entry->prev_sha256 != prev_sha_) {
      problem(n, n == 1 ? std::string("prev_sha256 is not 64 zeros, as the first line's must be "
                                      "(lines before it were deleted?)")
                        : fmt::format("prev_sha256 does not match the SHA-256 of line {}: that "
                                      "line was edited, or lines were deleted or reordered",
                                      n - 1));
    } else if (report_->problems == 0) {
      report_->head_seq = entry->seq;
      report_->head_sha256 = line_sha;
    }
    // Carry on from this line's own claims, so one bad line is reported once, not for every line
    // after it.
    expected_seq_ = entry->seq + 1;
    prev_sha_ = line_sha;
    chain_known_ = seq_known_ = true;
    if (each_) each_(*entry, n);
  }

 private:
  void problem(uint64_t line, std::string what) {
    if (report_->problems++ == 0) report_->first_problem = LedgerProblem{line, std::move(what)};
  }
  LedgerReport* report_;
  const LedgerVisitor& each_;
  uint64_t expected_seq_ = 1;
  std::string prev_sha_ = kGenesisPrevSha256;
  bool chain_known_ = true;
  bool seq_known_ = true;
};

}  // namespace

Result<UniqueFd> open_state_dir(const std::string& path) {
  return open_at(AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
}

Result<LedgerEntry> append_to_ledger(int state_dirfd, const LedgerAppend& input) {
  LedgerEntry entry;
  entry.id = input.id;
  entry.state = input.state;
  entry.receipt_sha256 = input.receipt_sha256;
  entry.at = input.at.empty() ? utc_timestamp_now() : input.at;
  entry.seq = 1;
  entry.prev_sha256 = kGenesisPrevSha256;
  SEALRUN_TRY_CTX(check_entry_fields(entry), "ledger entry");

  auto lock = SEALRUN_TRY(take_lock(state_dirfd, true, input.lock_timeout_ms));
  auto fd = SEALRUN_TRY(open_in_state(state_dirfd, kLedgerFile, O_RDWR | O_CREAT | O_APPEND, 0644));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), kLedgerFile));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size + kMaxLedgerLineBytes > kMaxLedgerBytes)
    return Error::make(
        fmt::format("STATE/{}: full ({} bytes); start a new state directory", kLedgerFile, size));
  auto tail = SEALRUN_TRY(read_tail(fd.get(), size));
  if (tail.last) {
    entry.seq = tail.last->seq + 1;
    entry.prev_sha256 = tail.last_line_sha256;
  }
  std::string line = format_ledger_line(entry);
  // One write(2) of a line under 1 KiB, under the exclusive lock: no reader holding the shared
  // lock sees half of it. A short or failed write (disk full) is cut back off.
  if (auto w = write_all(fd.get(), line, "STATE/ledger.jsonl"); !w) {
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0)
      return std::move(w).error().context(
          "appending to the ledger failed and the partial line could not be removed");
    return std::move(w).error().context("appending to the ledger");
  }
  // The line is whole in the file: the lock is let go before the fsync, so that runs ending
  // together queue only for the read of the last line and the write, not for one another's disk
  // flush (milliseconds each, the most of an append). The fsync still returns before we do, and it
  // makes this line durable with every line before it (an fsync covers the whole file, whoever
  // wrote it); a crash before it loses the tail of the file, never a line in its middle.
  lock.reset();
  if (::fsync(fd.get()) != 0) return Error::from_errno("fsync STATE/ledger.jsonl");
  // The first line also created the file: its directory entry must be durable too.
  if (size == 0 && ::fsync(state_dirfd) != 0) return Error::from_errno("fsync the state directory");
  return entry;
}

Result<LedgerReport> verify_ledger(int state_dirfd, const LedgerVisitor& each) {
  auto fd = open_in_state(state_dirfd, kLedgerFile, O_RDONLY);
  if (!fd) return std::move(fd).error();
  // A reader takes the shared lock when the lock file exists; it never creates one (verifying
  // writes nothing).
  UniqueFd lock;
  if (auto l = open_in_state(state_dirfd, kLedgerLockFile, O_RDONLY); l) {
    lock = std::move(*l);
    SEALRUN_TRY(lock_with_deadline(lock.get(), LOCK_SH));
  }
  auto st = SEALRUN_TRY(fstat_fd(fd->get(), kLedgerFile));
  if (static_cast<uint64_t>(st.st_size) > kMaxLedgerBytes)
    return Error::make(fmt::format("STATE/{}: is {} bytes, over the limit of {} bytes", kLedgerFile,
                                   st.st_size, kMaxLedgerBytes));
  LedgerReport report;
  ChainWalker walker(&report, each);
  std::string pending;  // the current line so far (bounded by kMaxLedgerLineBytes)
  bool too_long = false;
  char buf[65536];
  uint64_t total = 0;               // bytes read
  uint64_t after_last_newline = 0;  // offset just past the last "\n" seen
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd->get(), buf, sizeof(buf)); });
    if (n < 0) return Error::from_errno("read STATE/ledger.jsonl");
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > kMaxLedgerBytes)
      return Error::make(fmt::format("STATE/{}: grew past {} bytes while being read", kLedgerFile,
                                     kMaxLedgerBytes));
    std::string_view chunk(buf, static_cast<size_t>(n));
    while (!chunk.empty()) {
      size_t nl = chunk.find('\n');
      std::string_view piece = chunk.substr(0, nl);
      if (!too_long) {
        if (pending.size() + piece.size() + 1 > kMaxLedgerLineBytes) {
          too_long = true;
          pending.clear();
        } else {
          pending.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      chunk.remove_prefix(nl + 1);
      after_last_newline = total - chunk.size();
      if (report.lines >= kMaxLedgerLines)
        return Error::make(
            fmt::format("STATE/{}: more than {} lines", kLedgerFile, kMaxLedgerLines));
      walker.line(pending, too_long);
      pending.clear();
      too_long = false;
    }
  }
  // Bytes after the last newline are a torn tail (kept out of the chain, reported).
  if (total > after_last_newline) {
    report.torn_bytes = total - after_last_newline;
    if (!report.first_problem)
      report.first_problem = LedgerProblem{
          report.lines + 1,
          fmt::format("incomplete: {} bytes without a newline (a crash during an append?)",
                      report.torn_bytes)};
    ++report.problems;
  }
  return report;
}

Result<LedgerListing> list_ledger(int state_dirfd, const LedgerFilter& filter) {
  LedgerListing listing;
  std::string since = filter.since_unix_s ? ledger_timestamp(*filter.since_unix_s) : "";
  auto report = verify_ledger(state_dirfd, [&](const LedgerEntry& e, uint64_t) {
    if (filter.state && e.state != *filter.state) return;
    if (filter.id && e.id != *filter.id) return;
    // Both sides are "YYYY-MM-DDTHH:MM:SS.mmmZ" in UTC, so string order is time order.
    if (!since.empty() && e.at < since) return;
    listing.entries.push_back(e);
  });
  if (!report) {
    if (report.error().err() == ENOENT) return listing;
    return std::move(report).error();
  }
  listing.report = std::move(*report);
  return listing;
}

Result<std::string> remove_torn_tail(int state_dirfd) {
  auto lock = SEALRUN_TRY(take_lock(state_dirfd, true));
  auto fd = SEALRUN_TRY(open_in_state(state_dirfd, kLedgerFile, O_RDWR));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), kLedgerFile));
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return std::string();
  // Look back at most one line's length: a torn tail is a prefix of one line.
  size_t window = static_cast<size_t>(std::min<uint64_t>(size, kMaxLedgerLineBytes + 1));
  auto buf = SEALRUN_TRY(pread_exact(fd.get(), size - window, window));
  if (buf.back() == '\n') return std::string();
  size_t nl = buf.rfind('\n');
  if (nl == std::string::npos && size > window)
    return Error::make(fmt::format(
        "STATE/{}: more than {} bytes after the last newline: not a torn append; left as it is",
        kLedgerFile, kMaxLedgerLineBytes));
  std::string torn = nl == std::string::npos ? buf : buf.substr(nl + 1);
  if (::ftruncate(fd.get(), static_cast<off_t>(size - torn.size())) != 0)
    return Error::from_errno("truncate STATE/ledger.jsonl");
  if (::fsync(fd.get()) != 0) return Error::from_errno("fsync STATE/ledger.jsonl");
  return torn;
}

}  // namespace sealrun::attest
