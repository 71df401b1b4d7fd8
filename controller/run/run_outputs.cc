// SPDX-License-Identifier: Apache-2.0
// Logs and the output list: see run_outputs.h.
#include "controller/run/run_outputs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "core/atomic_write.h"
#include "core/syscall.h"
#include "fingerprint/sha256.h"

namespace sealrun::run {

namespace {

constexpr size_t kCopyChunkBytes = 1 << 20;

// Reads bytes [offset, offset + length) of `fd`, feeding each chunk to `sink`.
Status read_range(int fd, uint64_t offset, uint64_t length, const std::string& what,
                  const std::function<Status(std::string_view)>& sink) {
  // No larger than what is read: a log of a few bytes needs no megabyte cleared and faulted in.
  std::string buf(static_cast<size_t>(std::min<uint64_t>(kCopyChunkBytes, length)), '\0');
  uint64_t done = 0;
  while (done < length) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kCopyChunkBytes, length - done));
    ssize_t n = retry_eintr(
        [&] { return ::pread(fd, buf.data(), want, static_cast<off_t>(offset + done)); });
    if (n < 0) return Error::from_errno("read " + what);
    if (n == 0) break;  // shorter than fstat said: what was read is what is recorded
    SEALRUN_TRY(sink(std::string_view(buf.data(), static_cast<size_t>(n))));
    done += static_cast<uint64_t>(n);
  }
  return ok_status();
}

}  // namespace

Result<receipt::StreamRecord> summarise_stream(int dirfd, const std::string& path,
                                               uint64_t max_read) {
  auto fd = SEALRUN_TRY(open_at(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  auto st = SEALRUN_TRY(fstat_fd(fd.get(), path));
  if (!S_ISREG(st.st_mode)) return Error::make(path + " is not a regular file");
  receipt::StreamRecord r;
  r.size = static_cast<uint64_t>(st.st_size);
  uint64_t read = std::min(r.size, max_read);
  uint64_t start = r.size - read;
  Sha256 sha;
  std::string tail;
  SEALRUN_TRY(read_range(fd.get(), start, read, path, [&](std::string_view chunk) {
    sha.update(chunk);
    r.read_bytes += chunk.size();
    tail.append(chunk);
    if (tail.size() > 2 * receipt::kTailBytes) tail.erase(0, tail.size() - receipt::kTailBytes);
    return ok_status();
  }));
  r.sha256 = sha.finish_hex();
  r.cut = r.read_bytes < r.size;
  r.tail =
      tail.size() > receipt::kTailBytes ? tail.substr(tail.size() - receipt::kTailBytes) : tail;
  return r;
}

Result<uint64_t> keep_log_tail(int from_dirfd, const std::string& from, int to_dirfd,
                               const std::string& to, uint64_t max_bytes) {
  auto in = SEALRUN_TRY(open_at(from_dirfd, from, O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
  auto st = SEALRUN_TRY(fstat_fd(in.get(), from));
  if (!S_ISREG(st.st_mode)) return Error::make(from + " is not a regular file");
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t keep = std::min(size, max_bytes);
  auto out = SEALRUN_TRY(open_at(to_dirfd, to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  uint64_t copied = 0;
  SEALRUN_TRY(read_range(in.get(), size - keep, keep, from, [&](std::string_view chunk) {
    copied += chunk.size();
    return write_all(out.get(), chunk, to);
  }));
  return copied;
}

Status write_output_list(const StateDir& state, const std::string& results_root,
                         const std::vector<receipt::OutputRecord>& outputs) {
  // The receipt, written next into the same directory (results/<id>/receipt.json), fsyncs the
  // directory and so makes this rename durable too: one directory fsync for both. The list is
  // named by the receipt; without a receipt it is nothing anybody reads.
  return state
      .write_atomic(results_root + "/outputs.jsonl", receipt::output_list_bytes(outputs), 0644,
                    DirSync::kLater)
      .context("write the output list");
}

}  // namespace sealrun::run
