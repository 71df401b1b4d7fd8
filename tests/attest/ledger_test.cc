// SPDX-License-Identifier: Apache-2.0
// The ledger: appends chain correctly (checked against a hand computation), and every tampering
// of issue 11 fails verification naming the first bad line — a deleted, reordered, edited or
// duplicated line, a torn last line (which append also refuses to extend).
#include "attest/ledger.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <vector>

#include "attest/openssl_util.h"
#include "tests/support/temp_dir.h"

namespace sealrun::attest {
namespace {

using sealrun::testing::read_text;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

std::string hex_of(char c) { return std::string(64, c); }

class LedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fd = open_state_dir(state_.str());
    ASSERT_TRUE(fd);
    dirfd_ = std::move(*fd);
  }
  Result<LedgerEntry> append(const std::string& id, const std::string& state = "built",
                             char digest = 'a', const std::string& at = "") {
    return append_to_ledger(dirfd_.get(), {id, state, hex_of(digest), at});
  }
  void append_n(int n) {
    const char* states[] = {"built", "failed", "not_run"};
    for (int i = 1; i <= n; ++i) {
      auto e = append("run-" + std::to_string(i), states[i % 3], static_cast<char>('a' + i % 6),
                      "2026-01-0" + std::to_string(i % 9 + 1) + "T00:00:00.000Z");
      ASSERT_TRUE(e) << e.error().message();
    }
  }
  std::vector<std::string> lines() {
    std::vector<std::string> out;
    std::istringstream in(read_text(path()));
    for (std::string l; std::getline(in, l);) out.push_back(l + "\n");
    return out;
  }
  void write_lines(const std::vector<std::string>& ls) {
    std::string all;
    for (const auto& l : ls) all += l;
    write_text(path(), all);
  }
  LedgerReport verify() {
    auto r = verify_ledger(dirfd_.get());
    EXPECT_TRUE(r) << r.error().message();
    return r ? *r : LedgerReport{};
  }
  void expect_bad(uint64_t line, const std::string& why) {
    auto r = verify();
    EXPECT_FALSE(r.ok());
    ASSERT_TRUE(r.first_problem.has_value());
    EXPECT_EQ(r.first_problem->line, line) << r.first_problem->what;
    EXPECT_NE(r.first_problem->what.find(why), std::string::npos) << r.first_problem->what;
  }
  std::string path() { return state_ / "ledger.jsonl"; }
  TempDir state_;
  UniqueFd dirfd_;
};

TEST_F(LedgerTest, AppendChainsLinesExactlyAsDocumented) {
  auto first = append("run-1", "built", 'a', "2026-01-02T03:04:05.678Z");
  ASSERT_TRUE(first) << first.error().message();
  EXPECT_EQ(first->seq, 1u);
  EXPECT_EQ(first->prev_sha256, std::string(64, '0'));
  auto second = append("run-2", "failed", 'b', "2026-01-02T03:04:06.000Z");
  ASSERT_TRUE(second);
  auto ls = lines();
  ASSERT_EQ(ls.size(), 2u);
  // docs/ledger.md: canonical compact JSON, keys sorted; prev_sha256 covers the line with "\n".
  EXPECT_EQ(ls[0], "{\"at\":\"2026-01-02T03:04:05.678Z\",\"id\":\"run-1\",\"prev_sha256\":\"" +
                       std::string(64, '0') + "\",\"receipt_sha256\":\"" + hex_of('a') +
                       "\",\"seq\":1,\"state\":\"built\"}\n");
  EXPECT_EQ(second->prev_sha256, sha256_hex_of(ls[0]));
  EXPECT_EQ(second->seq, 2u);
  auto r = verify();
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.lines, 2u);
  EXPECT_EQ(r.head_seq, 2u);
  EXPECT_EQ(r.head_sha256, sha256_hex_of(ls[1]));
}

TEST_F(LedgerTest, DefaultTimestampIsNowInUtc) {
  auto e = append("run-1");
  ASSERT_TRUE(e);
  EXPECT_TRUE(is_ledger_timestamp(e->at)) << e->at;
}

TEST_F(LedgerTest, DeletedLineFails) {
  append_n(5);
  auto ls = lines();
  ls.erase(ls.begin() + 2);  // line 3
  write_lines(ls);
  expect_bad(3, "seq is 4, expected 3");
}

TEST_F(LedgerTest, DeletedFirstLineFails) {
  append_n(3);
  auto ls = lines();
  ls.erase(ls.begin());
  write_lines(ls);
  expect_bad(1, "seq is 2, expected 1");
}

TEST_F(LedgerTest, DeletedLineWithSeqRewrittenStillFails) {
  // A careful forger renumbers the lines after the deleted one; the hashes still break.
  append_n(4);
  auto ls = lines();
  ls.erase(ls.begin() + 1);
  auto e = parse_ledger_line(ls[1].substr(0, ls[1].size() - 1));
  ASSERT_TRUE(e);
  e->seq = 2;
  ls[1] = format_ledger_line(*e);
  write_lines(ls);
  expect_bad(2, "prev_sha256 does not match the SHA-256 of line 1");
}

TEST_F(LedgerTest, ReorderedLinesFail) {
  append_n(4);
  auto ls = lines();
  std::swap(ls[1], ls[2]);
  write_lines(ls);
  expect_bad(2, "seq is 3, expected 2");
}

TEST_F(LedgerTest, EditedLineFailsAtTheNextLine) {
  append_n(4);
  auto ls = lines();
  // failed -> built on line 2, spelled canonically: only the chain can tell.
  auto e = parse_ledger_line(ls[1].substr(0, ls[1].size() - 1));
  ASSERT_TRUE(e);
  e->state = e->state == "built" ? "failed" : "built";
  ls[1] = format_ledger_line(*e);
  write_lines(ls);
  expect_bad(3, "that line was edited");
}

TEST_F(LedgerTest, EditedLineInAnotherSpellingFailsAtThatLine) {
  append_n(3);
  auto ls = lines();
  ls[1].replace(ls[1].find("\"seq\":2"), 7, "\"seq\": 2");
  write_lines(ls);
  expect_bad(2, "not in canonical form");
}

TEST_F(LedgerTest, DuplicatedLineFails) {
  append_n(3);
  auto ls = lines();
  ls.insert(ls.begin() + 2, ls[1]);
  write_lines(ls);
  expect_bad(3, "seq is 2, expected 3");
}

TEST_F(LedgerTest, GarbageLineFails) {
  append_n(2);
  auto ls = lines();
  ls.insert(ls.begin() + 1, "not json\n");
  write_lines(ls);
  expect_bad(2, "malformed JSON");
  ls[1] = std::string(3000, 'x') + "\n";
  write_lines(ls);
  expect_bad(2, "longer than 1024 bytes");
}

TEST_F(LedgerTest, TornLastLineIsReportedAndNeverExtended) {
  append_n(3);
  std::string whole = read_text(path());
  std::string next = format_ledger_line(
      {4, "run-4", "built", hex_of('c'), hex_of('d'), "2026-01-01T00:00:00.000Z"});
  std::string torn = whole + next.substr(0, 40);  // a crash mid-append
  write_text(path(), torn);

  auto r = verify();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lines, 3u);
  EXPECT_EQ(r.torn_bytes, 40u);
  ASSERT_TRUE(r.first_problem);
  EXPECT_EQ(r.first_problem->line, 4u);
  EXPECT_NE(r.first_problem->what.find("incomplete: 40 bytes without a newline"),
            std::string::npos);

  auto e = append("run-5");
  ASSERT_FALSE(e);
  EXPECT_NE(
      e.error().message().find("the last line is incomplete (40 bytes after the last newline"),
      std::string::npos)
      << e.error().message();
  EXPECT_EQ(read_text(path()), torn);  // nothing changed

  auto removed = remove_torn_tail(dirfd_.get());
  ASSERT_TRUE(removed) << removed.error().message();
  EXPECT_EQ(*removed, next.substr(0, 40));
  EXPECT_EQ(read_text(path()), whole);
  EXPECT_TRUE(verify().ok());
  auto after = append("run-5");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->seq, 4u);
  EXPECT_TRUE(verify().ok());
}

TEST_F(LedgerTest, LastLineThatDoesNotParseStopsAppend) {
  append_n(1);
  write_text(path(), read_text(path()) + "{\"seq\":2}\n");
  auto e = append("run-2");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find("the last line does not parse; nothing was appended"),
            std::string::npos)
      << e.error().message();
}

TEST_F(LedgerTest, AppendRefusesMalformedInputAndWritesNothing) {
  const LedgerAppend bad[] = {
      {"../x", "built", hex_of('a'), ""},
      {"run", "success", hex_of('a'), ""},
      {"run", "built", "ABC", ""},
      {"run", "built", hex_of('a'), "yesterday"},
  };
  for (const auto& in : bad) {
    auto e = append_to_ledger(dirfd_.get(), in);
    EXPECT_FALSE(e) << in.id << " " << in.state;
  }
  EXPECT_FALSE(std::filesystem::exists(path()));
}

TEST_F(LedgerTest, MissingLedger) {
  auto r = verify_ledger(dirfd_.get());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().err(), ENOENT);
  auto list = list_ledger(dirfd_.get(), {});
  ASSERT_TRUE(list);
  EXPECT_TRUE(list->entries.empty());
  EXPECT_TRUE(list->report.ok());
}

TEST_F(LedgerTest, ListFiltersByStateSinceAndId) {
  ASSERT_TRUE(append("a", "built", 'a', "2026-01-01T00:00:00.000Z"));
  ASSERT_TRUE(append("b", "failed", 'b', "2026-02-01T00:00:00.000Z"));
  ASSERT_TRUE(append("c", "built", 'c', "2026-03-01T12:00:00.500Z"));
  ASSERT_TRUE(append("a", "not_run", 'd', "2026-03-02T00:00:00.000Z"));
  auto ids = [&](const LedgerFilter& f) {
    auto l = list_ledger(dirfd_.get(), f);
    EXPECT_TRUE(l);
    std::string out;
    for (const auto& e : l->entries) out += e.id + std::to_string(e.seq) + " ";
    return out;
  };
  EXPECT_EQ(ids({}), "a1 b2 c3 a4 ");
  EXPECT_EQ(ids({"built", std::nullopt, std::nullopt}), "a1 c3 ");
  // 2026-03-01T12:00:00Z = 1772366400.
  EXPECT_EQ(ids({std::nullopt, 1772366400, std::nullopt}), "c3 a4 ");
  EXPECT_EQ(ids({std::nullopt, 1772366401, std::nullopt}), "a4 ");
  EXPECT_EQ(ids({std::nullopt, std::nullopt, "a"}), "a1 a4 ");
}

TEST_F(LedgerTest, ListStillShowsReadableEntriesOfABrokenChain) {
  append_n(4);
  auto ls = lines();
  ls.erase(ls.begin() + 1);
  write_lines(ls);
  auto l = list_ledger(dirfd_.get(), {});
  ASSERT_TRUE(l);
  EXPECT_EQ(l->entries.size(), 3u);
  EXPECT_FALSE(l->report.ok());
  EXPECT_EQ(l->report.first_problem->line, 2u);
}

TEST_F(LedgerTest, ConcurrentAppendersKeepOneChain) {
  // Four processes append 25 lines each at once: the flock serialises them.
  std::vector<pid_t> kids;
  for (int p = 0; p < 4; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 25; ++i)
        if (!append_to_ledger(dirfd_.get(), {"p" + std::to_string(p) + "-" + std::to_string(i),
                                             "built", hex_of('e'), ""}))
          ::_exit(1);
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto r = verify();
  EXPECT_TRUE(r.ok()) << (r.first_problem ? r.first_problem->what : "");
  EXPECT_EQ(r.lines, 100u);
  EXPECT_EQ(r.head_seq, 100u);
}

}  // namespace
}  // namespace sealrun::attest
