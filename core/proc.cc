// SPDX-License-Identifier: Apache-2.0
// Reading /proc: see proc.h.
#include "core/proc.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

#include "core/decimal.h"
#include "core/syscall.h"

namespace sealrun {
namespace {

// /proc/<pid>/stat and status are a few hundred bytes; children lists are bounded by pid_max.
constexpr size_t kMaxProcFile = 64 * 1024;
constexpr size_t kMaxChildrenFile = 4 * 1024 * 1024;

Result<std::string> read_proc_file(const std::string& path, size_t max) {
  auto fd = SEALRUN_TRY(open_at(AT_FDCWD, path, O_RDONLY | O_NOFOLLOW));
  return read_up_to(fd.get(), max, path);
}

template <typename T>
bool parse_number(std::string_view s, T& out) {
  auto v = parse_decimal<T>(s);
  if (v) out = *v;
  return v.has_value();
}

}  // namespace

Result<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root) {
  std::string path = fmt::format("{}/{}/stat", proc_root, pid);
  std::string text = SEALRUN_TRY(read_proc_file(path, kMaxProcFile));
  size_t rp = text.rfind(')');
  if (rp == std::string::npos) return Error::make(fmt::format("{}: malformed", path));
  // After ')': field 3 (state) is the first, field 22 (starttime) the twentieth.
  std::vector<std::string_view> fields;
  std::string_view rest = std::string_view(text).substr(rp + 1);
  size_t i = 0;
  while (i < rest.size() && fields.size() < 20) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\n')) ++i;
    size_t start = i;
    while (i < rest.size() && rest[i] != ' ' && rest[i] != '\n') ++i;
    if (i > start) fields.push_back(rest.substr(start, i - start));
  }
  if (fields.size() < 20) return Error::make(fmt::format("{}: too few fields", path));
  uint64_t ticks = 0;
  if (!parse_number(fields[19], ticks))
    return Error::make(fmt::format("{}: starttime is not a number", path));
  return ProcStat{fields[0][0], std::string(fields[19])};
}

Result<std::string> process_starttime(pid_t pid, const std::string& proc_root) {
  return SEALRUN_TRY(read_proc_stat(pid, proc_root)).starttime;
}

bool process_is_alive(pid_t pid, std::string_view starttime, const std::string& proc_root) {
  if (pid <= 0 || starttime.empty()) return false;
  auto s = read_proc_stat(pid, proc_root);
  // A zombie is dead for our purpose: its parent has not reaped it yet, nothing more.
  return s && !s->dead() && s->starttime == starttime;
}

Result<std::string> own_starttime() { return process_starttime(::getpid()); }

bool process_exists(pid_t pid, const std::string& proc_root) {
  struct stat st {};
  return ::stat(fmt::format("{}/{}", proc_root, pid).c_str(), &st) == 0;
}

Result<std::string> current_boot_id(const std::string& proc_root) {
  return read_boot_id(proc_root + "/sys/kernel/random/boot_id");
}

Result<std::string> read_boot_id(const std::string& path) {
  std::string text = SEALRUN_TRY(read_proc_file(path, kMaxProcFile));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  if (text.empty()) return Error::make(path + ": empty");
  return text;
}

Result<uid_t> process_real_uid(pid_t pid, const std::string& proc_root) {
  std::string path = fmt::format("{}/{}/status", proc_root, pid);
  std::string text = SEALRUN_TRY(read_proc_file(path, kMaxProcFile));
  size_t at = text.find("\nUid:");
  if (at == std::string::npos) return Error::make(fmt::format("{}: no Uid line", path));
  size_t start = text.find_first_not_of(" \t", at + 5);
  size_t end = text.find_first_of(" \t\n", start);
  uid_t uid = 0;
  if (start == std::string::npos ||
      !parse_number(std::string_view(text).substr(start, end - start), uid))
    return Error::make(fmt::format("{}: malformed Uid line", path));
  return uid;
}

std::vector<pid_t> process_children(pid_t pid, const std::string& proc_root) {
  std::vector<pid_t> out;
  std::string task_dir = fmt::format("{}/{}/task", proc_root, pid);
  auto dir = open_at(AT_FDCWD, task_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (!dir) return out;
  for (const std::string& tid : list_dir_names(dir->get())) {
    auto text = read_proc_file(fmt::format("{}/{}/children", task_dir, tid), kMaxChildrenFile);
    if (!text) continue;
    std::string_view s = *text;
    while (!s.empty()) {
      size_t end = s.find(' ');
      pid_t child = 0;
      if (parse_number(s.substr(0, end), child)) out.push_back(child);
      if (end == std::string_view::npos) break;
      s.remove_prefix(end + 1);
    }
  }
  return out;
}

std::string unescape_mountinfo(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = s[i + k];
        if (c < '0' || c > '7') octal = false;
        v = v * 8 + (c - '0');
      }
      if (octal) {
        out += static_cast<char>(v);
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace sealrun
