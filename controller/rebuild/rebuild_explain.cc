// SPDX-License-Identifier: Apache-2.0
// --explain: see rebuild_explain.h. The outputs are the job's: each is opened below its run's
// out/ with openat2 (no link, no escape), and diffoscope, itself a large parser of hostile
// formats, runs on copies of what those descriptors hold, in a sandbox of its own
// (explain_sandbox.h), never on the host.
#include "controller/rebuild/rebuild_explain.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "controller/common/display_text.h"
#include "controller/rebuild/explain_sandbox.h"
#include "core/beneath.h"
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

}  // namespace

json explain_changes(const std::vector<receipt::OutputChange>& changes,
                     const std::string& original_root, const std::string& rebuilt_root,
                     const MechanismContext& context) {
  json out = json::array();
  // The suite's stand-in for diffoscope (a script that tries to get out of the sandbox).
  const char* stand_in = ::getenv("SEALRUN_TEST_DIFFOSCOPE");
  auto diffoscope = stand_in != nullptr && *stand_in != '\0'
                        ? Result<std::string>(std::string(stand_in))
                        : find_program("diffoscope");
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
      auto report = contained_diffoscope(
          context, *diffoscope, fa->get(), fb->get(), c.name,
          SandboxLimits{2ULL << 30, 256, kExplainTimeoutMs, kExplainReportBytes});
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
