// InterProcessReadWriteLock on the in-memory ensemble: sharing, exclusion,
// fairness, reentrancy, downgrade (and what keeps it safe when writers
// queue), upgrade refused, Curator's names, and no mix with the mutex queue.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <mutex>
#include <regex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "lock_fixture.hpp"
#include "zkr/read_write_lock.hpp"

namespace zkr {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class ReadWriteLockTest : public LockUnitTest<InterProcessMutex> {
 protected:
  std::unique_ptr<InterProcessReadWriteLock> rw_for(Contender& c, const std::string& dir = kDir) {
    return std::make_unique<InterProcessReadWriteLock>(*c.client, dir);
  }
  // The read/write nodes in queue order.
  std::vector<std::string> rw_queue() {
    return detail::sorted_queue_nodes(lock_nodes(), detail::QueueFamily::read_write);
  }
  // Kinds in queue order, e.g. "RRW".
  std::string kinds() {
    std::string text;
    for (const auto& name : rw_queue())
      text += detail::queue_kind(name) == detail::QueueKind::read ? 'R' : 'W';
    return text;
  }
  bool wait_kinds(const std::string& expected) {
    return test::wait_children(
        raw(), kDir,
        [&](const auto& names) {
          std::string text;
          for (const auto& name :
               detail::sorted_queue_nodes(names, detail::QueueFamily::read_write))
            text += detail::queue_kind(name) == detail::QueueKind::read ? 'R' : 'W';
          return text == expected;
        },
        kWait);
  }
};

TEST_F(ReadWriteLockTest, ReadersShareAndAWriterWaitsForThemAll) {
  auto& a = contender();
  auto& b = contender();
  auto& w = contender();
  auto ra = rw_for(a), rb = rw_for(b), rw = rw_for(w);
  ASSERT_TRUE(ra->read_lock().try_acquire());
  ASSERT_TRUE(rb->read_lock().try_acquire());
  EXPECT_FALSE(rw->write_lock().try_acquire());
  EXPECT_EQ(kinds(), "RR");  // the refused writer left nothing
  auto writer =
      std::async(std::launch::async, [&] { return rw->write_lock().try_acquire_for(kWait); });
  ASSERT_TRUE(wait_kinds("RRW"));
  ra->read_lock().release();
  ASSERT_TRUE(wait_kinds("RW"));
  EXPECT_EQ(writer.wait_for(0s), std::future_status::timeout);  // one reader still holds
  rb->read_lock().release();
  ASSERT_TRUE(writer.get());
  EXPECT_FALSE(ra->read_lock().try_acquire());
  EXPECT_FALSE(rb->write_lock().try_acquire());
  EXPECT_EQ(kinds(), "W");
}

// Fair: a reader that comes after a waiting writer waits for it, though a
// reader holds, so readers cannot starve a writer.
TEST_F(ReadWriteLockTest, AWaitingWriterHoldsBackLaterReaders) {
  auto& a = contender();
  auto& w = contender();
  auto& c = contender();
  auto ra = rw_for(a), rw = rw_for(w), rc = rw_for(c);
  ASSERT_TRUE(ra->read_lock().try_acquire());
  test::Latch writer_granted, writer_let_go;
  auto writer = std::async(std::launch::async, [&] {
    const bool got = rw->write_lock().try_acquire_for(kWait);
    writer_granted.open();
    if (got) {
      (void)writer_let_go.wait(kWait);
      rw->write_lock().release();
    }
    return got;
  });
  ASSERT_TRUE(wait_kinds("RW"));
  EXPECT_FALSE(rc->read_lock().try_acquire());
  auto reader = std::async(std::launch::async, [&] {
    const bool got = rc->read_lock().try_acquire_for(kWait);
    // Granted only after the writer let go: it may not overlap it.
    const bool writer_holds = rw->write_lock().is_acquired_in_this_process();
    if (got) rc->read_lock().release();
    return got && !writer_holds;
  });
  ASSERT_TRUE(wait_kinds("RWR"));
  ra->read_lock().release();
  ASSERT_TRUE(writer_granted.wait(kWait));
  EXPECT_EQ(reader.wait_for(0s), std::future_status::timeout);
  writer_let_go.open();
  EXPECT_TRUE(writer.get());
  EXPECT_TRUE(reader.get());
}

TEST_F(ReadWriteLockTest, NodesAreCuratorsAndTokensGrow) {
  auto& a = contender();
  auto rw = rw_for(a);
  ASSERT_TRUE(rw->write_lock().try_acquire());
  const auto write = rw->write_lock().grant();
  ASSERT_TRUE(rw->read_lock().try_acquire());  // a downgrade: granted at once
  const auto read = rw->read_lock().grant();
  const std::regex guid("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  const std::string g = "[0-9a-f-]{36}";
  EXPECT_TRUE(
      std::regex_match(write.node_path(), std::regex(kDir + "/_c_" + g + "-__WRIT__0000000000")))
      << write.node_path();
  EXPECT_TRUE(
      std::regex_match(read.node_path(), std::regex(kDir + "/_c_" + g + "-__READ__0000000001")))
      << read.node_path();
  // A downgraded read carries its write grant's token (see the next tests).
  EXPECT_EQ(read.fencing_token(), write.fencing_token());
  EXPECT_EQ(rw->participant_nodes(),
            (std::vector<std::string>{write.node_path(), read.node_path()}));
  rw->read_lock().release();
  rw->write_lock().release();
}

TEST_F(ReadWriteLockTest, EachSideIsReentrantPerThread) {
  auto& a = contender();
  auto& b = contender();
  auto ra = rw_for(a), rb = rw_for(b);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  ASSERT_TRUE(ra->write_lock().try_acquire());
  EXPECT_EQ(kinds(), "W");  // one node for both holds
  EXPECT_TRUE(ra->write_lock().release());
  EXPECT_FALSE(rb->read_lock().try_acquire());
  EXPECT_TRUE(ra->write_lock().release());
  EXPECT_FALSE(ra->write_lock().release());  // nothing left to release
  ASSERT_TRUE(rb->read_lock().try_acquire());
  ASSERT_TRUE(rb->read_lock().try_acquire());
  EXPECT_TRUE(rb->read_lock().release());
  EXPECT_TRUE(rb->read_lock().is_owned_by_current_thread());
  // Another thread of the process holds nothing: it cannot release ours.
  EXPECT_FALSE(std::async(std::launch::async, [&] { return rb->read_lock().release(); }).get());
  EXPECT_TRUE(rb->read_lock().release());
  EXPECT_FALSE(rb->read_lock().is_acquired_in_this_process());
}

TEST_F(ReadWriteLockTest, UpgradeIsRefusedAndSendsNothing) {
  auto& a = contender();
  auto rw = rw_for(a);
  ASSERT_TRUE(rw->read_lock().try_acquire());
  const auto before = lock_nodes();
  try {
    (void)rw->write_lock().try_acquire_for(kWait);
    ADD_FAILURE() << "an upgrade was not refused";
  } catch (const std::logic_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("upgrade is not supported"));
    EXPECT_THAT(e.what(), HasSubstr(kDir));
  }
  EXPECT_THROW(rw->write_lock().acquire(), std::logic_error);
  EXPECT_EQ(lock_nodes(), before);
  EXPECT_TRUE(rw->read_lock().release());
  ASSERT_TRUE(rw->write_lock().try_acquire());  // with the read gone, fine
  rw->write_lock().release();
}

// With no writer queued between, the downgraded read stands on its own once
// the write lock goes: other readers share it, writers wait for it.
TEST_F(ReadWriteLockTest, DowngradeLetsOtherReadersInOnceTheWriteIsReleased) {
  auto& a = contender();
  auto& b = contender();
  auto ra = rw_for(a), rb = rw_for(b);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  ASSERT_TRUE(ra->read_lock().try_acquire());
  EXPECT_FALSE(rb->read_lock().try_acquire());
  EXPECT_TRUE(ra->write_lock().release());
  ASSERT_TRUE(wait_kinds("R"));
  ASSERT_TRUE(rb->read_lock().try_acquire());
  auto& c = contender();
  EXPECT_FALSE(rw_for(c)->write_lock().try_acquire());
  EXPECT_TRUE(ra->read_lock().is_owned_by_current_thread());
  EXPECT_FALSE(ra->read_lock().grant().lost());
  ra->read_lock().release();
  rb->read_lock().release();
}

// A writer queued while we held the write lock sorts before our read node:
// deleting our write node would grant it beside our read. So the write node
// stays until the read is released too.
TEST_F(ReadWriteLockTest, DowngradeKeepsTheWriteNodeWhileWritersQueueBehindIt) {
  auto& a = contender();
  auto& w = contender();
  auto ra = rw_for(a), rw = rw_for(w);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  const auto write = ra->write_lock().grant();
  auto writer = std::async(std::launch::async, [&] {
    const bool got = rw->write_lock().try_acquire_for(kWait);
    const bool beside_a_reader = ra->read_lock().is_acquired_in_this_process();
    if (got) rw->write_lock().release();
    return got && !beside_a_reader;
  });
  ASSERT_TRUE(wait_kinds("WW"));
  ASSERT_TRUE(ra->read_lock().try_acquire());  // granted at once, ahead of the writer
  const auto read = ra->read_lock().grant();
  EXPECT_TRUE(ra->write_lock().release());
  EXPECT_FALSE(ra->write_lock().is_owned_by_current_thread());
  // A request of a's session is applied after any delete it sent: the write
  // node is still there, so the writer cannot have been granted.
  const auto nodes = ra->participant_nodes();
  EXPECT_EQ(nodes.front(), write.node_path());
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(writer.wait_for(0s), std::future_status::timeout);
  EXPECT_TRUE(write.held());
  // An upgrade now is refused as well: the thread still reads.
  EXPECT_THROW((void)ra->write_lock().try_acquire(), std::logic_error);
  ra->read_lock().release();
  EXPECT_TRUE(writer.get());
  EXPECT_TRUE(write.released());
  EXPECT_TRUE(read.released());
}

// The case a fenced store cares about: A writes (token w), B queues to write
// (node b), A downgrades (read node r, after b), then lets go of both. B is
// granted after everything A held, so its token must be larger than every
// token A held: the read carries w, not its own node's czxid (above b's).
TEST_F(ReadWriteLockTest, ADowngradedReadCarriesItsWriteTokenBelowTheQueuedWriters) {
  auto& a = contender();
  auto& b = contender();
  auto ra = rw_for(a), rb = rw_for(b);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  const auto write = ra->write_lock().grant();
  auto writer = std::async(std::launch::async, [&]() -> std::int64_t {
    if (!rb->write_lock().try_acquire_for(kWait)) return -1;
    const auto token = rb->write_lock().grant().fencing_token();
    rb->write_lock().release();
    return token;
  });
  ASSERT_TRUE(wait_kinds("WW"));
  ASSERT_TRUE(ra->read_lock().try_acquire());  // granted at once, ahead of the writer
  const auto read = ra->read_lock().grant();
  ASSERT_TRUE(ra->read_lock().try_acquire());  // reentered: the same grant, the same token
  EXPECT_EQ(ra->read_lock().grant().fencing_token(), read.fencing_token());
  EXPECT_TRUE(ra->read_lock().release());
  // The race this is about: our read node is newer than the queued writer's.
  const auto queue = rw_queue();
  ASSERT_EQ(kinds(), "WWR");
  const auto writer_node = raw().exists(kDir + "/" + queue[1]);
  const auto read_node = raw().exists(read.node_path());
  ASSERT_TRUE(writer_node && read_node);
  ASSERT_GT(read_node->czxid, writer_node->czxid);
  EXPECT_EQ(read.fencing_token(), write.fencing_token());

  EXPECT_TRUE(ra->write_lock().release());
  EXPECT_TRUE(ra->read_lock().release());
  const auto writer_token = writer.get();
  ASSERT_NE(writer_token, -1) << "the queued writer was not granted";
  EXPECT_EQ(writer_token, writer_node->czxid);
  EXPECT_GT(writer_token, write.fencing_token());
  EXPECT_GT(writer_token, read.fencing_token())
      << "the next writer's token is below a read it follows";
}

// A read taken while the thread holds the write lock with nobody queued is a
// downgrade too: the same token, and the next writer's is larger still.
TEST_F(ReadWriteLockTest, ADowngradeWithNobodyQueuedCarriesTheWriteTokenToo) {
  auto& a = contender();
  auto& b = contender();
  auto ra = rw_for(a), rb = rw_for(b);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  const auto write = ra->write_lock().grant();
  ASSERT_TRUE(ra->read_lock().try_acquire());
  const auto read = ra->read_lock().grant();
  EXPECT_EQ(read.fencing_token(), write.fencing_token());
  EXPECT_TRUE(ra->write_lock().release());
  // The read now stands alone; another reader shares it with its own token.
  ASSERT_TRUE(rb->read_lock().try_acquire());
  EXPECT_GT(rb->read_lock().grant().fencing_token(), read.fencing_token());
  rb->read_lock().release();
  ra->read_lock().release();
  ASSERT_TRUE(rb->write_lock().try_acquire_for(kWait));
  EXPECT_GT(rb->write_lock().grant().fencing_token(), read.fencing_token());
  rb->write_lock().release();
}

// The kept write node is what protects the read: someone deleting it makes
// the read lease lost, as it lets the queued writer in.
TEST_F(ReadWriteLockTest, ADowngradedReadIsLostWithTheKeptWriteNode) {
  auto& a = contender();
  auto& w = contender();
  auto ra = rw_for(a), rw = rw_for(w);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  const auto write = ra->write_lock().grant();
  auto writer = std::async(std::launch::async, [&] {
    const bool got = rw->write_lock().try_acquire_for(kWait);
    if (got) rw->write_lock().release();
    return got;
  });
  ASSERT_TRUE(wait_kinds("WW"));
  ASSERT_TRUE(ra->read_lock().try_acquire());
  const auto read = ra->read_lock().grant();
  EXPECT_TRUE(ra->write_lock().release());
  test::Latch lost;
  read.on_lost([&](LostReason why) {
    EXPECT_EQ(why, LostReason::node_deleted);
    lost.open();
  });
  raw().remove(write.node_path());
  ASSERT_TRUE(lost.wait(kWait));
  EXPECT_TRUE(read.lost());
  EXPECT_TRUE(writer.get());
  EXPECT_TRUE(ra->read_lock().release());
}

// A lost write hold is no ground for a downgrade: the reader waits like anyone.
TEST_F(ReadWriteLockTest, NoDowngradeThroughALostWriteNode) {
  auto& a = contender();
  auto& w = contender();
  auto ra = rw_for(a), rw = rw_for(w);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  const auto write = ra->write_lock().grant();
  raw().remove(write.node_path());
  ASSERT_TRUE(rw->write_lock().try_acquire());
  EXPECT_FALSE(ra->read_lock().try_acquire());
  rw->write_lock().release();
  ra->write_lock().release();
}

// An adversary deletes our write node and makes one of the same name: the
// name in a listing must not grant a downgrade while another writer holds.
TEST_F(ReadWriteLockTest, NoDowngradeThroughAForgedWriteNodeOfOurName) {
  auto& a = contender();
  auto& w = contender();
  auto ra = rw_for(a), rw = rw_for(w);
  ASSERT_TRUE(ra->write_lock().try_acquire());
  const auto write = ra->write_lock().grant();
  test::Latch lost;
  write.on_lost([&](LostReason) { lost.open(); });
  raw().remove(write.node_path());
  ASSERT_TRUE(lost.wait(kWait));
  ASSERT_TRUE(rw->write_lock().try_acquire());
  raw().create(write.node_path());  // persistent, our name, first in the queue
  EXPECT_FALSE(ra->read_lock().try_acquire()) << "a read granted beside a writer";
  rw->write_lock().release();
  ra->write_lock().release();
  raw().remove(write.node_path());
}

// No silent mix: the read/write queue and the mutex queue on one path.
TEST_F(ReadWriteLockTest, MutexNodesOnThePathRefuseBothSides) {
  auto& a = contender();
  auto& b = contender();
  InterProcessMutex mutex(*a.client, kDir);
  ASSERT_TRUE(mutex.try_acquire());
  auto rw = rw_for(b);
  for (const bool write : {false, true}) {
    auto& side = write ? rw->write_lock() : rw->read_lock();
    try {
      (void)side.try_acquire_for(kWait);
      ADD_FAILURE() << "granted beside a mutex";
    } catch (const KeeperError& e) {
      EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
      EXPECT_EQ(e.path(), kDir);
      EXPECT_THAT(e.what(), HasSubstr("a mutex, InterProcessMutex"));
    }
  }
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
  mutex.release();
}

TEST_F(ReadWriteLockTest, ReadWriteNodesOnThePathRefuseTheMutexes) {
  auto& a = contender();
  auto& b = contender();
  auto rw = rw_for(a);
  ASSERT_TRUE(rw->read_lock().try_acquire());
  InterProcessMutex mutex(*b.client, kDir);
  NonReentrantMutex semaphore_mutex(*b.client, kDir);
  for (const auto& acquire :
       std::vector<std::function<bool()>>{[&] { return mutex.try_acquire_for(kWait); },
                                          [&] { return semaphore_mutex.try_acquire_for(kWait); }}) {
    try {
      (void)acquire();
      ADD_FAILURE() << "granted beside a read/write lock";
    } catch (const KeeperError& e) {
      EXPECT_EQ(e.errc(), Errc::foreign_lock_protocol);
      EXPECT_THAT(e.what(), HasSubstr("a read/write lock"));
    }
  }
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(b)).empty());
  rw->read_lock().release();
}

TEST_F(ReadWriteLockTest, CuratorSemaphoreChildrenRefuseIt) {
  raw().create_parents(kDir + "/leases/x");
  auto& a = contender();
  auto rw = rw_for(a);
  EXPECT_THROW((void)rw->read_lock().try_acquire(), KeeperError);
  EXPECT_THROW((void)rw->write_lock().try_acquire(), KeeperError);
  EXPECT_TRUE(ensemble_.ephemerals_of(session_of(a)).empty());
}

TEST_F(ReadWriteLockTest, PathLongEnoughForItsNodes) {
  auto& a = contender();
  const std::string longest = "/" + std::string(kMaxReadWriteLockPathLength - 1, 'p');
  EXPECT_NO_THROW(InterProcessReadWriteLock(*a.client, longest));
  try {
    InterProcessReadWriteLock too_long(*a.client, longest + "p");
    ADD_FAILURE() << "a path with no room for its nodes was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr(std::to_string(kMaxReadWriteLockPathLength) + " at most"));
  }
  EXPECT_THROW(InterProcessReadWriteLock(*a.client, "/"), std::invalid_argument);
  EXPECT_THROW(InterProcessReadWriteLock(*a.client, "no-slash"), std::invalid_argument);
}

TEST_F(ReadWriteLockTest, WorksWithTheStandardLockGuards) {
  auto& a = contender();
  auto& b = contender();
  auto ra = rw_for(a), rb = rw_for(b);
  auto& c = contender();
  auto rc = rw_for(c);
  {
    std::shared_lock read(ra->read_lock());
    std::shared_lock other(rb->read_lock());
    EXPECT_FALSE(rc->write_lock().try_acquire());
  }
  {
    std::scoped_lock write(ra->write_lock());
    EXPECT_FALSE(rb->read_lock().try_acquire());
  }
  ASSERT_TRUE(wait_kinds(""));
}

}  // namespace
}  // namespace zkr
