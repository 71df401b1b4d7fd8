// SPDX-License-Identifier: Apache-2.0
// Unit tests of the strict JSON reader on hostile bytes: duplicates, depth bombs, NUL, invalid
// UTF-8, truncation. Each refusal must name where it happened.
#include "core/strict_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "admission/document.h"

namespace sealrun::admission {
namespace {

struct BadBytes {
  const char* name;
  std::string bytes;
  const char* message;
};

void PrintTo(const BadBytes& b, std::ostream* os) { *os << b.name; }

class StrictJsonRejects : public ::testing::TestWithParam<BadBytes> {};

TEST_P(StrictJsonRejects, WithAMessageThatSaysWhere) {
  auto r = parse_strict_json(GetParam().bytes);
  ASSERT_FALSE(r.ok()) << "accepted: " << GetParam().name;
  EXPECT_NE(r.error().message().find(GetParam().message), std::string::npos) << r.error().message();
}

const BadBytes kBad[] = {
    {"duplicate_top", R"({"schema":"a","schema":"b"})", "schema: duplicate key"},
    {"duplicate_nested", R"({"limits":{"pids_max":1,"pids_max":2}})",
     "limits.pids_max: duplicate key"},
    {"duplicate_in_array", R"({"host_tools":[{"path":"/a"},{"path":"/b","path":"/c"}]})",
     "host_tools[1].path: duplicate key"},
    {"duplicate_after_object", R"({"a":{"x":1},"a":{"y":2}})", "a: duplicate key"},
    {"nul_escape", R"({"command":{"argv":["a\u0000b"]}})",
     "command.argv[0]: string contains a NUL character"},
    {"nul_in_key", R"({"a\u0000":1})", "key contains a NUL character"},
    {"raw_nul", std::string("{\"a\":\"x\0y\"}", 11), "a: malformed JSON"},
    {"invalid_utf8", "{\"command\":{\"cwd\":\"/s\xC3\x28\"}}", "command.cwd: invalid UTF-8"},
    {"overlong_utf8", "{\"a\":\"\xC0\xAF\"}", "a: invalid UTF-8"},
    {"truncated", R"({"schema":"sealrun-admission-v1","command":{"argv":["/bin/)",
     "truncated document"},
    {"truncated_after_key", R"({"limits":{"pids_max":)", "truncated document"},
    {"empty", "", "truncated document"},
    {"trailing_garbage", R"({"a":1} {"b":2})", "malformed JSON"},
    {"comment", "{\"a\":1 /* hi */}", "malformed JSON"},
    {"deep_arrays", std::string(100000, '['),
     "document: nested deeper than 32 levels (at [0][0][0]"},
    {"deep_objects",
     [] {
       std::string s;
       for (int i = 0; i < 100000; ++i) s += "{\"a\":";
       return s;
     }(),
     "nested deeper than 32 levels"},
};

INSTANTIATE_TEST_SUITE_P(Table, StrictJsonRejects, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(StrictJson, DepthBombIsRefusedQuickly) {
  // 100,000 levels: nlohmann's own DOM parser would recurse and allocate per level; the SAX depth
  // check stops at level 33, so this costs microseconds whatever the length.
  for (char open : {'[', '{'}) {
    std::string bomb;
    for (int i = 0; i < 100000; ++i) bomb += open == '[' ? "[" : "{\"k\":";
    auto start = std::chrono::steady_clock::now();
    auto r = parse_strict_json(bomb);
    auto elapsed = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(r.ok());
    EXPECT_LT(elapsed, std::chrono::milliseconds(250)) << "depth bomb took too long";
  }
  // And a full admission-sized one (1 MiB of '[') through the admission entry point.
  std::string mib(kMaxAdmissionBytes, '[');
  auto start = std::chrono::steady_clock::now();
  auto doc = parse_admission_bytes(mib);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.error().message().find("nested deeper"), std::string::npos);
}

TEST(StrictJson, AcceptsWhatIsFine) {
  auto r = parse_strict_json(R"({"b":[1,2,{"c":null}],"a":"\u00e9t\u00e9","d":-3,"e":1.5})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)["a"], "\xC3\xA9t\xC3\xA9");
  EXPECT_EQ((*r)["b"][2]["c"], nullptr);
  // Exactly at the depth limit is fine; one more level is not.
  std::string at_limit = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_strict_json(at_limit).ok());
  std::string over = "[" + at_limit + "]";
  EXPECT_FALSE(parse_strict_json(over).ok());
  // Equal keys in different objects are not duplicates.
  EXPECT_TRUE(parse_strict_json(R"({"a":{"x":1},"b":{"x":1}})").ok());
}

TEST(StrictJson, ParserMessagesDoNotEchoRawBytes) {
  auto r = parse_strict_json("{\"a\":\"\xFF\x01\"}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message().find('\xFF'), std::string::npos);
}

TEST(StrictJson, MessagesNeutraliseTerminalEscapes) {
  // A key carrying an ANSI escape and a newline must not reach a terminal raw.
  auto r = parse_strict_json("{\"\\u001b[2J\\nx\":1,\"\\u001b[2J\\nx\":2}");
  ASSERT_FALSE(r.ok());
  std::string m = r.error().message();
  EXPECT_EQ(m.find('\x1b'), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("\\x1b[2J\\x0ax: duplicate key"), std::string::npos) << m;
  auto doc = parse_admission_bytes("{\"\\u001b]0;pwned\\u0007\":1}");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.error().message().find('\x1b'), std::string::npos);
  // Long text is cut at a character boundary: never half of a UTF-8 sequence.
  std::string long_text(399, 'a');
  long_text += "\xC3\xA9tail";
  std::string shown = printable_text(long_text, 400);
  EXPECT_EQ(shown.substr(0, 399), std::string(399, 'a'));
  EXPECT_EQ(shown.substr(399, 3), "...");
}

}  // namespace
}  // namespace sealrun::admission
