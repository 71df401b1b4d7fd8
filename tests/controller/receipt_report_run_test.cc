// `receipt show` and `receipt report` on the receipts of real runs (issue 27 items 2 and 3),
// through the built binary: the census sampled the group's memory, `show` says what ran with which
// inputs and who signed, the page of a real receipt has its timeline, the ledger's index links
// every run's page — and the page renders in headless Chromium (Debian's `chromium`) in a network
// namespace of its own: a screenshot that is not blank, no console message (a blocked load or a
// script would log one), and nothing the page could fetch.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class ReportRunTest : public RunTest {
 protected:
  void SetUp() override {
    RunTest::SetUp();
    fs::create_directories(state_);
    auto k = sealrun({"key", "generate", "--out-dir", state_ + "/keys"});
    ASSERT_EQ(k.status.code, 0) << k.err;
  }
  // A job that grows its scratch and its memory (the page cache of what it writes is charged to
  // its group) over about a second, sampled every 100 ms.
  void run_growing_job(const std::string& id) {
    auto a = freeze(
        "for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/scratch/f$i bs=1M count=6 2>/dev/null; "
        "sleep 0.2; done; echo done > /out/result.txt",
        {"limits.census_interval_ms=100"});
    auto c = run(a, id);
    ASSERT_EQ(c.status.code, 0) << c.err;
  }
};

struct Rendered {
  int code = -1;
  std::string console;  // Chromium's console lines for the page (":CONSOLE")
  std::string dom;
  json pixels;  // png_stats.py's answer
};

// Renders `page` in headless Chromium without a network (unshare -n): its DOM, a screenshot's
// pixel statistics and every console message.
Rendered render(const std::string& page, const std::string& work) {
  Rendered r;
  std::vector<std::string> chromium = {"/usr/bin/unshare",
                                       "-n",
                                       "/usr/bin/chromium",
                                       "--headless",
                                       "--no-sandbox",
                                       "--disable-gpu",
                                       "--hide-scrollbars",
                                       "--no-first-run",
                                       "--disable-background-networking",
                                       "--disable-component-update",
                                       "--disable-extensions",
                                       "--user-data-dir=" + work + "/profile",
                                       "--enable-logging=stderr",
                                       "--v=0",
                                       "--window-size=1000,1400"};
  SpawnOptions shot;
  shot.argv = chromium;
  shot.argv.push_back("--screenshot=" + work + "/shot.png");
  shot.argv.push_back("file://" + page);
  auto s = run_capture(shot, 120000, 8 << 20);
  if (!s.ok()) return r;
  r.code = s->status.code;
  std::istringstream lines(s->err);
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos) r.console += line + "\n";
  SpawnOptions dom;
  dom.argv = chromium;
  dom.argv.push_back("--dump-dom");
  dom.argv.push_back("file://" + page);
  if (auto d = run_capture(dom, 120000, 16 << 20); d.ok()) {
    r.dom = d->out;
    std::istringstream more(d->err);
    for (std::string line; std::getline(more, line);)
      if (line.find(":CONSOLE") != std::string::npos) r.console += line + "\n";
  }
  SpawnOptions stats;
  stats.argv = {"/usr/bin/python3",
                std::string(SEALRUN_SOURCE_DIR) + "/tests/controller/png_stats.py",
                work + "/shot.png"};
  if (auto p = run_capture(stats, 120000); p.ok() && p->status.code == 0)
    r.pixels = json::parse(p->out, nullptr, false);
  return r;
}

TEST_F(ReportRunTest, ShowSaysWhatRanWithWhichInputsAndWhoSigned) {
  run_growing_job("show1");
  json r = receipt("show1");
  size_t with_memory = 0;
  for (const auto& s : r["samples"]) with_memory += s.contains("memory_bytes");
  EXPECT_GE(with_memory, 3u) << "the census samples the group's memory: " << r["samples"].dump();
  auto show = sealrun({"receipt", "show", receipt_path("show1")});
  ASSERT_EQ(show.status.code, 0) << show.err;
  for (const char* want :
       {"command: [\"/bin/sh\",\"-c\",\"for i in", "environment: ", "inputs: ", "view: ",
        "writable: ", "written by: sealrun ", "rebuild of: none", "signature: by key ",
        "verified: Ed25519", "limits reached: none", " MiB"})
    EXPECT_NE(show.out.find(want), std::string::npos) << want << "\n" << show.out;
  auto verbose = sealrun({"receipt", "show", "--verbose", receipt_path("show1")});
  ASSERT_EQ(verbose.status.code, 0) << verbose.err;
  EXPECT_NE(verbose.out.find("census samples: "), std::string::npos) << verbose.out;
  EXPECT_NE(verbose.out.find("admitted limits:"), std::string::npos) << verbose.out;
  EXPECT_GT(verbose.out.size(), show.out.size());
}

TEST_F(ReportRunTest, APageOfARealRunAndAnIndexOfTheLedgerRenderInHeadlessChromium) {
  run_growing_job("page1");
  auto a = freeze("echo failing >&2; exit 3", {}, "failing.json");
  ASSERT_EQ(run(a, "page2").status.code, 5);

  std::string page = dir_ / "page1.html";
  auto c = sealrun({"receipt", "report", receipt_path("page1"), "--html", page});
  ASSERT_EQ(c.status.code, 0) << c.err;
  std::string html = read_text(page);
  EXPECT_NE(html.find("<polyline"), std::string::npos) << "the timeline of a real run";
  EXPECT_NE(html.find("Memory in use"), std::string::npos);
  EXPECT_NE(html.find("memory_max_bytes"), std::string::npos);
  // Nothing to fetch: no attribute names anything (input uris are text), no script.
  for (const char* never : {"<script", "src=", "url(", "@import", "<link", "href=", "<img"})
    EXPECT_EQ(html.find(never), std::string::npos) << never;

  std::string dir = dir_ / "report";
  auto l = sealrun({"receipt", "report", "--ledger", state_, "--html", dir, "--json"});
  ASSERT_EQ(l.status.code, 0) << l.err << l.out;
  EXPECT_EQ(json::parse(l.out)["pages"], 2) << l.out;
  std::string index = read_text(dir + "/index.html");
  for (const char* want : {"href=\"1-page1.html\"", "href=\"2-page2.html\"", "for i in", "exit 3",
                           "key ", "failed", "built"})
    EXPECT_NE(index.find(want), std::string::npos) << want;
  ASSERT_TRUE(fs::exists(dir + "/1-page1.html"));
  EXPECT_NE(read_text(dir + "/2-page2.html").find("failing"), std::string::npos)
      << "the failed run's stderr tail";

  for (const std::string& p : {page, dir + "/index.html", dir + "/2-page2.html"}) {
    Rendered r = render(p, dir_.str());
    EXPECT_EQ(r.code, 0) << p;
    EXPECT_EQ(r.console, "") << p << ": the page logged to the console";
    EXPECT_NE(r.dom.find("</html>"), std::string::npos) << p;
    ASSERT_TRUE(r.pixels.is_object()) << p;
    EXPECT_GT(r.pixels["colors"].get<int>(), 20) << p << r.pixels;
    EXPECT_GT(r.pixels["non_background"].get<double>(), 0.05) << p << r.pixels;
  }
  Rendered r = render(page, dir_.str());
  EXPECT_NE(r.dom.find("<svg"), std::string::npos);
  EXPECT_NE(r.dom.find("Timeline"), std::string::npos);
}

// The checks above can fail: a page that loads something or runs a script is caught by the
// console, and a blank page by the pixels.
TEST_F(ReportRunTest, TheChromiumChecksCatchALoadAScriptAndABlankPage) {
  std::string bad = dir_ / "bad.html";
  write_text(bad,
             "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
             "content=\"default-src 'none'\"></head><body><img src=\"http://192.0.2.1/x.png\">"
             "<script>console.error('ran')</script></body></html>");
  Rendered r = render(bad, dir_.str());
  EXPECT_NE(r.console.find("http://192.0.2.1/x.png"), std::string::npos) << r.console;
  EXPECT_NE(r.console.find("inline script"), std::string::npos) << r.console;
  std::string blank = dir_ / "blank.html";
  write_text(blank, "<!DOCTYPE html><html><body></body></html>");
  Rendered b = render(blank, dir_.str());
  ASSERT_TRUE(b.pixels.is_object());
  EXPECT_EQ(b.pixels["colors"], 1) << b.pixels;
  EXPECT_EQ(b.console, "");
}

}  // namespace
}  // namespace sealrun::testing
