// SPDX-License-Identifier: Apache-2.0
// The inventory's order as the parallel walk assembles it from per-directory sorts equals sorting
// every full path by raw bytes, on names built to break a naive depth-first order: siblings that
// extend a directory's name with bytes below '/' ("a-", "a.b", "a\x01"), directories with such
// names nested in each other, bytes 0x80-0xff, upper before lower case.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fingerprint/tree.h"
#include "fingerprint/tree_json.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

TEST(TreeOrder, AssembledOrderEqualsSortingEveryFullPath) {
  TempDir dir;
  const std::string t = dir / "t";
  ASSERT_EQ(::mkdir(t.c_str(), 0755), 0);
  const std::vector<std::string> names = {"a", "a-",   "a.b",       "a\x01", "a0", "B",
                                          "b", "\xff", "a\xc3\xa9", "-",     ".x", "zz"};
  uint32_t x = 12345;
  std::vector<std::string> expected;
  // Three levels; at each, some names are directories and the rest files.
  std::function<void(const std::string&, const std::string&, int)> fill =
      [&](const std::string& abs, const std::string& rel, int depth) {
        for (const std::string& n : names) {
          x = x * 1664525u + 1013904223u;
          const std::string child_abs = abs + "/" + n;
          const std::string child_rel = rel.empty() ? n : rel + "/" + n;
          expected.push_back(child_rel);
          if (depth < 2 && (x >> 16) % 3 != 0) {
            ASSERT_EQ(::mkdir(child_abs.c_str(), 0755), 0);
            fill(child_abs, child_rel, depth + 1);
          } else {
            write_text(child_abs, n);
          }
        }
      };
  fill(t, "", 0);
  std::sort(expected.begin(), expected.end());
  expected.insert(expected.begin(), ".");

  for (unsigned threads : {1u, 2u, 4u}) {
    TreeOptions options;
    options.threads = threads;
    const std::string out = dir / ("inv" + std::to_string(threads));
    auto summary = write_tree_inventory(t, out, options);
    ASSERT_TRUE(summary.ok()) << summary.error().message();
    std::vector<std::string> paths;
    std::istringstream in(read_text(out));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      paths.push_back(j.contains("path")
                          ? j["path"].get<std::string>()
                          : *tree_json::base64_decode(j["path_b64"].get<std::string>()));
    }
    EXPECT_EQ(paths, expected) << threads << " threads";
  }
}

}  // namespace
}  // namespace sealrun
