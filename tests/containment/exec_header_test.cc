// SPDX-License-Identifier: Apache-2.0
// read_exec_header() (containment/exec_header.h): the ELF interpreter of 32- and 64-bit files of
// either byte order, a static executable, `#!` lines; and hostile files — headers that point past
// the end, program headers of the wrong size or too many, an interpreter name too long, empty or
// without its NUL, a `#!` line longer than the kernel reads — each an error, never a guess.
#include "containment/exec_header.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/syscall.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

struct Phdr {
  uint32_t type;
  uint64_t offset, filesz;
};

void put(std::string& b, size_t at, uint64_t v, size_t width, bool be) {
  if (b.size() < at + width) b.resize(at + width, '\0');
  for (size_t i = 0; i < width; ++i) {
    size_t shift = 8 * (be ? width - 1 - i : i);
    b[at + i] = static_cast<char>((v >> shift) & 0xff);
  }
}

// An ELF file: its header, program headers at `phoff` (default: right after the header), then
// `tail` at `tail_at`. `phentsize`/`phnum` override what the class and `ph` say.
struct Elf {
  bool is64 = true, be = false;
  std::vector<Phdr> ph;
  std::string tail;
  uint64_t tail_at = 0x200;
  int64_t phoff = -1, phentsize = -1, phnum = -1;
  uint64_t phoff_field = 0;  // non-zero: the header says this, the headers stay where they are

  std::string bytes() const {
    std::string b =
        "\x7f"
        "ELF";
    b.resize(is64 ? 64 : 52, '\0');
    b[4] = is64 ? 2 : 1;
    b[5] = be ? 2 : 1;
    b[6] = 1;
    const uint64_t ent = is64 ? 56 : 32;
    const uint64_t off = phoff >= 0 ? static_cast<uint64_t>(phoff) : b.size();
    put(b, is64 ? 0x20 : 0x1c, phoff_field != 0 ? phoff_field : off, is64 ? 8 : 4, be);
    put(b, is64 ? 0x36 : 0x2a, phentsize >= 0 ? static_cast<uint64_t>(phentsize) : ent, 2, be);
    put(b, is64 ? 0x38 : 0x2c, phnum >= 0 ? static_cast<uint64_t>(phnum) : ph.size(), 2, be);
    for (size_t i = 0; i < ph.size(); ++i) {
      const size_t at = static_cast<size_t>(off + i * ent);
      put(b, at, ph[i].type, 4, be);
      put(b, at + (is64 ? 8 : 4), ph[i].offset, is64 ? 8 : 4, be);
      put(b, at + (is64 ? 0x20 : 0x10), ph[i].filesz, is64 ? 8 : 4, be);
      if (b.size() < at + ent) b.resize(at + ent, '\0');
    }
    if (!tail.empty()) {
      if (b.size() < tail_at) b.resize(tail_at, '\0');
      b.replace(tail_at, tail.size(), tail);
    }
    return b;
  }
};

const std::string kLoader = "/lib64/ld-linux-x86-64.so.2";

Elf with_interp(bool is64, bool be, const std::string& name = kLoader) {
  Elf e;
  e.is64 = is64;
  e.be = be;
  e.ph = {{6, 0, 0}, {3, 0x200, name.size() + 1}, {1, 0, 0}};
  e.tail = name + std::string(1, '\0');
  return e;
}

class ExecHeaderTest : public ::testing::Test {
 protected:
  Result<ExecHeader> read(const std::string& bytes) {
    const std::string path = dir_ / ("f" + std::to_string(n_++));
    sealrun::testing::write_text(path, bytes);
    auto fd = open_at(AT_FDCWD, path, O_RDONLY);
    EXPECT_TRUE(fd.ok());
    return read_exec_header(fd->get());
  }
  sealrun::testing::TempDir dir_;
  int n_ = 0;
};

TEST_F(ExecHeaderTest, ReadsTheInterpreterOfEveryClassAndByteOrder) {
  for (bool is64 : {true, false})
    for (bool be : {false, true}) {
      auto h = read(with_interp(is64, be).bytes());
      ASSERT_TRUE(h.ok()) << is64 << be << h.error().message();
      EXPECT_EQ(h->kind, ExecHeader::Kind::kElf);
      EXPECT_EQ(h->interpreter, kLoader) << is64 << be;
    }
}

TEST_F(ExecHeaderTest, AStaticExecutableNamesNone) {
  Elf e;
  e.ph = {{1, 0, 0}, {4, 0, 0}};
  auto h = read(e.bytes());
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(h->kind, ExecHeader::Kind::kElf);
  EXPECT_EQ(h->interpreter, "");
}

TEST_F(ExecHeaderTest, TheHostsShellNamesItsLoader) {
  auto fd = open_at(AT_FDCWD, "/usr/bin/dash", O_RDONLY);
  ASSERT_TRUE(fd.ok());
  auto h = read_exec_header(fd->get());
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(h->kind, ExecHeader::Kind::kElf);
  EXPECT_EQ(h->interpreter.rfind("/lib", 0), 0u) << h->interpreter;
}

TEST_F(ExecHeaderTest, ScriptLines) {
  struct Case {
    std::string bytes, interpreter;
  };
  for (const Case& c : std::vector<Case>{{"#!/bin/sh\necho\n", "/bin/sh"},
                                         {"#!/bin/sh -e\n", "/bin/sh"},
                                         {"#! \t/usr/bin/env python3\n", "/usr/bin/env"},
                                         {"#!/bin/bash", "/bin/bash"}}) {
    auto h = read(c.bytes);
    ASSERT_TRUE(h.ok()) << c.bytes << h.error().message();
    EXPECT_EQ(h->kind, ExecHeader::Kind::kScript) << c.bytes;
    EXPECT_EQ(h->interpreter, c.interpreter) << c.bytes;
  }
}

TEST_F(ExecHeaderTest, NeitherIsOther) {
  for (const std::string& bytes : {std::string(), std::string("plain text\n"),
                                   std::string("\x7f"
                                               "EL"),
                                   std::string("#")}) {
    auto h = read(bytes);
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_EQ(h->kind, ExecHeader::Kind::kOther);
  }
}

TEST_F(ExecHeaderTest, HostileFilesAreErrors) {
  std::vector<std::pair<std::string, std::string>> cases;
  cases.emplace_back("cut inside the ELF header", with_interp(true, false).bytes().substr(0, 40));
  {
    Elf e = with_interp(true, false);
    e.phoff_field = 1ull << 40;
    cases.emplace_back("program headers past the end", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.phentsize = 32;
    cases.emplace_back("program headers of the wrong size", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.phnum = 0xffff;
    cases.emplace_back("more than 64 KiB of program headers", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.phnum = 0;
    cases.emplace_back("no program headers", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.ph[1].offset = 1ull << 62;
    cases.emplace_back("interpreter past the end", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.ph[1].filesz = 1ull << 40;
    cases.emplace_back("interpreter name of 1 TiB", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.ph[1].filesz = 5000;
    e.tail = std::string(5000, 'a');
    cases.emplace_back("interpreter name over 4096 bytes", e.bytes());
  }
  {
    Elf e = with_interp(true, false);
    e.tail = kLoader + "X";  // the segment's last byte is not NUL
    cases.emplace_back("interpreter name without its NUL", e.bytes());
  }
  {
    Elf e = with_interp(true, false, "");
    e.ph[1].filesz = 2;
    e.tail = std::string(2, '\0');
    cases.emplace_back("empty interpreter name", e.bytes());
  }
  {
    std::string b = with_interp(true, false).bytes().substr(0, 0x200 + 3);  // cut in the name
    cases.emplace_back("file ends inside the interpreter name", b);
  }
  {
    std::string b =
        "\x7f"
        "ELF";
    b.resize(64, '\0');
    b[4] = 3;
    cases.emplace_back("unknown class", b);
  }
  cases.emplace_back("#! line longer than 256 bytes", "#!/" + std::string(300, 'a'));
  cases.emplace_back("#! line naming nothing", "#!   \nrest\n");
  for (const auto& [what, bytes] : cases) {
    auto h = read(bytes);
    EXPECT_FALSE(h.ok()) << what << ": read as " << (h ? h->interpreter : "");
  }
}

TEST_F(ExecHeaderTest, ADirectoryIsRefused) {
  auto fd = open_at(AT_FDCWD, dir_.str(), O_RDONLY | O_DIRECTORY);
  ASSERT_TRUE(fd.ok());
  EXPECT_FALSE(read_exec_header(fd->get()).ok());
}

}  // namespace
}  // namespace sealrun
