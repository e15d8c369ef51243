// Naming and creating a run directory (see new_run_dir.h).
#include "analyzer/run/new_run_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include "gmemhook/dir_trust.h"

namespace gmemhook::analysis {

namespace fs = std::filesystem;

namespace {

// The hook creates its directories 0700 (README "The log"): stacks and argv may be private.
bool make_private_dir(const fs::path& p, int* err) {
  if (mkdir(p.c_str(), 0700) == 0) return true;
  *err = errno;
  return false;
}

std::string error_text(const fs::path& p, int err) {
  return "cannot create " + p.string() + ": " + std::strerror(err);
}

}  // namespace

RunDirHandle::RunDirHandle(const fs::path& dir) {
  const char* why = nullptr;
  fd_ = open_trusted_dir(AT_FDCWD, dir.c_str(), &why);
  if (fd_ >= 0) return;
  if (why)
    throw std::runtime_error("refusing to write into " + dir.string() + ": it " + why +
                             "; give -o a new directory, or an empty one of your own that other "
                             "users cannot write (docs/security.md)");
  if (errno == ENOTDIR) throw std::runtime_error(dir.string() + " exists and is not a directory");
  throw std::runtime_error("cannot open " + dir.string() + ": " + std::strerror(errno));
}

RunDirHandle::~RunDirHandle() { close(fd_); }

std::string default_run_dir_name(const std::string& exe, long when) {
  std::string base = fs::path(exe).filename().string();
  for (char& c : base)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
          c == '+'))
      c = '_';
  if (base.empty() || base[0] == '.') base = "cmd" + base;
  std::time_t t = static_cast<std::time_t>(when);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return "gmemhook." + base + "." + stamp;
}

NewRunDir create_run_dir(const std::optional<std::string>& requested, const std::string& exe) {
  NewRunDir out;
  std::error_code ec;
  int err = 0;
  if (requested) {
    out.path = fs::absolute(*requested, ec).lexically_normal();
    if (ec) throw std::runtime_error("cannot use " + *requested + ": " + ec.message());
    if (!out.path.has_filename()) out.path = out.path.parent_path();
    if (fs::exists(fs::symlink_status(out.path, ec))) {
      RunDirHandle checked(out.path);
      if (!fs::is_empty(out.path, ec))
        throw std::runtime_error(out.path.string() +
                                 " is not empty: give -o a new or empty directory, so runs never "
                                 "mix");
      return out;
    }
    fs::create_directories(out.path.parent_path(), ec);
    if (ec) throw std::runtime_error(error_text(out.path.parent_path(), ec.value()));
    if (!make_private_dir(out.path, &err)) throw std::runtime_error(error_text(out.path, err));
    out.created = true;
    return out;
  }
  const fs::path cwd = fs::current_path(ec);
  if (ec) throw std::runtime_error("cannot find the working directory: " + ec.message());
  const std::string name = default_run_dir_name(exe, static_cast<long>(std::time(nullptr)));
  for (int attempt = 1; attempt <= 100; ++attempt) {
    out.path = cwd / (attempt == 1 ? name : name + "-" + std::to_string(attempt));
    if (make_private_dir(out.path, &err)) {
      out.created = true;
      return out;
    }
    if (err != EEXIST) break;
  }
  throw std::runtime_error(error_text(out.path, err));
}

}  // namespace gmemhook::analysis
