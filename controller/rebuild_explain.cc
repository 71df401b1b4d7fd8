// SPDX-License-Identifier: Apache-2.0
// --explain: see rebuild_explain.h. The outputs are the job's: each is opened below its run's
// out/ with openat2 (no link, no escape), and diffoscope, itself a large parser of hostile
// formats, runs as the unprivileged job user on those descriptors, never as root on paths.
#include "controller/rebuild_explain.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "controller/display_text.h"
#include "core/beneath.h"
#include "core/job_user.h"
#include "core/process.h"
#include "core/syscall.h"
#include "core/temp_dir.h"

namespace sealrun::run {

using nlohmann::json;

namespace {

// The first offset where the two files differ (or where the shorter one ends), and the 16 bytes
// from there on each side in hex. Reads both once, 64 KiB at a time.
json first_difference(int fa, int fb) {
  constexpr size_t kChunk = 64 * 1024;
  std::string a(kChunk, '\0'), b(kChunk, '\0');
  uint64_t offset = 0;
  for (;;) {
    ssize_t na = ::pread(fa, a.data(), kChunk, static_cast<off_t>(offset));
    ssize_t nb = ::pread(fb, b.data(), kChunk, static_cast<off_t>(offset));
    if (na < 0 || nb < 0) return {{"error", "read failed"}};
    size_t n = static_cast<size_t>(std::min(na, nb));
    size_t i = 0;
    while (i < n && a[i] == b[i]) ++i;
    if (i < n || na != nb) {
      auto hex = [&](const std::string& s, ssize_t len) {
        std::string out;
        for (size_t k = i; k < static_cast<size_t>(len) && k < i + 16; ++k)
          out += fmt::format("{:02x}", static_cast<unsigned char>(s[k]));
        return out;
      };
      return {{"first_difference", offset + i}, {"a_bytes", hex(a, na)}, {"b_bytes", hex(b, nb)}};
    }
    if (na == 0) return {{"first_difference", nullptr}};  // same bytes: only the record differs
    offset += n;
  }
}

uint64_t size_of(int fd) {
  off_t end = ::lseek(fd, 0, SEEK_END);
  return end < 0 ? 0 : static_cast<uint64_t>(end);
}

// A copy of what `fd` holds at `path` (made 0644, owned by `user` when dropping to it).
Status copy_out(int fd, const std::string& path, const std::optional<JobUser>& user) {
  auto out = SEALRUN_TRY(open_at(AT_FDCWD, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644));
  char buf[65536];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n < 0) return Error::from_errno("read an output to explain");
    if (n == 0) break;
    if (::write(out.get(), buf, static_cast<size_t>(n)) != n)
      return Error::from_errno("copy " + path);
    at += n;
  }
  if (user && ::fchown(out.get(), user->uid, user->gid) != 0) return Error::from_errno(path);
  return ok_status();
}

// diffoscope's text report of the pair, as the job user, bounded in time and size. It reads
// copies in a fresh directory of its own under /tmp (named like the output, since diffoscope
// tells formats apart partly by name): a path through /dev/fd would show it a symlink.
Result<std::string> diffoscope_report(const std::string& program, int fa, int fb,
                                      const std::string& name) {
  std::optional<JobUser> user;
  if (::geteuid() == 0) user = SEALRUN_TRY(lookup_job_user(kDefaultJobUser));
  char templ[] = "/tmp/sealrun-explain-XXXXXX";
  if (::mkdtemp(templ) == nullptr) return Error::from_errno("make a directory for diffoscope");
  std::string dir = templ;
  struct Remove {
    std::string path;
    ~Remove() { remove_tree_forcibly(path); }
  } remove{dir};
  size_t slash = name.rfind('/');
  std::string base = slash == std::string::npos ? name : name.substr(slash + 1);
  for (const char* side : {"/a", "/b"}) {
    if (::mkdir((dir + side).c_str(), 0755) != 0) return Error::from_errno("mkdir " + dir + side);
    if (user && ::chown((dir + side).c_str(), user->uid, user->gid) != 0)
      return Error::from_errno(dir + side);
  }
  SEALRUN_TRY(copy_out(fa, dir + "/a/" + base, user));
  SEALRUN_TRY(copy_out(fb, dir + "/b/" + base, user));
  if (user && ::chown(dir.c_str(), user->uid, user->gid) != 0) return Error::from_errno(dir);
  SpawnOptions o;
  o.argv = {program,     "--no-progress",     "--text",
            "-",         "--max-report-size", std::to_string(kExplainReportBytes),
            "a/" + base, "b/" + base};
  o.env = std::vector<std::string>{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "HOME=/nonexistent"};
  o.cwd = dir;
  o.new_session = true;
  o.die_with_parent = true;
  if (user) {
    o.uid = user->uid;
    o.gid = user->gid;
  }
  auto c = SEALRUN_TRY(run_capture(o, kExplainTimeoutMs, kExplainReportBytes));
  // diffoscope exits 1 when the files differ: that is its report, not a failure.
  if (c.status.code != 0 && c.status.code != 1)
    return Error::make(
        fmt::format("diffoscope {}: {}", c.status.describe(), display::escape_cut(c.err, 400)));
  return c.out;
}

}  // namespace

json explain_changes(const std::vector<receipt::OutputChange>& changes,
                     const std::string& original_root, const std::string& rebuilt_root) {
  json out = json::array();
  auto diffoscope = find_program("diffoscope");
  auto a_out = open_at(AT_FDCWD, original_root + "/out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  auto b_out = open_at(AT_FDCWD, rebuilt_root + "/out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  auto rebuilt_dir = open_at(AT_FDCWD, rebuilt_root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  size_t n = 0;
  for (const auto& c : changes) {
    json e = {{"path", display::escape(c.name)}, {"change", receipt::change_kind_name(c.kind)}};
    bool files = c.kind == receipt::OutputChange::Kind::kChanged && !c.a.contains("kind") &&
                 !c.b.contains("kind");  // files carry no kind
    if (!files) {
      e["how"] = "none";
      e["note"] = "only a file present on both sides has content to compare";
      out.push_back(std::move(e));
      continue;
    }
    if (!a_out || !b_out) {
      e["how"] = "none";
      e["note"] = fmt::format("the outputs are not on disk any more ({})",
                              (!a_out ? a_out.error() : b_out.error()).message());
      out.push_back(std::move(e));
      continue;
    }
    auto fa = open_beneath(a_out->get(), c.name, O_RDONLY);
    auto fb = open_beneath(b_out->get(), c.name, O_RDONLY);
    if (!fa || !fb) {
      e["how"] = "none";
      e["note"] = (!fa ? fa.error() : fb.error()).message();
      out.push_back(std::move(e));
      continue;
    }
    e["a_size"] = size_of(fa->get());
    e["b_size"] = size_of(fb->get());
    e.update(first_difference(fa->get(), fb->get()));
    if (diffoscope) {
      auto report = diffoscope_report(*diffoscope, fa->get(), fb->get(), c.name);
      if (report) {
        e["how"] = "diffoscope";
        e["report"] = *report;  // bounded by run_capture; printed escaped (explain_text)
        std::string kept = fmt::format("explain/{}.txt", ++n);
        if (rebuilt_dir && make_dir_beneath(rebuilt_dir->get(), "explain", 0755, true).ok() &&
            write_file_atomic_beneath(rebuilt_dir->get(), kept, *report, 0644).ok())
          e["kept"] = rebuilt_root + "/" + kept;
      } else {
        e["how"] = "bytes";
        e["note"] = report.error().message();
      }
    } else {
      e["how"] = "bytes";
      e["note"] =
          "diffoscope is not installed (apt-get install diffoscope): sizes and the first "
          "differing byte only";
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::string explain_text(const json& explained) {
  std::string out;
  for (const auto& e : explained) {
    out += fmt::format("  explain {}: ", e.value("path", ""));
    if (e.value("how", "") == "none") {
      out += display::escape(e.value("note", "")) + "\n";
      continue;
    }
    out += fmt::format("{} bytes → {} bytes", e.value("a_size", uint64_t{0}),
                       e.value("b_size", uint64_t{0}));
    if (e.contains("first_difference") && e["first_difference"].is_number())
      out += fmt::format(", first difference at byte {} ({} → {})",
                         e["first_difference"].get<uint64_t>(), e.value("a_bytes", ""),
                         e.value("b_bytes", ""));
    out += "\n";
    if (e.contains("note")) out += "    " + display::escape(e.value("note", "")) + "\n";
    if (e.contains("report")) out += display::indent_lines(e.value("report", ""), "    | ");
    if (e.contains("kept")) out += "    kept: " + e.value("kept", "") + "\n";
  }
  return out;
}

}  // namespace sealrun::run
