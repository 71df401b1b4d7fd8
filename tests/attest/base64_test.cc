// SPDX-License-Identifier: Apache-2.0
// base64_encode / base64_decode: RFC 4648 vectors, both alphabets, and every malformed spelling
// the strict decoder must refuse.
#include "attest/base64.h"

#include <gtest/gtest.h>

namespace sealrun::attest {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (auto [plain, encoded] : vectors) {
    EXPECT_EQ(base64_encode(plain), encoded);
    auto back = base64_decode(encoded, 100, "x");
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, plain);
  }
}

TEST(Base64, AllByteValuesRoundTrip) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (size_t cut = 0; cut < 4; ++cut) {
    std::string s = bytes.substr(cut);
    auto back = base64_decode(base64_encode(s), 1000, "x");
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, s);
  }
}

TEST(Base64, AcceptsUrlSafeAndUnpadded) {
  // 0xfb 0xff -> standard "+/8=", URL-safe "-_8".
  std::string bytes("\xfb\xff", 2);
  EXPECT_EQ(base64_encode(bytes), "+/8=");
  for (const char* spelling : {"+/8=", "+/8", "-_8=", "-_8"}) {
    auto back = base64_decode(spelling, 10, "x");
    ASSERT_TRUE(back) << spelling << ": " << back.error().message();
    EXPECT_EQ(*back, bytes);
  }
}

TEST(Base64, RefusesMalformed) {
  const std::pair<const char*, const char*> bad[] = {
      {"Zm9v\n", "byte 0x0a"},         {"Zm 9v", "byte 0x20"},  // a space is not base64
      {"Zm9=v", "'=' before the end"}, {"Zg=", "padding"},
      {"Zg===", "'=' before the end"}, {"Z", "truncated"},
      {"Zh==", "non-zero bits"},       {"+_8=", "mixes"},
      {"Zm9v*", "character '*'"},
  };
  for (auto [text, why] : bad) {
    auto r = base64_decode(text, 100, "envelope.payload");
    ASSERT_FALSE(r) << text;
    EXPECT_NE(r.error().message().find("envelope.payload: bad base64"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find(why), std::string::npos)
        << text << ": " << r.error().message();
  }
}

TEST(Base64, RefusesOversizedBeforeDecoding) {
  std::string big(4000, 'A');
  auto r = base64_decode(big, 100, "p");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("decodes to 3000 bytes, over the limit of 100"),
            std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace sealrun::attest
