// SPDX-License-Identifier: Apache-2.0
// Unit tests of the lookup half of learning: the traced calls' table (which argument is the path,
// the directory descriptor, the no-follow flag), the path arithmetic, the policy compiled with its
// traces, what lookups add to a closure on a temporary tree, the entries pinned places take over,
// what a view lacks — and the tracer itself on a real child process under a real seccomp filter
// (ptrace of one's own child needs no privilege).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "admission/document.h"
#include "containment/bwrap_argv.h"
#include "containment/seccomp_policy.h"
#include "containment/view_plan.h"
#include "learn/lookup_closure.h"
#include "learn/lookup_syscalls.h"
#include "learn/lookup_tracer.h"
#include "tests/support/temp_dir.h"

namespace sealrun::learn {
namespace {

namespace fs = std::filesystem;
using sealrun::testing::TempDir;
using sealrun::testing::write_text;

uint16_t data_of(const std::string& name) {
  for (const SyscallTrace& t : traced_syscalls(TraceSet::kProving))
    if (t.name == name) return t.data;
  ADD_FAILURE() << name << " is not traced";
  return 0;
}

TEST(LookupArgsTest, EachCallsPathDirfdAndFollowing) {
  constexpr uint64_t kCwd = static_cast<uint32_t>(AT_FDCWD);  // as a 32-bit job passes it
  struct Case {
    std::string call;
    std::array<uint64_t, 6> args;
    std::optional<int> dirfd;
    uint64_t path;
    bool follow;
    bool open;
  };
  const std::vector<Case> cases = {
      {"stat", {0x1000, 0, 0, 0, 0, 0}, std::nullopt, 0x1000, true, false},
      {"lstat", {0x1000, 0, 0, 0, 0, 0}, std::nullopt, 0x1000, false, false},
      {"stat64", {0x1000, 0, 0, 0, 0, 0}, std::nullopt, 0x1000, true, false},
      {"newfstatat", {5, 0x2000, 0, 0, 0, 0}, 5, 0x2000, true, false},
      {"newfstatat",
       {kCwd, 0x2000, 0, AT_SYMLINK_NOFOLLOW, 0, 0},
       std::nullopt,
       0x2000,
       false,
       false},
      {"newfstatat",
       {static_cast<uint64_t>(-100), 0x2000, 0, 0, 0, 0},
       std::nullopt,
       0x2000,
       true,
       false},
      {"statx", {7, 0x3000, AT_SYMLINK_NOFOLLOW, 0, 0, 0}, 7, 0x3000, false, false},
      {"statx", {7, 0x3000, 0, AT_SYMLINK_NOFOLLOW, 0, 0}, 7, 0x3000, true, false},  // mask
      {"access", {0x1000, 1, 0, 0, 0, 0}, std::nullopt, 0x1000, true, false},
      {"faccessat", {3, 0x1000, 1, AT_SYMLINK_NOFOLLOW, 0, 0}, 3, 0x1000, true, false},
      {"faccessat2", {3, 0x1000, 1, AT_SYMLINK_NOFOLLOW, 0, 0}, 3, 0x1000, false, false},
      {"readlink", {0x1000, 0, 0, 0, 0, 0}, std::nullopt, 0x1000, false, false},
      {"readlinkat", {4, 0x1000, 0, 0, 0, 0}, 4, 0x1000, false, false},
      {"chdir", {0x1000, 0, 0, 0, 0, 0}, std::nullopt, 0x1000, true, false},
      {"execve", {0x1000, 0, 0, 0, 0, 0}, std::nullopt, 0x1000, true, false},
      {"execveat", {9, 0x1000, 0, 0, AT_SYMLINK_NOFOLLOW, 0}, 9, 0x1000, false, false},
      {"open", {0x1000, O_RDONLY | O_NOFOLLOW, 0, 0, 0, 0}, std::nullopt, 0x1000, false, true},
      {"openat", {kCwd, 0x1000, O_PATH, 0, 0, 0}, std::nullopt, 0x1000, true, true},
      {"openat2", {6, 0x1000, 0x5000, 24, 0, 0}, 6, 0x1000, true, true},
  };
  for (const Case& c : cases) {
    auto got = lookup_args(data_of(c.call), c.args.data());
    ASSERT_TRUE(got.has_value()) << c.call;
    EXPECT_EQ(got->dirfd, c.dirfd) << c.call;
    EXPECT_EQ(got->path_address, c.path) << c.call;
    EXPECT_EQ(got->follow, c.follow) << c.call;
    EXPECT_EQ(got->open, c.open) << c.call;
  }
  uint64_t none[6] = {};
  EXPECT_FALSE(lookup_args(0, none)) << "0 is no traced call's data";
  EXPECT_FALSE(lookup_args(999, none));
}

TEST(TracedSyscallsTest, LearningTracesOnlyOPathOpensAndNoFstat) {
  auto find = [](TraceSet set, const std::string& name) {
    for (const SyscallTrace& t : traced_syscalls(set))
      if (t.name == name) return t;
    return SyscallTrace{};
  };
  EXPECT_TRUE(find(TraceSet::kProving, "openat").args.empty());
  ASSERT_EQ(find(TraceSet::kLearning, "openat").args.size(), 1u);
  EXPECT_EQ(find(TraceSet::kLearning, "openat").args[0].index, 2u);
  EXPECT_EQ(find(TraceSet::kLearning, "openat").args[0].value, static_cast<uint64_t>(O_PATH));
  EXPECT_EQ(find(TraceSet::kLearning, "open").args[0].index, 1u);
  // fstat() is newfstatat(fd, "", AT_EMPTY_PATH): not stopped.
  auto fstatat = find(TraceSet::kLearning, "newfstatat");
  ASSERT_EQ(fstatat.args.size(), 1u);
  EXPECT_EQ(fstatat.args[0].index, 3u);
  EXPECT_EQ(fstatat.args[0].mask, static_cast<uint64_t>(AT_EMPTY_PATH));
  EXPECT_EQ(fstatat.args[0].value, 0u);
  EXPECT_EQ(find(TraceSet::kLearning, "statx").args[0].index, 2u);
  for (TraceSet set : {TraceSet::kLearning, TraceSet::kProving}) {
    SeccompPolicy policy = job_seccomp_policy();
    policy.traces = traced_syscalls(set);
    auto bpf = compile_seccomp_bpf(policy);
    ASSERT_TRUE(bpf.ok()) << bpf.error().message();
    auto plain = compile_seccomp_bpf(job_seccomp_policy());
    ASSERT_TRUE(plain.ok());
    EXPECT_GT(bpf->size(), plain->size()) << "the traces are in the program";
  }
}

TEST(LookupPathTest, JoinedLexicalRecorded) {
  struct Case {
    std::string base, path, joined, lexical;
  };
  const std::vector<Case> cases = {
      {"/src", "/usr/bin/cc", "/usr/bin/cc", "/usr/bin/cc"},
      {"/src", "config.h", "/src/config.h", "/src/config.h"},
      {"/usr/share", "./cmake//Modules/", "/usr/share/cmake/Modules", "/usr/share/cmake/Modules"},
      {"/src/build", "../../usr/lib", "/src/build/../../usr/lib", "/usr/lib"},
      {"/", "..", "/..", "/"},
      {"/usr", ".", "/usr", "/usr"},
      {"/x", "", "", "/"},
      {"/x", "...", "/x/...", "/x/..."},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(joined_lookup_path(c.base, c.path), c.joined) << c.base << " + " << c.path;
    if (!c.joined.empty()) {
      EXPECT_EQ(lexical_path(c.joined), c.lexical) << c.joined;
    }
  }
  const std::vector<std::string> roots = {"/usr", "/etc"};
  // ".." after a host tree: the host resolves it as the job's kernel did (links included).
  EXPECT_EQ(recorded_lookup_path("/usr/lib/../share/x", roots), "/usr/lib/../share/x");
  // ".." out of the job's own /src: what the text says, not what the host's /src holds.
  EXPECT_EQ(recorded_lookup_path("/src/build/../../usr/lib", roots), "/usr/lib");
  EXPECT_EQ(recorded_lookup_path("/usr/x/...", roots), "/usr/x/...");
  EXPECT_EQ(recorded_lookup_path("/src/.../x", roots), "/src/.../x");
}

TEST(LookupPathTest, RecordableWithinRootsOutsideTheJobsPlaces) {
  const std::vector<std::string> roots = {"/usr", "/etc"};
  const std::vector<std::string> excluded = {"/usr/share/cmake-3.25", "/src", "/proc"};
  struct Case {
    std::string path;
    bool kept;
  };
  for (const Case& c : std::vector<Case>{{"/usr/bin/cc", true},
                                         {"/usr", true},
                                         {"/", false},
                                         {"/usrx/bin", false},
                                         {"/usr/share/cmake-3.25/Modules/CMake.cmake", false},
                                         {"/usr/share/cmake-3.25", false},
                                         {"/usr/share/cmake", true},
                                         {"/src/../usr/bin/cc", true},
                                         {"/usr/../src/x", false},
                                         {"/home/me/.profile", false},
                                         {"relative", false},
                                         {"", false}})
    EXPECT_EQ(lookup_recordable(c.path, roots, excluded), c.kept) << c.path;
}

// A tree standing for a host: root/{bin -> usr/bin (absolute), usr/bin/tool-1, usr/bin/tool ->
// tool-1, usr/share/data/, usr/share/empty/, etc/alt -> ../usr/bin/tool}.
class LookupClosureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    r_ = fs::canonical(t_.path()).string();
    fs::create_directories(r_ + "/usr/bin");
    fs::create_directories(r_ + "/usr/share/data/sub");
    fs::create_directories(r_ + "/usr/share/empty");
    fs::create_directories(r_ + "/etc");
    write_text(r_ + "/usr/bin/tool-1", "tool");
    write_text(r_ + "/usr/share/data/sub/f", "f");
    fs::create_symlink("tool-1", r_ + "/usr/bin/tool");
    fs::create_symlink(r_ + "/usr/bin", r_ + "/bin");
    fs::create_symlink("../usr/bin/tool", r_ + "/etc/alt");
    roots_ = {r_ + "/usr", r_ + "/etc", r_ + "/bin"};
  }
  TempDir t_;
  std::string r_;
  std::vector<std::string> roots_;
};

TEST_F(LookupClosureTest, FilesByContentLinksByTargetDirectoriesAsDirectoriesAbsentAsNothing) {
  ObservedLookups looked;
  looked.followed = {r_ + "/etc/alt", r_ + "/usr/share/empty", r_ + "/usr/bin/absent",
                     r_ + "/usr/share/data/sub/f"};
  looked.unfollowed = {r_ + "/usr/bin/tool"};
  Closure c;
  ASSERT_TRUE(add_lookups(looked, roots_, {}, 100, &c).ok());
  EXPECT_EQ(c.files,
            (std::vector<std::string>{r_ + "/usr/bin/tool-1", r_ + "/usr/share/data/sub/f"}));
  EXPECT_EQ(c.dirs, (std::vector<std::string>{r_ + "/usr/share/empty"}));
  std::vector<HostLink> links = {{r_ + "/etc/alt", "../usr/bin/tool"},
                                 {r_ + "/usr/bin/tool", "tool-1"}};
  EXPECT_EQ(c.links, links);
}

TEST_F(LookupClosureTest, AnUnfollowedLinkIsPinnedWithoutItsTarget) {
  ObservedLookups looked;
  looked.unfollowed = {r_ + "/bin/tool"};  // lstat through the directory link /bin
  Closure c;
  ASSERT_TRUE(add_lookups(looked, roots_, {}, 100, &c).ok());
  EXPECT_TRUE(c.files.empty());
  std::vector<HostLink> links = {{r_ + "/bin", r_ + "/usr/bin"}, {r_ + "/usr/bin/tool", "tool-1"}};
  EXPECT_EQ(c.links, links);
}

TEST_F(LookupClosureTest, ExcludedPlacesAndTheFileLimit) {
  ObservedLookups looked;
  looked.followed = {r_ + "/usr/share/data/sub/f", r_ + "/usr/bin/tool-1"};
  Closure c;
  ASSERT_TRUE(add_lookups(looked, roots_, {r_ + "/usr/share/data"}, 100, &c).ok());
  EXPECT_EQ(c.files, (std::vector<std::string>{r_ + "/usr/bin/tool-1"}));
  Closure d;
  auto st = add_lookups(looked, roots_, {}, 1, &d);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("--learn-max-files"), std::string::npos);
}

TEST(DropUnderPlacesTest, PinnedPlacesWinOverTheClosure) {
  Closure c;
  c.files = {"/usr/bin/cmake", "/usr/share/cmake-3.25/Modules/CMake.cmake",
             "/usr/share/cmake-3.25x"};
  c.dirs = {"/usr/share", "/usr/share/cmake-3.25", "/usr/share/cmake-3.25/Modules"};
  c.links = {{"/usr/share/cmake-3.25/x", "y"}, {"/usr/share/alias", "cmake-3.25"}, {"/usr", "z"}};
  EXPECT_EQ(drop_under_places({"/usr/share/cmake-3.25"}, &c), 5u);
  EXPECT_EQ(c.files, (std::vector<std::string>{"/usr/bin/cmake", "/usr/share/cmake-3.25x"}));
  EXPECT_EQ(c.dirs, (std::vector<std::string>{"/usr/share"}));
  // The link above the place (/usr) would hide it; the one beside it stays.
  EXPECT_EQ(c.links, (std::vector<HostLink>{{"/usr/share/alias", "cmake-3.25"}}));
}

TEST_F(LookupClosureTest, LackingInViewNamesWhatExistsButIsNotShown) {
  ObservedLookups looked;
  looked.followed = {r_ + "/etc/alt", r_ + "/usr/share/data", r_ + "/usr/share/empty",
                     r_ + "/usr/bin/absent", r_ + "/usr/share/data/sub/f"};
  Closure c;
  c.files = {r_ + "/usr/share/data/sub/f"};
  auto lacking = lacking_in_view(looked, roots_, {}, c);
  std::vector<std::string> want = {
      r_ + "/etc/alt",
      r_ + "/etc/alt (-> " + r_ + "/usr/bin/tool-1)",
      r_ + "/etc/alt (the link " + r_ + "/usr/bin/tool)",
      r_ + "/usr/share/empty",
  };
  EXPECT_EQ(lacking, want) << "data is there (a file below it is), absent needs nothing";
  // Below a place everything is shown.
  EXPECT_EQ(lacking_in_view(looked, roots_, {r_ + "/etc", r_ + "/usr"}, c),
            std::vector<std::string>{});
}

// The tracer on a real child under the traced policy: the child waits on a pipe, installs the
// compiled filter (no_new_privs, as bwrap does) and execs a shell that looks paths up.
TEST(LookupTracerTest, SeesStatAccessReadlinkAndRelativeLookupsOfARealChild) {
  TempDir t;
  const std::string r = fs::canonical(t.path()).string();
  fs::create_directories(r + "/dir");
  write_text(r + "/present", "x");
  fs::create_symlink("present", r + "/link");
  SeccompPolicy policy = job_seccomp_policy();
  policy.traces = traced_syscalls(TraceSet::kLearning);
  auto bpf = compile_seccomp_bpf(policy);
  ASSERT_TRUE(bpf.ok()) << bpf.error().message();
  struct sock_fprog prog = {static_cast<unsigned short>(bpf->size() / sizeof(struct sock_filter)),
                            reinterpret_cast<struct sock_filter*>(bpf->data())};
  const std::string script = "test -f " + r + "/present; test -e " + r + "/absent; [ -d " + r +
                             "/dir ]; test -L " + r + "/link; cd " + r +
                             "/dir && test -r ../present && echo ok";
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  const char* envp[] = {"PATH=/usr/bin:/bin", nullptr};
  int gate[2], out[2];
  ASSERT_EQ(::pipe2(gate, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  auto tracer = LookupTracer::create({{r}, {r + "/excluded"}, 1000});
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char b;
    if (::read(gate[0], &b, 1) != 1) ::_exit(120);
    if (::dup2(out[1], 1) != 1) ::_exit(124);
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ::_exit(121);
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) ::_exit(122);
    ::execve(argv[0], const_cast<char**>(argv), const_cast<char**>(envp));
    ::_exit(123);
  }
  ::close(gate[0]);
  ::close(out[1]);
  ASSERT_TRUE(tracer->attach(child).ok());
  ASSERT_EQ(::write(gate[1], "x", 1), 1);
  ::close(gate[1]);
  ObservedLookups seen = tracer->finish();  // returns once the child has exited
  // The tracer thread shares this process, so its wait reaped the child (the kernel lets a tracer
  // in the real parent's thread group do that); the child's output says how it went.
  int status = 0;
  (void)::waitpid(child, &status, WNOHANG);
  char buf[64] = {};
  ssize_t n = ::read(out[0], buf, sizeof buf - 1);
  ::close(out[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "ok\n")
      << "every traced call ran as without a tracer (none failed with ENOSYS)";
  EXPECT_FALSE(seen.incomplete) << *seen.incomplete;
  EXPECT_GT(seen.stops, 0u);
  for (const std::string& p : {r + "/present", r + "/absent", r + "/dir", r + "/dir/../present"})
    EXPECT_EQ(seen.followed.count(p), 1u) << p;
  EXPECT_EQ(seen.unfollowed.count(r + "/link"), 1u) << "test -L is an lstat";
}

// host_dirs in the view: a directory made in bwrap's empty root (--dir), recorded as kind dir with
// a pin, absent from an image root, and refused by the admission at or below another place.
TEST(ClosureDirsTest, ADirectoryOfTheViewIsBwrapsDirAndOnlyWhereItCanBeMade) {
  Grant g;
  g.spec.run_id = "r";
  g.spec.argv = {"/bin/true"};
  g.spec.files_and_links.push_back(
      {"/usr/share/empty", ViewKind::kDir, {}, "directory", false, {}, -1});
  EXPECT_TRUE(validate_spec(g.spec).ok()) << validate_spec(g.spec).error().message();
  auto argv = build_bwrap_argv("/usr/bin/bwrap", g, BwrapFds{});
  auto it = std::find(argv.begin(), argv.end(), "--dir");
  ASSERT_NE(it, argv.end());
  EXPECT_EQ(*(it + 1), "/usr/share/empty");
  EXPECT_EQ(view_kind_name(ViewKind::kDir), "dir");
  size_t in_image = 0;
  for (const ViewEntry& e : plan_view(g.spec, ViewRoot::kImage))
    in_image += e.kind == ViewKind::kDir ? 1 : 0;
  EXPECT_EQ(in_image, 0u);
  g.spec.files_and_links.back().writable = true;
  EXPECT_FALSE(validate_spec(g.spec).ok());

  const std::string a(64, 'a');
  nlohmann::json j = {
      {"schema", "sealrun-admission-v1"},
      {"command", {{"argv", {"/bin/sh", "-c", "true"}}}},
      {"source",
       {{"kind", "tree"},
        {"path", "/srv/src"},
        {"manifest", nlohmann::json::array()},
        {"manifest_sha256", a}}},
      {"toolchain", {{"root", "/opt/tc"}, {"tree_sha256", a}}},
      {"trees", {{{"host_path", "/x"}, {"job_path", "/usr/share/t"}, {"tree_sha256", a}}}}};
  struct Case {
    std::string dir;
    const char* problem;  // nullptr: accepted
  };
  for (const Case& c : std::vector<Case>{{"/usr/share", nullptr},
                                         {"/usr/share/tx", nullptr},
                                         {"/usr/share/t", "lies at or below trees[0].job_path"},
                                         {"/usr/share/t/m", "lies at or below trees[0].job_path"},
                                         {"/src/x", "lies at or below mounts.source"},
                                         {"/proc/1", "below /proc"}}) {
    j["host_dirs"] = {c.dir};
    auto doc = admission::parse_admission_json(j);
    if (c.problem == nullptr) {
      EXPECT_TRUE(doc.ok()) << c.dir << ": " << doc.error().message();
    } else {
      ASSERT_FALSE(doc.ok()) << c.dir;
      EXPECT_NE(doc.error().message().find(c.problem), std::string::npos)
          << c.dir << ": " << doc.error().message();
    }
  }
}

}  // namespace
}  // namespace sealrun::learn
