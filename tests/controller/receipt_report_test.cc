// SPDX-License-Identifier: Apache-2.0
// `receipt report`'s page builder and `receipt show`'s text, pure (issue 27 items 2 and 3): every
// receipt string is escaped (HTML entities, control and bidi characters made visible), the page
// names no URL and has no script, the SVG timeline is drawn from the sample series and stays
// bounded, the page stays bounded whatever the receipt holds, and the limits reached are derived
// from what a receipt records.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "controller/receipt/html_text.h"
#include "controller/receipt/receipt_facts.h"
#include "controller/receipt/receipt_report_html.h"
#include "controller/receipt/receipt_show.h"
#include "controller/receipt/svg_timeline.h"

namespace sealrun::report {
namespace {

using nlohmann::json;

// A receipt much like a real one (tests/controller/receipt_report_run_test.cc checks a real one).
json sample_receipt() {
  json samples = json::array();
  for (int i = 0; i < 20; ++i)
    samples.push_back({{"t_ms", i * 100},
                       {"owned_bytes", 4096 * i * i},
                       {"result_bytes", 1024 * i},
                       {"free_bytes", 1ull << 36},
                       {"memory_bytes", (1 << 20) * (i % 7 + 1)}});
  return {
      {"schema", "sealrun-receipt-v1"},
      {"id", "run-1"},
      {"state", "failed"},
      {"exit", 5},
      {"reason", "the job exited 1"},
      {"admission_sha256", std::string(64, 'a')},
      {"started", "2026-01-01T00:00:00.000Z"},
      {"finished", "2026-01-01T00:00:02.000Z"},
      {"sealrun_version",
       {{"version", "0.2.0"}, {"commit", std::string(40, 'c')}, {"dirty", true}}},
      {"rebuild_of",
       {{"id", "run-0"},
        {"receipt_sha256", std::string(64, 'e')},
        {"variations", {{{"name", "umask"}, {"how", "0002"}}}}}},
      {"signing", {{"key_id", std::string(64, 'k')}, {"envelope", "receipt.dsse.json"}}},
      {"admission",
       {{"command", {{"argv", {"/bin/sh", "-c", "make all"}}, {"cwd", "/src"}}},
        {"env", {{"PATH", "/usr/bin:/bin"}, {"LANG", "C.UTF-8"}}},
        {"source_date_epoch", 315619200},
        {"limits",
         {{"memory_max_bytes", 8ull << 30},
          {"memory_high_bytes", 7ull << 30},
          {"pids_max", 4096},
          {"owned_max_bytes", 1ull << 20}}},
        {"inputs",
         {{{"name", "source"},
           {"uri", "file:///src"},
           {"digest", {{"sealrun_sourceManifestV1", std::string(64, '1')}}},
           {"annotations", {{"kind", "source"}}}},
          {{"name", "closure:/usr/bin/cc"},
           {"uri", "file:///usr/bin/cc"},
           {"digest", {{"sha256", std::string(64, '2')}}},
           {"annotations", {{"kind", "closure"}}}}}}}},
      {"verifications",
       {{{"target", "admission"}, {"expected", "x"}, {"observed", "x"}, {"result", "pass"}},
        {{"target", "toolchain"}, {"expected", "y"}, {"observed", "z"}, {"result", "fail"}}}},
      {"grant",
       {{"mechanism", "bwrap"},
        {"mode", "enforcing"},
        {"enforced", {"memory", "network"}},
        {"degraded", json::array()},
        {"unenforced_required", json::array()}}},
      {"memory",
       {{"backend", "cgroup-v2"},
        {"peak_bytes", 7 << 20},
        {"swap_used_bytes", 0},
        {"events", {{"high", 3}, {"max", 0}, {"oom", 0}, {"oom_kill", 0}}},
        {"limits",
         {{{"name", "memory_max_bytes"},
           {"requested", 8ull << 30},
           {"observed", 8ull << 30},
           {"applied", true},
           {"effective", 8ull << 30}}}}}},
      {"owned_space", {{"kind", "filesystem"}, {"size_bytes", 1 << 20}, {"inodes", 100}}},
      {"guard", nullptr},
      {"samples", samples},
      {"samples_dropped", 0},
      {"view",
       {{{"job_path", "/usr/bin/cc"},
         {"kind", "closure"},
         {"host_path", "/usr/bin/cc"},
         {"pin", "sha256:" + std::string(64, '2')},
         {"writable", false}},
        {{"job_path", "/out"},
         {"kind", "out"},
         {"host_path", "/s/results/run-1/out"},
         {"pin", nullptr},
         {"writable", true}}}},
      {"commands",
       {{{"label", "job"},
         {"argv", {"/bin/sh"}},
         {"exit", 1},
         {"signal", 0},
         {"timed_out", false},
         {"stdout",
          {{"sha256", std::string(64, '3')},
           {"size", 12},
           {"read_bytes", 12},
           {"cut", false},
           {"tail", "hello\nworld\n"}}}}}},
      {"outputs",
       {{{"path", "a.txt"}, {"size", 3 << 20}, {"sha256", std::string(64, '4')}},
        {{"path", "link"}, {"kind", "symlink"}, {"target", "a.txt"}}}},
      {"outputs_total", 2},
      {"outputs_list_sha256", std::string(64, '5')},
      {"outputs_bytes", 3 << 20},
      {"stop_confirmed", true},
      {"cleanup", {{{"action", "remove the group"}, {"result", "ok"}, {"detail", ""}}}},
      {"not_finished", json::array()},
      {"truncated", json::array()},
      {"notes", json::array()},
      {"digest", {{"algorithm", "sha256"}, {"value", std::string(64, 'd')}}},
  };
}

ReceiptPage page_context() {
  return {"/s/results/run-1/receipt.json",
          {{"digest", "pass", "intact"}, {"signature", "pass", "Ed25519 ..., key kkk"}},
          "",
          "sealrun test"};
}

TEST(HtmlText, EscapesEntitiesControlsAndBidi) {
  struct Case {
    std::string in, out;
  };
  for (const Case& c : std::vector<Case>{
           {"plain", "plain"},
           {"<script>alert('x')</script>", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"},
           {"a\"b&c", "a&quot;b&amp;c"},
           {"line\nfake", "line\\nfake"},
           {"\x1b[31mred", "\\x1b[31mred"},
           {"abc\xe2\x80\xae"
            "cba",
            "abc\\u202ecba"},              // RIGHT-TO-LEFT OVERRIDE
           {"\xe2\x81\xa6x", "\\u2066x"},  // LEFT-TO-RIGHT ISOLATE
           {"bad\xff", "bad\\xff"},
           {"\xc2\x9b"
            "2J",
            "\\u009b2J"},  // C1 CSI
       })
    EXPECT_EQ(html::text(c.in), c.out) << c.in;
  EXPECT_EQ(html::lines("a<b\n\x1b"
                        "c\n"),
            "a&lt;b\n\\x1bc");
}

// Hostile strings wherever a receipt holds a string a person reads.
TEST(ReceiptPage, EveryReceiptStringIsEscaped) {
  const std::string evil =
      "<script>alert(1)</script>\" onmouseover=\"x\x1b[2J\xe2\x80\xae<img src=x>";
  json r = sample_receipt();
  r["id"] = evil;
  r["reason"] = evil;
  r["admission"]["env"][evil] = evil;
  r["admission"]["command"]["argv"].push_back(evil);
  r["admission"]["inputs"][0]["uri"] = evil;
  r["verifications"][1]["observed"] = evil;
  r["view"][0]["job_path"] = "/usr/" + evil;
  r["outputs"][0]["path"] = evil;
  r["outputs"][1]["target"] = evil;
  r["commands"][0]["stdout"]["tail"] = evil + "\n" + evil;
  r["cleanup"][0]["detail"] = evil;
  r["notes"] = {evil};
  r["memory"]["backend"] = evil;
  std::string page = receipt_page_html(r, page_context());
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("\" onmouseover"), std::string::npos);
  EXPECT_EQ(page.find('\x1b'), std::string::npos);
  EXPECT_EQ(page.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;&quot; onmouseover=&quot;x\\x1b[2J"
                      "\\u202e&lt;img src=x&gt;"),
            std::string::npos);
}

TEST(ReceiptPage, ShowsEverySectionAndNamesNoUrl) {
  std::string page = receipt_page_html(sample_receipt(), page_context());
  for (const char* id : {"verdict", "checks", "verifications", "containment", "timeline", "command",
                         "inputs", "view", "outputs", "signature", "cleanup"})
    EXPECT_NE(page.find(std::string("<section id=\"") + id + "\""), std::string::npos) << id;
  // Self-contained: nothing is fetched, nothing runs. (The receipt's own strings may name URLs,
  // e.g. an input's file:// uri: shown as text, never in an attribute.)
  for (const char* never : {"<script", "src=", "url(", "@import", "<link", "<iframe", "<object",
                            "<embed", "<img", "href=", "javascript:", "action=", "<base"})
    EXPECT_EQ(page.find(never), std::string::npos) << never;
  EXPECT_NE(page.find("file:///src"), std::string::npos) << "the input's uri, as text";
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("<details"), std::string::npos);
  EXPECT_NE(page.find("3.0 MiB"), std::string::npos) << "an output's size in binary units";
  EXPECT_NE(page.find("memory_high"), std::string::npos) << "a limit reached";
  EXPECT_NE(page.find(std::string(64, 'k')), std::string::npos) << "the signer's key id";
  EXPECT_NE(page.find("sealrun_sourceManifestV1:" + std::string(64, '1')), std::string::npos);
  EXPECT_NE(page.find("umask"), std::string::npos) << "rebuild_of";
}

TEST(ReceiptPage, StaysBoundedWhateverTheReceiptHolds) {
  json r = sample_receipt();
  // About 1 MiB (a receipt's bound) of what expands most: '<' (4 bytes for 1), many tiny items.
  std::string angles(4000, '<');
  for (int i = 0; i < 20000; ++i)
    r["outputs"].push_back({{"path", std::to_string(i)}, {"size", 1}, {"sha256", "x"}});
  for (int i = 0; i < 20000; ++i)
    r["view"].push_back({{"job_path", "/v/" + std::to_string(i)}, {"kind", "tree"}});
  for (int i = 0; i < 100; ++i) r["notes"].push_back(angles);
  r["reason"] = std::string(200000, '<');
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "/d";
  r["view"].push_back({{"job_path", deep}, {"kind", "tree"}});
  size_t receipt_bytes = r.dump().size();
  std::string page = receipt_page_html(r, page_context());
  EXPECT_LT(page.size(), 6 * receipt_bytes + (2u << 20)) << receipt_bytes;
  EXPECT_NE(page.find("more in the receipt"), std::string::npos);
}

TEST(SvgTimeline, DrawsTheSeriesAndTheLimitsWithinTheScale) {
  Plot plot{"Memory in use",
            {{"memory in use", "#8250df", {{0, 1 << 20}, {500, 3 << 20}, {1000, 2 << 20}}}},
            {{"memory_high_bytes", 4 << 20}, {"memory_max_bytes", 8ull << 30}}};
  std::string svg = timeline_svg(plot);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, std::regex("<polyline[^>]*points=\"([^\"]*)\"")));
  std::string points = m[1];
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 3);
  EXPECT_NE(svg.find("class=\"limit\""), std::string::npos) << "4 MiB is within the scale";
  EXPECT_NE(svg.find("far above the plot: memory_max_bytes 8.0 GiB"), std::string::npos);
  EXPECT_NE(svg.find("MiB"), std::string::npos) << "binary units on the axis";
  EXPECT_EQ(svg.find("://"), std::string::npos);
}

TEST(SvgTimeline, ThinsALongSeriesKeepingThePeakAndStaysSmall) {
  std::vector<PlotPoint> points;
  for (int i = 0; i < 200000; ++i) points.push_back({i, static_cast<uint64_t>(i % 1000)});
  points[123457].value = 1 << 30;
  auto thin = thin_points(points, kMaxPlotPoints);
  EXPECT_LE(thin.size(), kMaxPlotPoints);
  EXPECT_EQ(thin.front().t_ms, 0);
  EXPECT_EQ(thin.back().t_ms, 199999);
  EXPECT_TRUE(std::any_of(thin.begin(), thin.end(),
                          [](const PlotPoint& p) { return p.value == 1u << 30; }));
  std::string svg = timeline_svg({"t", {{"a", "#000", points}, {"b", "#111", points}}, {}});
  EXPECT_LT(svg.size(), 40'000u);
  // One sample is a dot; none is an empty frame, not an error.
  EXPECT_NE(timeline_svg({"t", {{"a", "#000", {{0, 5}}}}, {}}).find("<circle"), std::string::npos);
  EXPECT_NE(timeline_svg({"t", {{"a", "#000", {}}}, {}}).find("</svg>"), std::string::npos);
}

TEST(ReceiptFacts, LimitsReachedAreDerivedFromTheReceipt) {
  struct Case {
    std::function<void(json&)> edit;
    std::vector<std::string> names;
  };
  for (
      const auto& c : std::vector<Case>{
          {[](json& r) { r["memory"]["events"]["high"] = 0; }, {}},
          {[](json&) {}, {"memory_high"}},
          {[](json& r) {
             r["limits_hit"] = {"pids"};
             r["memory"]["events"]["high"] = 0;
           },
           {"pids"}},
          {[](json& r) {
             r["memory"]["events"]["oom_kill"] = 2;
             r["memory"]["events"]["high"] = 0;
           },
           {"memory"}},
          {[](json& r) {
             r["memory"]["events"]["max"] = 1;
             r["memory"]["events"]["high"] = 0;
           },
           {"memory"}},
          {[](json& r) {
             r["memory"]["events"]["high"] = 0;
             r["guard"] = {{"name", "owned_max_bytes"}, {"limit", 1}, {"observed", 2}, {"t_ms", 5}};
           },
           {"growth"}},
          {[](json& r) {
             r["memory"]["events"]["high"] = 0;
             r["limits_hit"] = {"memory", "wall_clock"};
             r["memory"]["events"]["oom_kill"] = 1;
             r["commands"][0]["timed_out"] = true;
           },
           {"memory", "wall_clock"}},
          {[](json& r) {
             r["memory"] = "garbage";
             r["limits_hit"] = 7;
             r["commands"][0]["timed_out"] = "yes";
           },
           {}},
      }) {
    json r = sample_receipt();
    c.edit(r);
    std::vector<std::string> names;
    for (const auto& h : receipt::limits_hit(r)) names.push_back(h.name);
    EXPECT_EQ(names, c.names) << r["memory"].dump() << r.value("limits_hit", json()).dump();
  }
}

TEST(ReceiptShow, SaysWhatRanWithWhichInputsAndWhoSignedInBinaryUnits) {
  json r = sample_receipt();
  r["limits_hit"] = {"pids"};
  r["admission"]["env"]["EVIL"] = "\x1b]0;pwned\x07";
  std::string text =
      receipt::show_text(r, {false, "pass", "Ed25519 over the receipt's exact bytes"});
  for (const char* want : {"command: [\"/bin/sh\",\"-c\",\"make all\"]",
                           "in /src",
                           "PATH=/usr/bin:/bin",
                           "EVIL=\\x1b]0;pwned\\x07",
                           "inputs: 2 (1 closure, 1 source)",
                           "source  sealrun_sourceManifestV1:1111",
                           "1 more (--verbose lists them)",
                           "view: 2 entries (1 closure, 1 out); writable: /out",
                           "limits reached:",
                           "    pids",
                           "memory_high: throttled",
                           "written by: sealrun 0.2.0",
                           "dirty tree",
                           "rebuild of: run run-0",
                           "varied: umask",
                           "signature: by key kkkk",
                           "verified: Ed25519",
                           "peak 7.0 MiB",
                           "memory_max_bytes requested 8.0 GiB observed 8.0 GiB",
                           "a.txt  3.0 MiB"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("closure:/usr/bin/cc"), std::string::npos)
      << "closure files only with --verbose";
  EXPECT_EQ(text.find("census samples"), std::string::npos);

  std::string verbose = receipt::show_text(r, {true, "", ""});
  for (const char* want :
       {"closure:/usr/bin/cc  sha256:2222", "/usr/bin/cc  closure  pin sha256:2222",
        "admitted limits:", "owned_max_bytes 1.0 MiB", "pids_max 4096", "census samples: 20 listed",
        "memory 7.0 MiB"})
    EXPECT_NE(verbose.find(want), std::string::npos) << want << "\n" << verbose;
  r.erase("signing");
  EXPECT_NE(receipt::show_text(r, {}).find("signature: none"), std::string::npos);
}

}  // namespace
}  // namespace sealrun::report
