// Reading a cgroup memory counter: see memory_usage.h.
#include "census/memory_usage.h"

#include <unistd.h>

#include <cstdint>
#include <memory>

#include "core/syscall.h"

namespace sealrun::census {

std::optional<uint64_t> read_counter_file(int fd) {
  char buf[32];
  // cgroup files are seq files: a read at offset 0 renders the value afresh.
  ssize_t n = retry_eintr([&] { return ::pread(fd, buf, sizeof buf, 0); });
  if (n <= 0) return std::nullopt;
  uint64_t value = 0;
  ssize_t i = 0;
  for (; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) {
    uint64_t digit = static_cast<uint64_t>(buf[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  if (i == 0 || (i < n && buf[i] != '\n')) return std::nullopt;
  return value;
}

std::function<std::optional<uint64_t>()> counter_reader(std::function<Result<UniqueFd>()> open) {
  auto fd = std::make_shared<UniqueFd>();
  return [fd, open = std::move(open)]() -> std::optional<uint64_t> {
    if (!*fd) {
      auto opened = open();
      if (!opened) return std::nullopt;
      *fd = std::move(*opened);
    }
    return read_counter_file(fd->get());
  };
}

}  // namespace sealrun::census
