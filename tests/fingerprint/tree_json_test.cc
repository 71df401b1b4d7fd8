// SPDX-License-Identifier: Apache-2.0
// The canonical spelling of semantic-tree-v1 records: strict UTF-8 detection, base64 that
// round-trips every byte and accepts only its canonical form, and one escape per special byte.
#include "fingerprint/tree_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace sealrun::tree_json {
namespace {

TEST(TreeJson, Utf8Validity) {
  struct Case {
    std::string bytes;
    bool valid;
  };
  const Case cases[] = {
      {"", true},
      {"plain/ascii.txt", true},
      {"caf\xc3\xa9", true},           // é
      {"\xe2\x82\xac", true},          // €
      {"\xf0\x9f\x98\x80", true},      // U+1F600
      {"\xff", false},                 // never valid
      {"\xc3", false},                 // truncated
      {"\xc0\xaf", false},             // overlong '/'
      {"\xe0\x80\xaf", false},         // overlong '/'
      {"\xed\xa0\x80", false},         // surrogate U+D800
      {"\xf4\x90\x80\x80", false},     // above U+10FFFF
      {"\x80", false},                 // lone continuation
      {std::string("a\0b", 3), true},  // NUL is valid UTF-8 (escaped by the writer)
  };
  for (const auto& c : cases) EXPECT_EQ(is_valid_utf8(c.bytes), c.valid) << c.bytes;
}

TEST(TreeJson, Base64RoundTripsEveryByteValue) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t len = 0; len <= all.size(); len += 37) {
    std::string s = all.substr(0, len);
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
  }
  EXPECT_EQ(base64_encode("\xff"), "/w==");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
}

TEST(TreeJson, Base64DecodeAcceptsOnlyCanonicalText) {
  EXPECT_FALSE(base64_decode("Zm8").has_value());       // not a multiple of 4
  EXPECT_FALSE(base64_decode("Zm9=").has_value());      // non-zero padding bits
  EXPECT_FALSE(base64_decode("Z=8=").has_value());      // data after padding
  EXPECT_FALSE(base64_decode("Zm8=Zm8=").has_value());  // padding before the end
  EXPECT_FALSE(base64_decode("Zm-v").has_value());      // not the standard alphabet
}

TEST(TreeJson, StringEscapesExactlyQuoteBackslashAndControlBytes) {
  std::string out;
  append_string(out, std::string("a\"b\\c\n\t\x01\x7f\xc3\xa9/", 12));
  EXPECT_EQ(out, std::string("\"a\\\"b\\\\c\\u000a\\u0009\\u0001\x7f\xc3\xa9/\""));
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(),
            std::string("a\"b\\c\n\t\x01\x7f\xc3\xa9/", 12));
}

TEST(TreeJson, StringEscapesAtTheEdgesAndInRuns) {
  // Plain bytes are appended a run at a time: escapes first, last, back to back, and alone.
  const std::string text(
      "\"\"a\\\x1f\x1f"
      "bc\"",
      9);
  std::string out;
  append_string(out, text);
  EXPECT_EQ(out, "\"\\\"\\\"a\\\\\\u001f\\u001fbc\\\"\"");
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), text);
  out.clear();
  append_string(out, "");
  EXPECT_EQ(out, "\"\"");
  out.clear();
  append_string(out, "\\");
  EXPECT_EQ(out, "\"\\\\\"");
}

TEST(TreeJson, UintFieldIsPlainDecimalUpToTheLargest) {
  std::string out;
  append_uint_field(out, "bytes", 0);
  EXPECT_EQ(out, R"("bytes":0)");
  out.clear();
  append_uint_field(out, "uid", 4294967295u);
  EXPECT_EQ(out, R"("uid":4294967295)");
  out.clear();
  append_uint_field(out, "bytes", UINT64_MAX);
  EXPECT_EQ(out, R"("bytes":18446744073709551615)");
}

TEST(TreeJson, BytesFieldChoosesPlainOrBase64) {
  std::string out;
  append_bytes_field(out, "path", "d/f.txt");
  EXPECT_EQ(out, R"("path":"d/f.txt")");
  out.clear();
  append_bytes_field(out, "target", "\xff");
  EXPECT_EQ(out, R"("target_b64":"/w==")");
}

}  // namespace
}  // namespace sealrun::tree_json
