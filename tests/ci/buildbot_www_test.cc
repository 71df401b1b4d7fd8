// SPDX-License-Identifier: Apache-2.0
// The shipped master.cfg's web UI (label ci): after a gated build, headless Chromium (Debian's
// `chromium`) loads the build's page from the master on localhost, inside the test's network
// namespace (buildbot_fixture.h), and the page it renders shows the sealrun step, its result and
// a link to the kept receipt; that link serves the receipt's bytes, sandboxed; the UI is
// read-only; and twistd.log does not print an exit-code mapping at every step. The screenshot is
// written to $SEALRUN_CI_SCREENSHOT when set (docs/buildbot.png is made this way).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/ci/buildbot_fixture.h"
#include "tests/support/temp_dir.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;

// GET (or POST `body`) `path` on the master's web server; prints {status, headers, body}.
constexpr const char* kHttp = R"(import json, sys, urllib.request, urllib.error
req = urllib.request.Request("http://localhost:8010/" + sys.argv[1],
                             data=sys.argv[2].encode() if len(sys.argv) > 2 else None,
                             headers={"Content-Type": "application/json"})
try:
    r = urllib.request.urlopen(req, timeout=30)
    status, headers, body = r.status, dict(r.headers), r.read()
except urllib.error.HTTPError as e:
    status, headers, body = e.code, dict(e.headers), e.read()
print(json.dumps({"status": status, "headers": headers, "body": body.decode("utf-8", "replace")}))
)";

class BuildbotWww : public Buildbot {
 protected:
  nlohmann::json http(const std::string& path, const std::string& post = "") {
    std::vector<std::string> argv = {"/usr/bin/python3", "-c", kHttp, path};
    if (!post.empty()) argv.push_back(post);
    auto c = tool(argv);
    EXPECT_EQ(c.status.code, 0) << c.err;
    auto doc = nlohmann::json::parse(c.out, nullptr, false);
    return doc.is_discarded() ? nlohmann::json::object() : doc;
  }

  // Headless Chromium on `url` in the namespace: {"--dump-dom"} or {"--screenshot=FILE"}.
  Captured chromium(const std::string& url, const std::string& what) {
    return tool({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                 "--hide-scrollbars", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-extensions",
                 "--user-data-dir=" + dir_ / "profile", "--window-size=1100,640",
                 // Lets the page's API requests finish before the DOM is dumped or shot.
                 "--virtual-time-budget=20000", what, url});
  }
};

TEST_F(BuildbotWww, TheBuildsPageShowsTheSealrunStepItsResultAndTheReceipt) {
  start_master_and_worker();
  Frozen good = freeze("echo built > /out/hello.txt");
  send_change(good, "r1");
  nlohmann::json build = wait_for_build(1);
  ASSERT_FALSE(build.is_null());
  ASSERT_EQ(build["results"], kBuildSuccess) << build.dump(2);
  std::string id = build["properties"]["sealrun_id"];
  std::string receipt_link = "receipts/sealrun/" + id + "/receipt.json";

  // The REST API the page reads: the sealrun step links to the receipt and its report.
  auto builders = nlohmann::json::parse(http("api/v2/builders").value("body", ""), nullptr, false);
  ASSERT_TRUE(builders.is_object()) << builders;
  int builderid = builders["builders"].at(0)["builderid"];
  auto steps = nlohmann::json::parse(
      http("api/v2/builders/" + std::to_string(builderid) + "/builds/1/steps").value("body", ""),
      nullptr, false);
  bool linked = false;
  for (const auto& s : steps["steps"])
    if (s["name"] == "sealrun run")
      for (const auto& u : s["urls"]) linked |= u["name"] == "receipt" && u["url"] == receipt_link;
  EXPECT_TRUE(linked) << steps.dump(2);

  // The link serves the kept receipt, byte for byte, sandboxed.
  auto served = http(receipt_link);
  EXPECT_EQ(served["status"], 200) << served.dump();
  EXPECT_EQ(served.value("body", ""), read_text(kept_dir(build) + "/receipt.json"));
  EXPECT_EQ(served["headers"].value("Content-Security-Policy", ""), "sandbox") << served.dump();
  // Read-only: a control action (rebuild) is refused.
  auto control = http("api/v2/builds/" + std::to_string(1), R"({"jsonrpc": "2.0", "method":
                      "rebuild", "params": {}, "id": 1})");
  EXPECT_EQ(control["status"], 403) << control.dump();

  // The page, rendered: the step's row, its result, the receipt's link.
  std::string page = "http://localhost:8010/#/builders/" + std::to_string(builderid) + "/builds/1";
  auto dom = chromium(page, "--dump-dom");
  ASSERT_EQ(dom.status.code, 0) << dom.err;
  auto row = dom.out.find("data-step=\"sealrun run\"");
  ASSERT_NE(row, std::string::npos) << dom.out;
  std::string rest = dom.out.substr(row, dom.out.find("</tr>", row) - row);
  EXPECT_NE(rest.find("data-result=\"success\""), std::string::npos) << rest;
  EXPECT_NE(rest.find("href=\"" + receipt_link + "\""), std::string::npos) << rest;
  EXPECT_NE(rest.find("report.html"), std::string::npos) << rest;
  EXPECT_NE(rest.find("sealrun: built (exit 0)"), std::string::npos) << rest;
  // The waterfall lists the build with its steps.
  auto waterfall = chromium("http://localhost:8010/", "--dump-dom");
  EXPECT_NE(waterfall.out.find("id=\"waterfall\""), std::string::npos) << waterfall.out;
  EXPECT_NE(waterfall.out.find("sealrun run"), std::string::npos);

  std::string shot = dir_ / "buildbot.png";
  auto s = chromium(page, "--screenshot=" + shot);
  EXPECT_EQ(s.status.code, 0) << s.err;
  EXPECT_GT(fs::file_size(shot), 10000u);
  if (const char* keep = ::getenv("SEALRUN_CI_SCREENSHOT"))
    fs::copy_file(shot, keep, fs::copy_options::overwrite_existing);

  // A step's arguments are logged at every step; no exit-code mapping goes with them.
  std::string log = read_text(master_ + "/twistd.log");
  EXPECT_EQ(log.find("decodeRC"), std::string::npos);
  EXPECT_EQ(log.find("-255:"), std::string::npos);
}

}  // namespace
}  // namespace sealrun::testing
