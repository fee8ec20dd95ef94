#pragma once
// Runs the real `rewire` binary (and other programs) from integration tests.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph/json.h"

namespace rewire::testing {

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs `command` through the shell, capturing stdout and stderr.
inline RunResult RunCommand(const std::string& command) {
  RunResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

/// `rewire <args>`.
inline RunResult Rewire(const std::string& args) {
  return RunCommand(Quote(REWIRE_BINARY) + " " + args);
}

/// A fresh directory removed at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("rewire-test-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Number of lines in `text`.
inline int CountLines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

/// A loopback port that was free a moment ago (the kernel's choice for port 0).
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  return ok ? ntohs(a.sin_port) : 0;
}

/// The JSON object in file `path`; a test failure (and an empty object) when it is not one.
inline Json ReadJson(const std::string& path) {
  StatusOr<Json> j = ReadJsonFile(path);
  if (!j.ok()) {
    ADD_FAILURE() << j.status().message();
    return Json::object();
  }
  return std::move(*j);
}

/// The objects of a JSON-lines text (metrics.jsonl, ranks/rank<R>.jsonl), one per non-blank
/// line; a line that is not an object is a test failure and left out.
inline std::vector<Json> ParseJsonLines(const std::string& text) {
  std::vector<Json> out;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    StatusOr<Json> j = ParseJsonObject(line);
    if (!j.ok()) {
      ADD_FAILURE() << "line " << number << ": " << j.status().message() << "\n" << line;
      continue;
    }
    out.push_back(std::move(*j));
  }
  return out;
}

/// The number at `key` of every line of a metrics.jsonl text (-1 where a line has none).
inline std::vector<double> Metric(const std::string& jsonl, const std::string& key) {
  std::vector<double> out;
  for (const Json& line : ParseJsonLines(jsonl))
    out.push_back(JsonNumberAt(line, key).value_or(-1));
  return out;
}

/// The "weights_checksum" of each line of a learner rank's RUN_DIR/ranks/rank<R>.jsonl.
inline std::vector<std::string> Checksums(const std::string& rank_log) {
  std::vector<std::string> out;
  for (const Json& line : ParseJsonLines(rank_log)) {
    if (const std::optional<std::string> c = JsonStringAt(line, "weights_checksum"))
      out.push_back(*c);
  }
  return out;
}

}  // namespace rewire::testing
