// SPDX-License-Identifier: Apache-2.0
// Unit tests of git source identity/export (a real git repository made in a temp dir, real bundles)
// and of per-file manifests: building, canonical bytes, strict parsing of hostile manifests, and
// verification against trees that were altered, extended, or made to pass through symlinks.
#include "fingerprint/source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "fingerprint/file_hash.h"
#include "tests/support/temp_dir.h"

namespace sealrun {
namespace {

namespace fs = std::filesystem;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

// Runs a shell command for test setup; its output, or a test failure.
std::string sh(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(("set -e; " + cmd).c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen " << cmd;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  EXPECT_EQ(rc, 0) << cmd;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

const char* kGit =
    "git -c user.name=t -c user.email=t@example.org -c init.defaultBranch=main -c "
    "core.safecrlf=false";

// A repository with two commits, a symlink, an executable, and traps: attributes that would
// rewrite content (eol=crlf, a smudge filter defined in the repo's config) and a post-checkout
// hook.
struct Repo {
  TempDir dir;
  std::string path, first_commit, first_tree, commit, tree;
  Repo() {
    path = dir / "repo";
    sh(std::string(kGit) + " init -q " + path);
    write_text(path + "/a.txt", "first\n");
    sh(std::string(kGit) + " -C " + path + " add -A && " + kGit + " -C " + path +
       " commit -qm one");
    first_commit = sh("git -C " + path + " rev-parse HEAD");
    first_tree = sh("git -C " + path + " rev-parse HEAD^{tree}");
    write_text(path + "/a.txt", "alpha\nbeta\n");
    fs::create_directories(path + "/dir");
    write_text(path + "/dir/b.txt", "bee\n");
    write_text(path + "/run.sh", "#!/bin/sh\necho hi\n");
    ::chmod((path + "/run.sh").c_str(), 0755);
    fs::create_symlink("a.txt", path + "/link");
    write_text(path + "/.gitattributes", "* text eol=crlf\n*.txt filter=evil ident\n");
    sh(std::string(kGit) + " -C " + path + " add -A && " + kGit + " -C " + path +
       " commit -qm two");
    commit = sh("git -C " + path + " rev-parse HEAD");
    tree = sh("git -C " + path + " rev-parse HEAD^{tree}");
    sh("git -C " + path + " config filter.evil.smudge 'sh -c \"touch " + (dir / "filter-ran") +
       "; cat\"'");
    write_text(path + "/.git/hooks/post-checkout", "#!/bin/sh\ntouch " + (dir / "hook-ran") + "\n");
    ::chmod((path + "/.git/hooks/post-checkout").c_str(), 0755);
  }
};

TEST(GitSource, ReadsCommitAndTreeOfARepository) {
  Repo r;
  auto id = read_git_identity(r.path);
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(id->commit, r.commit);
  EXPECT_EQ(id->tree, r.tree);
  auto first = read_git_identity(r.path, "HEAD~1");
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(first->commit, r.first_commit);
  EXPECT_EQ(first->tree, r.first_tree);
}

TEST(GitSource, CallerEnvironmentDoesNotLeakIntoGit) {
  Repo r;
  Repo other;
  ::setenv("GIT_DIR", (other.path + "/.git").c_str(), 1);
  ::setenv("GIT_CONFIG_PARAMETERS", "'core.hooksPath'='/tmp'", 1);
  auto id = read_git_identity(r.path);
  ::unsetenv("GIT_DIR");
  ::unsetenv("GIT_CONFIG_PARAMETERS");
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(id->commit, r.commit);
}

TEST(GitSource, BadRevisionsAndNonRepositoriesAreRefused) {
  Repo r;
  EXPECT_FALSE(read_git_identity(r.path, "--all").ok());
  EXPECT_FALSE(read_git_identity(r.path, "no-such-branch").ok());
  EXPECT_FALSE(read_git_identity(r.dir / "nowhere").ok());
  TempDir empty;
  EXPECT_FALSE(read_git_identity(empty.str()).ok());
}

TEST(GitSource, ExportIsTheCommittedBytesWithoutHooksFiltersOrGitDir) {
  Repo r;
  TempDir templ;  // a template dir with an active hook, offered through the caller's environment
  fs::create_directories(templ / "hooks");
  write_text(templ / "hooks/post-checkout",
             "#!/bin/sh\ntouch " + (r.dir / "template-hook-ran") + "\n");
  ::chmod((templ / "hooks/post-checkout").c_str(), 0755);
  ::setenv("GIT_TEMPLATE_DIR", templ.str().c_str(), 1);
  std::string dest = r.dir / "export";
  auto st = export_git_commit(r.path, r.commit, r.tree, dest);
  ::unsetenv("GIT_TEMPLATE_DIR");
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(read_text(dest + "/a.txt"), "alpha\nbeta\n");  // no CRLF, no filter, no ident
  EXPECT_EQ(read_text(dest + "/dir/b.txt"), "bee\n");
  EXPECT_TRUE(fs::is_symlink(dest + "/link"));
  EXPECT_EQ(fs::read_symlink(dest + "/link"), "a.txt");
  struct stat sb {};
  ASSERT_EQ(::stat((dest + "/run.sh").c_str(), &sb), 0);
  EXPECT_NE(sb.st_mode & S_IXUSR, 0u);
  ASSERT_EQ(::stat((dest + "/a.txt").c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & S_IXUSR, 0u);
  EXPECT_FALSE(fs::exists(dest + "/.git"));
  EXPECT_FALSE(fs::exists(r.dir / "hook-ran"));
  EXPECT_FALSE(fs::exists(r.dir / "template-hook-ran"));
  EXPECT_FALSE(fs::exists(r.dir / "filter-ran"));
  // The source repository's own work tree and HEAD are untouched.
  EXPECT_EQ(sh("git -C " + r.path + " rev-parse HEAD"), r.commit);
}

// git refuses to run in a repository owned by someone else ("dubious ownership"); reading one
// must still work, because nothing is run inside it (identity by --git-dir, export by alternates).
TEST(GitSource, RepositoryOwnedByAnotherUser) {
  Repo r;
  sh("chown -R 12345:12345 " + r.path);
  auto id = read_git_identity(r.path);
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(id->commit, r.commit);
  std::string dest = r.dir / "export";
  auto st = export_git_commit(r.path, r.commit, r.tree, dest);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(read_text(dest + "/dir/b.txt"), "bee\n");
  EXPECT_FALSE(fs::exists(r.dir / "hook-ran"));
}

TEST(GitSource, ExportOfAnOlderCommit) {
  Repo r;
  std::string dest = r.dir / "old";
  auto st = export_git_commit(r.path, r.first_commit, r.first_tree, dest);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(read_text(dest + "/a.txt"), "first\n");
  EXPECT_FALSE(fs::exists(dest + "/dir"));
}

TEST(GitSource, WrongExpectedTreeIsRefusedAndNothingIsLeft) {
  Repo r;
  std::string dest = r.dir / "export";
  auto st = export_git_commit(r.path, r.commit, r.first_tree, dest);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("tree mismatch"), std::string::npos) << st.error().message();
  EXPECT_FALSE(fs::exists(dest));
  // An abbreviated commit is not a pin.
  EXPECT_FALSE(export_git_commit(r.path, r.commit.substr(0, 12), r.tree, dest).ok());
}

TEST(GitSource, ExistingDestinationIsRefused) {
  Repo r;
  fs::create_directories(r.dir / "taken");
  auto st = export_git_commit(r.path, r.commit, r.tree, r.dir / "taken");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("already exists"), std::string::npos);
}

TEST(GitSource, BundleIdentityAndExport) {
  Repo r;
  std::string bundle = r.dir / "src.bundle";
  sh("git -C " + r.path + " bundle create " + bundle + " HEAD main 2>/dev/null");
  auto id = read_git_identity(bundle);
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(id->commit, r.commit);
  EXPECT_EQ(id->tree, r.tree);
  std::string dest = r.dir / "from-bundle";
  auto st = export_git_commit(bundle, r.commit, r.tree, dest);
  ASSERT_TRUE(st.ok()) << st.error().message();
  EXPECT_EQ(read_text(dest + "/a.txt"), "alpha\nbeta\n");
  EXPECT_FALSE(export_git_commit(bundle, r.commit, r.first_tree, r.dir / "again").ok());
}

TEST(GitSource, IncompleteOrCorruptBundleIsRefused) {
  Repo r;
  std::string thin = r.dir / "thin.bundle";
  sh("git -C " + r.path + " bundle create " + thin + " HEAD~1..main 2>/dev/null");
  auto id = read_git_identity(thin);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message().find("verify bundle"), std::string::npos) << id.error().message();
  write_text(r.dir / "junk.bundle", "# v2 git bundle\nnot really\n");
  EXPECT_FALSE(read_git_identity(r.dir / "junk.bundle").ok());
}

// --- manifests ---

Manifest sample_manifest(const std::string& root) {
  auto m = build_manifest(root);
  EXPECT_TRUE(m.ok()) << m.error().message();
  return m.ok() ? *m : Manifest{};
}

TEST(Manifest, BuildIsSortedByRawBytesAndCanonical) {
  TempDir t;
  fs::create_directories(t / "d");
  write_text(t / "d/e", "de");
  write_text(t / "d-e", "d-e");
  write_text(t / "a", "");
  write_text(t / "\xc3\xa9t\xc3\xa9", "summer");
  auto m = sample_manifest(t.str());
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].path, "a");
  EXPECT_EQ(m[1].path, "d-e");  // '-' (0x2d) sorts before '/' (0x2f)
  EXPECT_EQ(m[2].path, "d/e");
  EXPECT_EQ(m[3].path, "\xc3\xa9t\xc3\xa9");
  std::string jsonl = manifest_to_jsonl(m);
  EXPECT_EQ(jsonl.substr(0, jsonl.find('\n') + 1),
            "{\"path\":\"a\",\"bytes\":0,\"sha256\":"
            "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}\n");
  auto parsed = parse_manifest(jsonl);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(manifest_to_jsonl(*parsed), jsonl);
}

// The fast writer and reader must agree byte for byte with nlohmann's spelling of a JSON string.
TEST(Manifest, EscapesMatchNlohmannAndRoundTrip) {
  std::string sha(64, 'b');
  Manifest m;
  for (std::string p :
       {std::string("a\"b"), std::string("back\\slash"), std::string("c\x01\x1f\x7f"),
        std::string("tab\tnl\ncr\r"), std::string("\xe2\x82\xac/\xf0\x9f\x98\x80")}) {
    m.push_back({p, 7, sha});
  }
  std::sort(m.begin(), m.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  std::string jsonl = manifest_to_jsonl(m);
  std::string expected;
  for (const auto& e : m)
    expected +=
        "{\"path\":" + nlohmann::json(e.path).dump() + ",\"bytes\":7,\"sha256\":\"" + sha + "\"}\n";
  EXPECT_EQ(jsonl, expected);
  auto back = parse_manifest(jsonl);
  ASSERT_TRUE(back.ok()) << back.error().message();
  ASSERT_EQ(back->size(), m.size());
  for (size_t i = 0; i < m.size(); ++i) EXPECT_EQ((*back)[i].path, m[i].path);
  // Valid JSON, same value, other spellings: refused as non-canonical.
  EXPECT_FALSE(
      parse_manifest("{\"path\":\"\\u0009\",\"bytes\":7,\"sha256\":\"" + sha + "\"}\n").ok());
  EXPECT_FALSE(
      parse_manifest("{\"path\":\"a\\/b\",\"bytes\":7,\"sha256\":\"" + sha + "\"}\n").ok());
  EXPECT_FALSE(parse_manifest("{\"path\":\"a\",\"bytes\":07,\"sha256\":\"" + sha + "\"}\n").ok());
  EXPECT_FALSE(
      parse_manifest("{\"path\":\"\\u001F\",\"bytes\":7,\"sha256\":\"" + sha + "\"}\n").ok());
}

TEST(Manifest, BuildRefusesSymlinksAndSpecialFilesByName) {
  TempDir t;
  write_text(t / "a", "x");
  fs::create_symlink("/", t / "root-link");
  auto m = build_manifest(t.str());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("root-link is a symlink"), std::string::npos)
      << m.error().message();
  TempDir f;
  ASSERT_EQ(::mkfifo((f / "pipe").c_str(), 0600), 0);
  auto fm = build_manifest(f.str());
  ASSERT_FALSE(fm.ok());
  EXPECT_NE(fm.error().message().find("pipe is a FIFO"), std::string::npos);
}

std::string line(const std::string& path, uint64_t bytes = 1,
                 const std::string& sha = std::string(64, 'a')) {
  return "{\"path\":\"" + path + "\",\"bytes\":" + std::to_string(bytes) + ",\"sha256\":\"" + sha +
         "\"}\n";
}

TEST(Manifest, ParseRefusesHostileAndMalformedInput) {
  struct Case {
    std::string input, why;
  };
  std::string sha = std::string(64, 'a');
  std::vector<Case> cases = {
      {line("../../etc/passwd"), "'..'"},
      {line("/etc/passwd"), "absolute"},
      {line("a/../b"), "'..'"},
      {line("a/./b"), "'.' component"},
      {line("./a"), "'.' component"},
      {line("a//b"), "empty component"},
      {line("a/"), "empty component"},
      {line(""), "empty path"},
      {line("a\\u0000b"), "NUL"},
      {line("a") + line("a"), "duplicate"},
      {line("b") + line("a"), "out of order"},
      {"{\"path\":\"a\",\"bytes\":1,\"sha256\":\"" + sha + "\",\"mode\":420}\n", "unknown key"},
      {"{\"path\":\"a\",\"bytes\":\"1\",\"sha256\":\"" + sha + "\"}\n", "\"bytes\""},
      {"{\"path\":\"a\",\"bytes\":-1,\"sha256\":\"" + sha + "\"}\n", "\"bytes\""},
      {line("a", 1, std::string(64, 'A')), "\"sha256\""},
      {"{\"path\":\"a\",\"path\":\"b\",\"bytes\":1,\"sha256\":\"" + sha + "\"}\n", "duplicate key"},
      {"{\"bytes\":1,\"path\":\"a\",\"sha256\":\"" + sha + "\"}\n", "canonical"},
      {"{\"path\": \"a\",\"bytes\":1,\"sha256\":\"" + sha + "\"}\n", "canonical"},
      {"{\"path\":\"\\u0061\",\"bytes\":1,\"sha256\":\"" + sha + "\"}\n", "canonical"},
      {line("a").substr(0, 20), "no final newline"},
      {line("a").substr(0, line("a").size() - 1), "no final newline"},
      {"[1]\n", "not a JSON object"},
      {"\n", "truncated document"},
  };
  for (const auto& c : cases) {
    auto m = parse_manifest(c.input);
    ASSERT_FALSE(m.ok()) << c.input;
    EXPECT_NE(m.error().message().find(c.why), std::string::npos)
        << c.input << " -> " << m.error().message();
  }
  auto too_many = parse_manifest(line("a") + line("b") + line("c"), 2);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message().find("more than 2"), std::string::npos);
  EXPECT_TRUE(parse_manifest(line("a") + line("b"), 2).ok());
  EXPECT_TRUE(parse_manifest("").ok());
}

TEST(Manifest, VerifyMatchesAnUnchangedTree) {
  TempDir t;
  fs::create_directories(t / "src/sub");
  write_text(t / "src/main.c", "int main(void) { return 0; }\n");
  write_text(t / "src/sub/x.h", "#define X 1\n");
  auto m = sample_manifest(t / "src");
  auto r = verify_manifest(t / "src", m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(r->empty());
}

TEST(Manifest, OneAlteredByteExtraFileAndMissingFileAreNamed) {
  TempDir t;
  fs::create_directories(t / "src/sub");
  write_text(t / "src/main.c", "int main(void) { return 0; }\n");
  write_text(t / "src/sub/x.h", "#define X 1\n");
  write_text(t / "src/gone", "soon gone\n");
  auto m = sample_manifest(t / "src");
  write_text(t / "src/sub/x.h", "#define X 2\n");
  write_text(t / "src/extra", "not listed\n");
  fs::remove(t / "src/gone");
  auto r = verify_manifest(t / "src", m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].path, "extra");
  EXPECT_EQ((*r)[0].expected, "absent");
  EXPECT_EQ((*r)[1].path, "gone");
  EXPECT_EQ((*r)[1].observed, "absent");
  EXPECT_EQ((*r)[2].path, "sub/x.h");
  EXPECT_NE((*r)[2].expected, (*r)[2].observed);
  EXPECT_EQ((*r)[2].observed.substr(0, 7), "sha256:");
}

TEST(Manifest, PathThroughASymlinkToRootIsAMismatchNotARead) {
  TempDir t;
  fs::create_directories(t / "src");
  fs::create_symlink("/", t / "src/link");
  // The manifest names the real /etc/passwd digest, so following the link would "match".
  auto passwd = hash_file("/etc/passwd");
  ASSERT_TRUE(passwd.ok());
  Manifest m = {{"link/etc/passwd", passwd->bytes, passwd->sha256}};
  auto r = verify_manifest(t / "src", m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].path, "link");  // the link itself is unlisted
  EXPECT_EQ((*r)[0].observed, "a symlink");
  EXPECT_EQ((*r)[1].path, "link/etc/passwd");
  EXPECT_EQ((*r)[1].observed, "passes through a symlink at link");
}

TEST(Manifest, RootThatIsASymlinkIsRefused) {
  TempDir t;
  fs::create_directories(t / "real");
  fs::create_symlink(t / "real", t / "link");
  auto m = build_manifest(t / "link");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("is a symlink"), std::string::npos) << m.error().message();
  EXPECT_FALSE(verify_manifest(t / "link", {}).ok());
}

TEST(Manifest, FinalSymlinkIsAMismatch) {
  TempDir t;
  fs::create_directories(t / "src");
  write_text(t / "target", "same bytes\n");
  auto digest = hash_file(t / "target");
  ASSERT_TRUE(digest.ok());
  fs::create_symlink(t / "target", t / "src/file");
  Manifest m = {{"file", digest->bytes, digest->sha256}};
  auto r = verify_manifest(t / "src", m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].observed, "a symlink");
}

TEST(Manifest, ExportedCheckoutMatchesItsManifest) {
  Repo r;
  std::string dest = r.dir / "export";
  ASSERT_TRUE(export_git_commit(r.path, r.first_commit, r.first_tree, dest).ok());
  auto m = sample_manifest(dest);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].path, "a.txt");
  auto v = verify_manifest(dest, m);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->empty());
}

}  // namespace
}  // namespace sealrun
