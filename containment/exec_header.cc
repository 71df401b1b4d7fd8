// SPDX-License-Identifier: Apache-2.0
// read_exec_header(): see exec_header.h. The ELF layout is the System V ABI's (Elf32/Elf64 file
// and program headers, either byte order); the bounds are those of Linux's binfmt_elf and
// binfmt_script.
#include "containment/exec_header.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/syscall.h"

namespace sealrun {

namespace {

constexpr size_t kScriptLineBytes = 256;  // BINPRM_BUF_SIZE
constexpr uint64_t kMaxProgramHeaderBytes = 65536;
constexpr uint64_t kMaxInterpreterBytes = 4096;  // PATH_MAX, with its NUL
constexpr uint32_t kPtInterp = 3;

// Exactly `len` bytes at `offset` into `*out`, or an error (a short read is an error: the header
// lies). (An out-parameter: GCC 12 warns falsely about a returned string's bytes.)
Status read_at(int fd, uint64_t offset, uint64_t len, uint64_t file_size, std::string* out) {
  if (offset > file_size || len > file_size - offset)
    return Error::make("its header points past the end of the file");
  std::string& buf = *out;
  buf.assign(static_cast<size_t>(len), '\0');
  size_t got = 0;
  while (got < buf.size()) {
    ssize_t n = retry_eintr([&] {
      return ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(offset + got));
    });
    if (n < 0) return Error::from_errno("read");
    if (n == 0) return Error::make("the file ended inside its header");
    got += static_cast<size_t>(n);
  }
  return ok_status();
}

// Little- or big-endian unsigned integer of `width` bytes at `at` in `b` (bounds checked by the
// callers: every header they read is read whole first).
uint64_t uint_at(std::string_view b, size_t at, size_t width, bool big_endian) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) {
    const auto byte = static_cast<uint8_t>(b[at + (big_endian ? i : width - 1 - i)]);
    v = (v << 8) | byte;
  }
  return v;
}

Result<ExecHeader> script_header(std::string_view head) {
  std::string_view line = head.substr(2);
  size_t nl = line.find('\n');
  if (nl == std::string_view::npos) {
    if (head.size() >= kScriptLineBytes)
      return Error::make("its #! line is longer than the kernel reads (256 bytes)");
  } else {
    line = line.substr(0, nl);
  }
  size_t start = line.find_first_not_of(" \t");
  if (start == std::string_view::npos) return Error::make("its #! line names no interpreter");
  line = line.substr(start);
  size_t end = line.find_first_of(std::string_view(" \t\0", 3));
  ExecHeader h;
  h.kind = ExecHeader::Kind::kScript;
  h.interpreter = std::string(line.substr(0, end));
  return h;
}

Result<ExecHeader> elf_header(int fd, std::string_view head, uint64_t file_size) {
  const bool is64 = head[4] == 2;
  if (head[4] != 1 && head[4] != 2) return Error::make("an ELF file of unknown class");
  if (head[5] != 1 && head[5] != 2) return Error::make("an ELF file of unknown byte order");
  const bool be = head[5] == 2;
  const size_t ehdr_size = is64 ? 64 : 52;
  if (head.size() < ehdr_size) return Error::make("the file ends inside its ELF header");
  const uint64_t phoff = uint_at(head, is64 ? 0x20 : 0x1c, is64 ? 8 : 4, be);
  const uint64_t phentsize = uint_at(head, is64 ? 0x36 : 0x2a, 2, be);
  const uint64_t phnum = uint_at(head, is64 ? 0x38 : 0x2c, 2, be);
  const uint64_t want_entsize = is64 ? 56 : 32;
  if (phentsize != want_entsize)
    return Error::make("its program headers are not of the size its ELF class says");
  if (phnum == 0 || phnum * phentsize > kMaxProgramHeaderBytes)
    return Error::make("it has no program headers, or more than 64 KiB of them");
  std::string ph;
  SEALRUN_TRY(read_at(fd, phoff, phnum * phentsize, file_size, &ph));
  ExecHeader h;
  h.kind = ExecHeader::Kind::kElf;
  for (uint64_t i = 0; i < phnum; ++i) {
    const size_t at = static_cast<size_t>(i * phentsize);
    if (uint_at(ph, at, 4, be) != kPtInterp) continue;
    const uint64_t offset = uint_at(ph, at + (is64 ? 8 : 4), is64 ? 8 : 4, be);
    const uint64_t size = uint_at(ph, at + (is64 ? 0x20 : 0x10), is64 ? 8 : 4, be);
    if (size < 2 || size > kMaxInterpreterBytes)
      return Error::make("its ELF interpreter's name is empty or longer than 4096 bytes");
    std::string name;
    SEALRUN_TRY(read_at(fd, offset, size, file_size, &name));
    if (name.back() != '\0') return Error::make("its ELF interpreter's name does not end in NUL");
    name.resize(name.find('\0'));
    if (name.empty()) return Error::make("its ELF interpreter's name is empty");
    h.interpreter = std::move(name);
    return h;  // the kernel uses the first PT_INTERP
  }
  return h;  // static
}

}  // namespace

Result<ExecHeader> read_exec_header(int fd) {
  auto st = SEALRUN_TRY(fstat_fd(fd, "the executable"));
  if (!S_ISREG(st.st_mode)) return Error::make("not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  const uint64_t want = std::min<uint64_t>(size, kScriptLineBytes);
  std::string head;
  SEALRUN_TRY(read_at(fd, 0, want, size, &head));
  if (head.size() >= 2 && head[0] == '#' && head[1] == '!') return script_header(head);
  if (head.size() >= 16 && head.compare(0, 4,
                                        "\x7f"
                                        "ELF") == 0)
    return elf_header(fd, head, size);
  return ExecHeader{};
}

}  // namespace sealrun
