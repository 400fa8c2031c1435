// A kazoo (Python) lock client as a child process, for the tests that put
// kazoo's locks and ours on one path: tests/interop/kazoo_lock_peer.py, run
// with Debian's /usr/bin/python3 and python3-kazoo (scripts/setup installs
// them), driven one command per line over a socket pair that is its stdin
// and stdout. The commands are described in the script.
//
//   if (auto why = kazoo_peer_skip_reason(); !why.empty()) GTEST_SKIP() << why;
//   KazooPeer py(connect_string());
//   ASSERT_EQ(py.reply(), "ready");
//   EXPECT_EQ(py.call("acquire lock /p 5000 0").rfind("acquired ", 0), 0u);
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <string_view>

namespace zkr::test {

// Why the peer cannot run here ("" if it can): no /usr/bin/python3, or no
// kazoo for it. Checked once per process.
const std::string& kazoo_peer_skip_reason();

class KazooPeer {
 public:
  static constexpr std::string_view kNoReply = "(no reply in time)";
  static constexpr std::string_view kGone = "(peer closed its output)";

  // Started, not yet ready: its first line is "ready" once it has a session.
  explicit KazooPeer(const std::string& connect_string);
  // Ends its input, so it closes its session (its nodes go at once) and
  // exits; kills it if it does not exit within 10 s, or at once after a test
  // failure (it may be stuck in an acquire). Never throws.
  ~KazooPeer();
  KazooPeer(const KazooPeer&) = delete;
  KazooPeer& operator=(const KazooPeer&) = delete;

  void send(const std::string& command);
  // The next line it wrote, or kNoReply / kGone.
  std::string reply(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  std::string call(const std::string& command,
                   std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    send(command);
    return reply(timeout);
  }

 private:
  enum class Read { data, timeout, eof };
  Read read_some(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace zkr::test
