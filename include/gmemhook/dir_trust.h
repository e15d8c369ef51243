// Which directories gmemhook creates files in: the one rule the hook (its run directory) and the
// CLI (`gmemhook run -o`, the files it writes) share, docs/security.md. System calls only, no
// allocation, exception or lock: the hook uses it inside the traced process.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace gmemhook {

// Whether users other than `uid` (and root) may create, rename or remove entries in a directory
// with status `st`: a name there may be a symlink or a file someone else put in our way.
inline bool others_may_add_entries(const struct stat& st, uid_t uid) noexcept {
  return (st.st_uid != uid && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

// Why user `uid` must not create files in a directory with status `st` (as "it <reason>"), or
// nullptr. Like ssh refusing key files others can write: another user who may rename entries
// there could swap what we made for a symlink to a directory of their choosing. The sticky bit
// (/tmp) forbids that, so such a directory is accepted when it is ours or root's.
inline const char* untrusted_dir_reason(const struct stat& st, uid_t uid) noexcept {
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != uid && st.st_uid != 0) return "is owned by another user";
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    return "is writable by other users without the sticky bit";
  return nullptr;
}

// Opens directory `path` (relative to `at`) to create files in through the descriptor: never
// through a symlink as its last component (whoever could write where the link is chose the
// target), and only a directory untrusted_dir_reason() accepts for this user. Returns the
// descriptor, or -1 with `*why` set to the reason, or to nullptr and errno to the error.
inline int open_trusted_dir(int at, const char* path, const char** why) noexcept {
  *why = nullptr;
  const int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd < 0) {
    // O_DIRECTORY | O_NOFOLLOW on a symlink fails with ENOTDIR (ELOOP without O_DIRECTORY).
    const int err = errno;
    if ((err == ENOTDIR || err == ELOOP) && fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(st.st_mode))
      *why = "is a symbolic link";
    errno = err;
    return -1;
  }
  if (fstat(fd, &st) != 0 || (*why = untrusted_dir_reason(st, geteuid())) != nullptr) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

}  // namespace gmemhook
