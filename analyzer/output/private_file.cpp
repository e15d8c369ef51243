// Writing the CLI's files (see private_file.h); the directory rule is gmemhook/dir_trust.h's.
#include "analyzer/output/private_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "gmemhook/dir_trust.h"

namespace gmemhook::analysis {

namespace fs = std::filesystem;

namespace {

struct OwnedFd {
  int fd;
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
};

[[noreturn]] void fail(const fs::path& path, int err) {
  throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), std::strerror(err)));
}

// False with errno set when not all of `text` could be written.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Into what is already there and is no plain file (/dev/null, a FIFO, the terminal through
// /dev/stdout), as a shell redirection would: replacing it by a file would break it.
void write_into(int fd, const fs::path& path, std::string_view text) {
  if (fd < 0) fail(path, errno);
  OwnedFd owner{fd};
  if (!write_all(fd, text)) fail(path, errno);
}

// A new file beside the target, then renamed over it: created O_EXCL | O_NOFOLLOW, so a name
// someone else took (a symlink they planted included) is passed over, never opened, and 0600
// whatever the umask, since the mode of a new file is ours to give.
void replace(int dir_fd, const fs::path& path, const std::string& name, std::string_view text) {
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    tmp = fmt::format(".{}.{}-{}.tmp", name, getpid(), attempt);
    fd = openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) fail(path, errno);
  bool ok = write_all(fd, text);
  int err = errno;
  if (close(fd) != 0 && ok) {  // a file system may report a failed write only here (NFS)
    ok = false;
    err = errno;
  }
  if (ok && renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    unlinkat(dir_fd, tmp.c_str(), 0);
    fail(path, err);
  }
}

// `path` names `name` in the directory open as `dir_fd` (`dir`), both as the user gave them.
void write_entry(int dir_fd, const fs::path& path, const fs::path& dir, const std::string& name,
                 std::string_view text) {
  struct stat dir_st {};
  struct stat st {};
  if (fstat(dir_fd, &dir_st) != 0) fail(path, errno);
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) fail(path, errno);
    return replace(dir_fd, path, name, text);
  }
  const uid_t uid = geteuid();
  // There, whoever made the entry chose where a symlink leads and who reads a FIFO.
  if (others_may_add_entries(dir_st, uid) && (S_ISLNK(st.st_mode) || st.st_uid != uid))
    throw std::runtime_error(fmt::format(
        "refusing to write {}: it is {} in {}, where other users may create files; remove it or "
        "write elsewhere",
        path.string(),
        S_ISLNK(st.st_mode) ? "a symbolic link" : "a file that belongs to another user",
        dir.string()));
  if (S_ISREG(st.st_mode)) return replace(dir_fd, path, name, text);
  if (S_ISLNK(st.st_mode))  // the user's own link, where only they (and root) make entries
    return write_into(openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                      path, text);
  write_into(openat(dir_fd, name.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC), path, text);
}

}  // namespace

void write_private_file(const fs::path& path, std::string_view text) {
  const std::string name = path.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw std::runtime_error(
        fmt::format("cannot write {}: it names a directory; give a file name", path.string()));
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  // Symlinks on the way to the directory are followed: the user named it. What the rule guards
  // is the last step, the name in it, which others may have made.
  OwnedFd dir_fd{open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir_fd.fd < 0) fail(path, errno);
  write_entry(dir_fd.fd, path, dir, name, text);
}

void write_private_file_at(int dir_fd, const fs::path& dir, const std::string& name,
                           std::string_view text) {
  write_entry(dir_fd, dir / name, dir, name, text);
}

}  // namespace gmemhook::analysis
