#pragma once
// Whole-file reads and atomic file replacement (write a temp file, fsync, rename, fsync the directory), so a
// crash while saving leaves the old file or the new one, never half of one. POSIX only.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <gmi/core/error.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gmi::io {

inline std::string errno_text(int code) { return std::strerror(code); }

// `<what> "<path>"`: how every message about a file starts, e.g. `checkpoint "runs/a/last.gmi"`.
inline std::string file_label(std::string_view what, const std::filesystem::path& path) {
  return std::string(what) + " \"" + path.string() + '"';
}

// Writes `<dir>/<name>.tmp.<pid>` and renames it over `<dir>/<name>` on commit(). The temp file sits in the
// target's directory because rename is atomic only within one file system. Destroyed without commit(), it
// removes the temp file: a failed save leaves nothing behind and the old file untouched.
class atomic_file_writer {
 public:
  atomic_file_writer(std::filesystem::path target, std::string_view what) : target_(std::move(target)), what_(what) {
    require(!target_.filename().empty(), what_ + " path", target_.string(), "a path that names a file");
    temp_ = target_;
    temp_ += ".tmp." + std::to_string(::getpid());
    // O_TRUNC, not O_EXCL: a temp file of this pid is the leftover of an earlier crash of a process with our pid.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      const int code = errno;
      throw config_error(file_label(what_, target_) + ": cannot create " + temp_.filename().string() + " next to it (" +
                         errno_text(code) + ")");
    }
  }
  atomic_file_writer(const atomic_file_writer&) = delete;
  atomic_file_writer& operator=(const atomic_file_writer&) = delete;

  ~atomic_file_writer() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
  }

  void write(const void* data, std::size_t size) {
    const auto* p = static_cast<const char*>(data);
    while (size > 0) {
      const ::ssize_t n = ::write(fd_, p, size);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("writing " + temp_.filename().string(), errno);
      }
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  // fsync before rename: otherwise the rename can reach the disk before the data, and a crash leaves an empty
  // file under the final name. fsync the directory after: that makes the rename itself durable.
  void commit() {
    if (::fsync(fd_) != 0) fail("fsync of " + temp_.filename().string(), errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) fail("closing " + temp_.filename().string(), errno);
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
      fail("renaming " + temp_.filename().string() + " over it", errno);
    committed_ = true;
    const std::filesystem::path dir = target_.has_parent_path() ? target_.parent_path() : std::filesystem::path(".");
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return;  // the file is in place; only the rename's durability is unconfirmed
    const int rc = ::fsync(dir_fd);
    const int code = errno;
    ::close(dir_fd);
    // EINVAL: the file system does not sync directories (some network file systems); nothing more to do there.
    if (rc != 0 && code != EINVAL) {
      throw error(file_label(what_, target_) + ": written, but fsync of its directory failed (" + errno_text(code) +
                  "); a crash now may lose the new file");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& action, int code) const {
    throw error(file_label(what_, target_) + ": " + action + " failed (" + errno_text(code) +
                "); the old file, if any, is unchanged");
  }

  std::filesystem::path target_;
  std::filesystem::path temp_;
  std::string what_;
  int fd_ = -1;
  bool committed_ = false;
};

// The bytes of a regular file; config_error naming the file when it is missing, unreadable or not a file.
inline std::vector<std::byte> read_file(const std::filesystem::path& path, std::string_view what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int code = errno;
    throw config_error(file_label(what, path) + ": cannot open (" + errno_text(code) + ")");
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_on_exit{fd};
  struct ::stat info {};
  if (::fstat(fd, &info) != 0) {
    const int code = errno;
    throw config_error(file_label(what, path) + ": cannot stat (" + errno_text(code) + ")");
  }
  if (!S_ISREG(info.st_mode)) throw config_error(file_label(what, path) + ": not a regular file");
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t got = 0;
  while (got < bytes.size()) {
    const ::ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int code = errno;
      throw config_error(file_label(what, path) + ": read failed (" + errno_text(code) + ")");
    }
    if (n == 0) break;  // shrank while we read: the size checks of the format report it
    got += static_cast<std::size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

}  // namespace gmi::io
