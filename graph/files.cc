#include "graph/files.h"

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace rewire {

Status WriteFileAtomic(const std::string& path, const std::string& text, bool durable) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Internal("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool written = done == text.size() && (!durable || ::fsync(fd) == 0);
  const int err = errno;
  ::close(fd);
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(written ? errno : err);
    ::unlink(tmp.c_str());
    return Internal("cannot write " + path + ": " + why);
  }
  if (durable) {  // the rename itself is durable once the directory is synced
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }
  return Status::Ok();
}

TempFolder::TempFolder(const std::string& prefix) {
  std::error_code ec;
  std::string tmpl = (std::filesystem::temp_directory_path(ec) / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data())) dir_ = tmpl;
}

TempFolder::~TempFolder() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

StatusOr<std::string> TempFolder::Write(const std::string& name, const std::string& bytes) const {
  if (dir_.empty()) return Internal("cannot create a temporary folder");
  const std::string path = dir_ + "/" + name;
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f.flush()) return DataLoss(path + ": write failed");
  return path;
}

}  // namespace rewire
