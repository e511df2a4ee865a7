#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace smartgen::core {

bool HugePagesAvailable() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(in, modes);
  // The selected mode is bracketed: "always [madvise] never".
  return modes.find("[always]") != std::string::npos || modes.find("[madvise]") != std::string::npos;
}

Result<MappedFile> MappedFile::Open(const std::string& path, FilePlacement placement) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, fmt::format("open '{}'", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return ErrnoStatus(err, fmt::format("stat '{}'", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("'{}' is not a regular file", path);
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<std::size_t>(st.st_size);
  if (file.size_ > 0 && placement == FilePlacement::kHugePages && HugePagesAvailable()) {
    file.copy_ = PageBuffer(file.size_);
    std::size_t done = 0;
    while (done < file.size_) {
      const ssize_t n = ::pread(fd, file.copy_.data() + done, file.size_ - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        return ErrnoStatus(err, fmt::format("read '{}' ({} of {} bytes)", path, done, file.size_));
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    file.data_ = file.copy_.data();
    return file;
  }
  if (file.size_ > 0) {
    void* p = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return ErrnoStatus(err, fmt::format("mmap '{}'", path));
    }
    file.data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)), copy_(std::move(other.copy_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ && copy_.data() == nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    copy_ = std::move(other.copy_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ && copy_.data() == nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
}

Result<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno ? errno : ENOENT, fmt::format("open '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return DataLoss("read error on '{}'", path);
  return ss.str();
}

Status WriteStringToFile(const std::string& path, std::string_view data) {
  // A per-process temp name: two processes writing the same path must not share it.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return ErrnoStatus(errno, fmt::format("create '{}'", tmp));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) return ErrnoStatus(errno, fmt::format("write '{}'", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return ErrnoStatus(errno, fmt::format("rename '{}' -> '{}'", tmp, path));
  }
  return Status::Ok();
}

}  // namespace smartgen::core
