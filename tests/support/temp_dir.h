// A fresh temporary directory per test, removed with everything in it afterwards. Shared by every
// module's tests.
#pragma once

#include <filesystem>
#include <string>

namespace sealrun::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& rel) const { return (path_ / rel).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `bytes` to `path` (creating or truncating it).
void write_text(const std::string& path, const std::string& bytes);
// The whole content of `path`.
std::string read_text(const std::string& path);

}  // namespace sealrun::testing
