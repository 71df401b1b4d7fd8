// SPDX-License-Identifier: Apache-2.0
// Live job output (docs/run-output.md; controller/run/live_job_log.h), end to end with the real
// binary and bwrap: the job's lines reach the controller's stderr, prefixed `job| `, while the job
// still runs; --quiet shows none; what a terminal would act on is escaped; at most 16 MiB is
// shown, then one notice; --json keeps stdout one JSON document.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/syscall.h"
#include "tests/controller/run_test_support.h"

namespace sealrun::testing {
namespace {

constexpr uint64_t kBound = 16ULL << 20;  // controller/run/run_outputs.h kLogReadMaxBytes
constexpr const char* kPrefix = "job| ";

// A controller whose stderr the test reads as it comes (its stdout goes to a file).
class Watched {
 public:
  Watched(RunTest& t, const std::vector<std::string>& args) : out_path_(t.dir_ / "stdout.txt") {
    auto pipe = make_pipe();
    EXPECT_TRUE(pipe.ok());
    auto out = open_at(AT_FDCWD, out_path_, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    EXPECT_TRUE(out.ok());
    if (!pipe || !out) return;
    SpawnOptions o = t.sealrun_options(args);
    o.stdout_fd = out->get();
    o.stderr_fd = pipe->write_end.get();
    auto child = spawn(o);
    EXPECT_TRUE(child.ok()) << child.error().message();
    if (child) child_ = std::move(*child);
    err_ = std::move(pipe->read_end);
  }

  // Reads stderr until `done(text so far)` holds, stderr ends, or timeout_ms passes (a bound for
  // a broken controller, not a wait for anything). Returns done's last verdict.
  bool read_until(const std::function<bool(const std::string&)>& done, int64_t timeout_ms) {
    int64_t deadline = monotonic_ms() + timeout_ms;
    while (!done(text) && err_) {
      int64_t left = deadline - monotonic_ms();
      if (left <= 0) return false;
      pollfd p{err_.get(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000))) <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(err_.get(), buf, sizeof buf);
      if (n <= 0) {
        err_.reset();  // the controller (and everything it started) closed its stderr
        break;
      }
      text.append(buf, static_cast<size_t>(n));
    }
    return done(text);
  }
  // Reads stderr to its end and waits for the controller: its exit code, or -1.
  int finish(int64_t timeout_ms = 180000) {
    read_until([](const std::string&) { return false; }, timeout_ms);
    auto st = child_.wait_for(timeout_ms);
    if (!st || !st->has_value()) {
      child_.kill_and_reap();
      return -1;
    }
    return (*st)->code;
  }
  std::string stdout_text() const { return read_text(out_path_); }

  std::string text;  // the controller's stderr so far

 private:
  std::string out_path_;
  Child child_;
  UniqueFd err_;
};

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The lines of `text` that start with `job| `, without the prefix.
std::vector<std::string> job_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (line.rfind(kPrefix, 0) == 0) lines.push_back(line.substr(5));
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return lines;
}

std::vector<std::string> run_args(RunTest& t, const Frozen& a, const std::string& id,
                                  std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run",  a.path, "--sha256",    a.sha256,
                                   "--id", id,     "--state-dir", t.state_};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

const std::vector<std::string> kBackstop = {"limits.wall_clock_s=300"};

TEST_F(RunTest, LiveOutputArrivesWhileTheJobRuns) {
  // The job cannot end before the test has seen its first lines: it waits for /out/go, which the
  // test makes only then. Output shown only at the end could never let it finish.
  auto a = freeze(
      "echo out-one; echo err-one >&2; echo out-two; "
      "while [ ! -e /out/go ]; do sleep 0.05; done; rm -f /out/go; "
      "echo out-three; echo err-two >&2",
      kBackstop);
  Watched w(*this, run_args(*this, a, "live1"));
  bool seen = w.read_until(
      [](const std::string& t) {
        return has(t, "job| out-one\n") && has(t, "job| err-one\n") && has(t, "job| out-two\n");
      },
      120000);
  ASSERT_TRUE(seen) << "the job's first lines were not shown while it ran:\n" << w.text;
  EXPECT_FALSE(has(w.text, "out-three")) << w.text;  // the job is still waiting
  write_text(live_out_dir(state_, "live1") + "/go", "");
  int code = w.finish();
  EXPECT_EQ(code, 0) << w.text;
  auto lines = job_lines(w.text);
  auto pos = [&](const std::string& l) {
    return std::find(lines.begin(), lines.end(), l) - lines.begin();
  };
  ASSERT_EQ(lines.size(), 5u) << w.text;
  EXPECT_LT(pos("out-one"), pos("out-two"));
  EXPECT_LT(pos("out-two"), pos("out-three"));
  EXPECT_LT(pos("err-one"), pos("err-two"));
  EXPECT_LT(pos("err-two"), 5);
  // Then the summary, after the job's output.
  EXPECT_TRUE(has(w.text, "the job exited 0, built in")) << w.text;
  EXPECT_GT(w.text.find("the job exited 0"), w.text.find("job| out-three")) << w.text;
}

TEST_F(RunTest, LiveOutputQuietShowsNone) {
  auto a = freeze("echo visible-out; echo visible-err >&2; printf no-newline-at-end", kBackstop);
  Watched loud(*this, run_args(*this, a, "loud"));
  ASSERT_EQ(loud.finish(), 0) << loud.text;
  EXPECT_TRUE(has(loud.text, "job| visible-out\n")) << loud.text;
  EXPECT_TRUE(has(loud.text, "job| visible-err\n")) << loud.text;
  EXPECT_TRUE(has(loud.text, "job| no-newline-at-end\n")) << loud.text;

  Watched quiet(*this, run_args(*this, a, "quiet", {"--quiet"}));
  ASSERT_EQ(quiet.finish(), 0) << quiet.text;
  EXPECT_FALSE(has(quiet.text, "job|")) << quiet.text;
  EXPECT_FALSE(has(quiet.text, "visible")) << quiet.text;
  EXPECT_FALSE(has(quiet.text, "the job exited")) << quiet.text;  // no summary either
  // The receipt's path is still the last line of stdout.
  EXPECT_TRUE(has(quiet.stdout_text(), state_ + "/results/quiet/receipt.json\n"))
      << quiet.stdout_text();
}

TEST_F(RunTest, LiveOutputEscapesWhatATerminalWouldActOn) {
  auto a = freeze("printf 'esc\\033[2J\\033]0;title\\007 bad\\377 cr\\rend\\n'", kBackstop);
  Watched w(*this, run_args(*this, a, "escaped"));
  ASSERT_EQ(w.finish(), 0) << w.text;
  EXPECT_TRUE(has(w.text, "job| esc\\x1b[2J\\x1b]0;title\\x07 bad\\xff cr\\rend\n")) << w.text;
  EXPECT_FALSE(has(w.text, "\033")) << "a raw ESC reached the terminal";
  EXPECT_FALSE(has(w.text, "\a"));
  EXPECT_FALSE(has(w.text, "\r"));
  EXPECT_FALSE(has(w.text, "\377"));
}

TEST_F(RunTest, LiveOutputShowsAtMostTheBoundThenOneNotice) {
  // 20 MiB of 100-byte lines on stdout, a last line on stderr: more than the bound in all.
  auto a = freeze(
      "yes 'line of ninety-nine bytes: 0123456789012345678901234567890123456789012345678901234"
      "56789' | head -c 20971520; echo after-the-flood >&2",
      kBackstop);
  Watched w(*this, run_args(*this, a, "flood"));
  w.finish();
  uint64_t shown = 0;
  for (const auto& l : job_lines(w.text)) shown += l.size() + 1;
  // At most the bound (the last line, cut short by it, gains its newline), and most of it shown.
  EXPECT_LE(shown, kBound + 1);
  EXPECT_GE(shown, kBound - 4096);
  size_t notice = w.text.find("sealrun: live output stops here, after 16 MiB");
  ASSERT_NE(notice, std::string::npos) << w.text.substr(w.text.size() - 2000);
  EXPECT_EQ(w.text.find("sealrun: live output stops here", notice + 1), std::string::npos);
  EXPECT_TRUE(has(w.text, state_ + "/results/flood/logs/")) << "the notice says where";
  EXPECT_EQ(w.text.find("job| ", notice), std::string::npos) << "nothing shown after the notice";
}

TEST_F(RunTest, LiveOutputOfAHugeSparseStdoutIsBounded) {
  // The job makes its own stdout 50 GiB with one ftruncate(2): the live output reads no further
  // than the bound (one cut line of NULs, then the notice), and the run ends.
  auto a =
      freeze("echo before; /usr/bin/python3 -c 'import os; os.ftruncate(1, 50 << 30)'", kBackstop);
  Watched w(*this, run_args(*this, a, "sparse"));
  int code = w.finish();
  EXPECT_NE(code, -1) << w.text;
  EXPECT_TRUE(has(w.text, "job| before\n")) << w.text;
  EXPECT_TRUE(has(w.text, "sealrun: live output stops here")) << w.text.substr(0, 4000);
  EXPECT_LT(w.text.size(), 256u * 1024) << "a line of NULs was not cut";
}

TEST_F(RunTest, LiveOutputWithJsonKeepsStdoutOneDocument) {
  auto a = freeze("echo json-run-out; echo json-run-err >&2", kBackstop);
  Watched w(*this, run_args(*this, a, "json", {"--json"}));
  ASSERT_EQ(w.finish(), 0) << w.text;
  auto doc = nlohmann::json::parse(w.stdout_text(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << w.stdout_text();
  EXPECT_EQ(doc["state"], "built");
  EXPECT_EQ(doc["receipt_path"], state_ + "/results/json/receipt.json");
  EXPECT_FALSE(has(w.stdout_text(), "job|"));
  EXPECT_TRUE(has(w.text, "job| json-run-out\n")) << w.text;
  EXPECT_TRUE(has(w.text, "job| json-run-err\n")) << w.text;
  EXPECT_FALSE(has(w.text, "the job exited")) << "no human summary under --json";
}

}  // namespace
}  // namespace sealrun::testing
