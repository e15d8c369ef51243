// Directory scanning for a run; names follow format.h's layout.
#include "analyzer/log/run_dir.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

#include "analyzer/log/read_error.h"
#include "gmemhook/format.h"

namespace gmemhook::analysis {

namespace fs = std::filesystem;

namespace {

std::optional<uint64_t> parse_number(const std::string& s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// <exe>.<pid>: the pid follows the last dot (exe names may contain dots themselves).
std::optional<uint64_t> pid_of(const fs::path& dir) {
  std::string name = dir.filename().string();
  size_t dot = name.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  return parse_number(name.substr(dot + 1));
}

// thread.<tid>.gmh
std::optional<uint64_t> tid_of(const fs::path& file) {
  std::string name = file.filename().string();
  std::string prefix = format::kThreadFilePrefix, suffix = format::kFileSuffix;
  if (name.size() <= prefix.size() + suffix.size() || !name.starts_with(prefix) ||
      !name.ends_with(suffix))
    return std::nullopt;
  return parse_number(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
}

// Numbered entries first in numeric order, then anything else by name, so output is stable.
void sort_by_number(std::vector<fs::path>& paths,
                    std::optional<uint64_t> (*number_of)(const fs::path&)) {
  std::sort(paths.begin(), paths.end(), [&](const fs::path& a, const fs::path& b) {
    auto na = number_of(a), nb = number_of(b);
    if (na.has_value() != nb.has_value()) return na.has_value();
    if (na && *na != *nb) return *na < *nb;
    return a.filename() < b.filename();
  });
}

bool has_process_file(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / format::kProcessFileName, ec);
}

}  // namespace

std::vector<fs::path> find_process_dirs(const fs::path& run) {
  std::error_code ec;
  if (!fs::exists(run, ec))
    throw ReadError(run.string(), std::nullopt, "expected a run directory, it does not exist");
  // `gmemhook dump run/x.42/process.gmh` means that process; accept it rather than lecture.
  if (run.filename() == format::kProcessFileName && fs::is_regular_file(run, ec))
    return {run.parent_path().empty() ? fs::path(".") : run.parent_path()};
  if (!fs::is_directory(run, ec))
    throw ReadError(run.string(), std::nullopt,
                    "expected a run directory (or one process directory), found a file");
  if (has_process_file(run)) return {run};

  std::vector<fs::path> dirs;
  for (fs::directory_iterator it(run, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2) && has_process_file(it->path())) dirs.push_back(it->path());
  }
  if (ec) throw ReadError(run.string(), std::nullopt, "cannot list the directory: " + ec.message());
  if (dirs.empty()) {
    std::string headless;
    for (const DirWithoutProcessFile& d : find_dirs_without_process_file(run))
      headless += (headless.empty() ? "" : ", ") + d.path.filename().string() +
                  (d.thread_files ? " (thread files only)" : " (empty: killed while starting)");
    throw ReadError(run.string(), std::nullopt,
                    "expected process directories (<exe>.<pid>/ holding process.gmh), found "
                    "none" +
                        (headless.empty() ? "" : "; without process.gmh: " + headless));
  }
  sort_by_number(dirs, pid_of);
  return dirs;
}

std::vector<DirWithoutProcessFile> find_dirs_without_process_file(const fs::path& run) {
  std::error_code ec;
  if (!fs::is_directory(run, ec) || has_process_file(run)) return {};
  std::vector<fs::path> dirs;
  for (fs::directory_iterator it(run, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_directory(ec2) && !has_process_file(it->path()) && pid_of(it->path()))
      dirs.push_back(it->path());
  }
  sort_by_number(dirs, pid_of);
  std::vector<DirWithoutProcessFile> found;
  for (const fs::path& dir : dirs) {
    size_t entries = 0, thread_files = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      ++entries;
      if (tid_of(it->path())) ++thread_files;
    }
    // Anything else is some other program's directory that happens to end in a number.
    if (!ec && (entries == 0 || thread_files > 0)) found.push_back({dir, thread_files});
  }
  return found;
}

std::vector<fs::path> find_thread_files(const fs::path& process_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(process_dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (it->is_regular_file(ec2) && tid_of(it->path())) files.push_back(it->path());
  }
  if (ec)
    throw ReadError(process_dir.string(), std::nullopt,
                    "cannot list the directory: " + ec.message());
  sort_by_number(files, tid_of);
  return files;
}

}  // namespace gmemhook::analysis
