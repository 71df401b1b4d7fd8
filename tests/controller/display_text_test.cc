// SPDX-License-Identifier: Apache-2.0
// Escaping what a job chose (names, tails) before a person sees it
// (controller/common/display_text.h), and `receipt show` built on it
// (controller/receipt/receipt_review.cc; `receipt diff` has receipt_diff_test.cc).
#include "controller/common/display_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "controller/receipt/receipt.h"
#include "controller/receipt/receipt_review.h"

namespace sealrun::display {
namespace {

TEST(DisplayText, EscapesEverythingATerminalActsOn) {
  struct Case {
    std::string in, out;
  } cases[] = {
      {"plain name.txt", "plain name.txt"},
      {"caf\xc3\xa9", "caf\xc3\xa9"},  // valid UTF-8 passes
      {"a\nb", "a\\nb"},
      {"a\rb\tc", "a\\rb\\tc"},
      {"esc\033[31mred", "esc\\x1b[31mred"},
      {"del\x7f", "del\\x7f"},
      {"bell\a", "bell\\x07"},
      {"back\\slash", "back\\\\slash"},
      {"a\377", "a\\xff"},
      {"a\376", "a\\xfe"},
      {"a\357\277\275", "a\357\277\275"},  // U+FFFD is a character like any other
      {"csi\xc2\x9b"
       "2J",
       "csi\\u009b2J"},  // C1 CSI
      {"rtl\xe2\x80\xae"
       "gnp.exe",
       "rtl\\u202egnp.exe"},                       // RIGHT-TO-LEFT OVERRIDE
      {"ls\xe2\x80\xa8x", "ls\\u2028x"},           // LINE SEPARATOR
      {"over\xc0\xaflong", "over\\xc0\\xaflong"},  // overlong '/'
      {"surrogate\xed\xa0\x80", "surrogate\\xed\\xa0\\x80"},
  };
  for (const auto& c : cases) EXPECT_EQ(escape(c.in), c.out) << c.in;
}

TEST(DisplayText, DifferentNamesStayDifferent) {
  // A literal backslash-x sequence and the byte it spells do not look alike.
  EXPECT_NE(escape("a\\xff"), escape("a\377"));
  EXPECT_NE(escape("a\377"), escape("a\376"));
}

TEST(DisplayText, CutStopsAtACharacter) {
  EXPECT_EQ(escape_cut("abcdef", 3), "abc…");
  EXPECT_EQ(escape_cut("ab\n", 3), "ab…");  // "\n" would take two bytes
  EXPECT_EQ(escape_cut("ab", 3), "ab");
}

TEST(DisplayText, EveryLineOfATailIsPrefixed) {
  EXPECT_EQ(indent_lines("one\ntwo\033[2J\n", "  | "), "  | one\n  | two\\x1b[2J\n");
  EXPECT_EQ(indent_lines("a\r\nb", "> "), "> a\\r\n> b\n");
}

TEST(DisplayText, JsonStaysJsonAndLosesItsControls) {
  nlohmann::json j = "x\xc2\x9b\x7f\xe2\x80\xaey\n";
  std::string safe = json_for_terminal(j.dump());
  EXPECT_EQ(safe, R"("x\u009b\u007f\u202ey\n")");
  EXPECT_EQ(nlohmann::json::parse(safe), j);  // the same value
}

receipt::Receipt failed_receipt() {
  receipt::Receipt r;
  r.id = "show";
  r.state = "failed";
  r.exit = 5;
  r.reason = "the job ended with exit 2";
  r.verifications.push_back({"toolchain.tree_sha256 (after the run)", "aa", "bb", false});
  receipt::CommandRecord c;
  c.label = "job";
  c.exit = 2;
  c.stderr_record.tail = "make: entering\nmkdir: cannot create directory 'build'\n\033[2Jgone\n";
  c.stderr_record.size = 80;
  r.commands.push_back(c);
  r.outputs.push_back({"x\nfake line", 1, std::string(64, 'c')});
  receipt::OutputRecord link;
  link.path = "l\377";
  link.kind = receipt::OutputKind::kSymlink;
  link.target = "\033]0;title\a";
  r.outputs.push_back(link);
  r.outputs_recorded = true;
  r.stop_confirmed = true;
  return r;
}

TEST(ReceiptShow, WhatFailedComesFirstWithTheStderrTailEscaped) {
  auto doc = nlohmann::json::parse(receipt::render_receipt(failed_receipt(), 1 << 20));
  std::string text = receipt::summary_text(doc);
  EXPECT_EQ(text.find('\033'), std::string::npos) << text;
  EXPECT_EQ(text.find('\a'), std::string::npos) << text;
  size_t failed = text.find("what failed:");
  size_t details = text.find("details:");
  ASSERT_NE(failed, std::string::npos) << text;
  ASSERT_NE(details, std::string::npos) << text;
  EXPECT_LT(failed, details);
  EXPECT_NE(text.find("verification FAILED toolchain.tree_sha256"), std::string::npos) << text;
  EXPECT_NE(text.find("    | mkdir: cannot create directory 'build'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    | \\x1b[2Jgone\n"), std::string::npos) << text;
  EXPECT_LT(text.find("mkdir: cannot"), details);
  // The output named "x\nfake line" is one line, and the raw byte of "l\377" shows as \xff.
  EXPECT_EQ(text.find("\nfake line"), std::string::npos) << text;
  EXPECT_NE(text.find("x\\nfake line"), std::string::npos) << text;
  EXPECT_NE(text.find("l\\xff -> \\x1b]0;title\\x07 (symlink)"), std::string::npos) << text;
}

}  // namespace
}  // namespace sealrun::display
