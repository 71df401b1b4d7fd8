// SPDX-License-Identifier: Apache-2.0
// core/json_field.h and core/bytes_text.h: the typed member reads the grant journal and the owned
// file system's record share (every wrong shape named, nothing thrown), and the one spelling of a
// byte count.
#include "core/json_field.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/bytes_text.h"

namespace sealrun {
namespace {

using nlohmann::json;

TEST(JsonField, ReadsEachTypeAndNamesEveryWrongShape) {
  const json doc = json::parse(R"({"s": "x", "n": 7, "neg": -1, "big": 4294967296, "f": 1.5,
                                   "list": ["a", "b"], "mixed": ["a", 1], "b": true})");
  EXPECT_EQ(*json_string_field(doc, "s"), "x");
  EXPECT_EQ(*json_uint_field(doc, "n"), 7u);
  EXPECT_EQ(*json_uint_field(json{{"n", 7}}, "n"), 7u);  // built in memory: signed, not negative
  EXPECT_EQ(*json_strings_field(doc, "list"), (std::vector<std::string>{"a", "b"}));
  // What each failed read says ("" if it did not fail).
  auto why = [](const auto& r) { return r.ok() ? std::string() : r.error().message(); };
  const std::pair<std::string, std::string> cases[] = {
      {why(json_string_field(doc, "gone")), "field 'gone' is missing"},
      {why(json_string_field(doc, "n")), "field 'n' is not a string"},
      {why(json_uint_field(doc, "s")), "field 's' is not an integer"},
      {why(json_uint_field(doc, "f")), "field 'f' is not an integer"},
      {why(json_uint_field(doc, "neg")), "field 'neg' is out of range (-1)"},
      {why(json_uint_field(doc, "big", INT32_MAX)), "field 'big' is out of range (4294967296)"},
      {why(json_strings_field(doc, "s")), "field 's' is not an array"},
      {why(json_strings_field(doc, "mixed")), "field 'mixed' holds a non-string"},
      {why(json_string_field(json::array(), "s")), "field 's': not in an object"},
  };
  for (const auto& [got, want] : cases) EXPECT_EQ(got, want);
}

TEST(BytesText, BinaryUnitsWithOneDecimal) {
  const std::pair<uint64_t, const char*> cases[] = {
      {0, "0 B"},
      {17, "17 B"},
      {1023, "1023 B"},
      {1024, "1.0 KiB"},
      {1536, "1.5 KiB"},
      {12u << 20, "12.0 MiB"},
      {3ull << 30, "3.0 GiB"},
      {5ull << 40, "5.0 TiB"},
      {2048ull << 40, "2048.0 TiB"},
  };
  for (const auto& [bytes, text] : cases) EXPECT_EQ(binary_size_text(bytes), text) << bytes;
}

}  // namespace
}  // namespace sealrun
