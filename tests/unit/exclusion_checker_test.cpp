// The mutual-exclusion checker of the lock stress tests, on hand-made
// intervals: it must pass what a correct lock produces and catch each kind of
// violation, or the stress tests prove nothing.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "exclusion_checker.hpp"

namespace zkr::exclusion {
namespace {

HolderInterval held(std::int64_t enter, std::int64_t exit, std::int64_t token,
                    std::int64_t pid = 100) {
  return {pid, pid + 1, enter, exit, token, "mutex"};
}

std::string examples_of(const ExclusionReport& report) {
  std::string all;
  for (const auto& example : report.examples) all += example + "\n";
  return all;
}

TEST(ExclusionChecker, DisjointIntervalsWithGrowingTokensPass) {
  const auto report = check_exclusion({held(0, 10, 1), held(20, 30, 2), held(31, 40, 5)}, 3, 3);
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.intervals, 3u);
  EXPECT_TRUE(report.examples.empty());
}

TEST(ExclusionChecker, AnEmptyRunPasses) { EXPECT_TRUE(check_exclusion({}, 0, 0).ok()); }

TEST(ExclusionChecker, OverlapIsReported) {
  const auto report = check_exclusion({held(0, 10, 1, 100), held(5, 15, 2, 200)}, 2, 2);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.overlaps, 1u);
  EXPECT_EQ(report.token_inversions, 0u);
  ASSERT_EQ(report.examples.size(), 1u);
  EXPECT_NE(report.examples[0].find("pid 200"), std::string::npos) << report.examples[0];
  EXPECT_NE(report.examples[0].find("pid 100"), std::string::npos) << report.examples[0];
}

TEST(ExclusionChecker, EqualBoundariesAreAllowed) {
  // One holder's exit and the next one's enter may read the same clock tick.
  const auto report = check_exclusion({held(0, 10, 1), held(10, 20, 2), held(20, 20, 3)}, 3, 3);
  EXPECT_TRUE(report.ok()) << format_report(report);
}

TEST(ExclusionChecker, ALongHoldSpanningSeveralShortOnesIsCaught) {
  // Each short one begins after the one just before it ended, but all of them
  // inside the long one.
  const auto report =
      check_exclusion({held(0, 100, 1), held(10, 20, 2), held(30, 40, 3), held(50, 60, 4)}, 4, 4);
  EXPECT_EQ(report.overlaps, 3u) << format_report(report);
}

TEST(ExclusionChecker, InputOrderDoesNotMatter) {
  const auto report = check_exclusion({held(31, 40, 5), held(0, 10, 1), held(20, 30, 2)}, 3, 3);
  EXPECT_TRUE(report.ok()) << format_report(report);
}

TEST(ExclusionChecker, TokensMustGrowInGrantOrder) {
  const auto decreasing = check_exclusion({held(0, 10, 5), held(20, 30, 4)}, 2, 2);
  EXPECT_EQ(decreasing.token_inversions, 1u);
  EXPECT_EQ(decreasing.overlaps, 0u);
  EXPECT_FALSE(decreasing.ok());
  EXPECT_NE(examples_of(decreasing).find("token not increasing"), std::string::npos)
      << examples_of(decreasing);

  const auto repeated = check_exclusion({held(0, 10, 5), held(20, 30, 5)}, 2, 2);
  EXPECT_EQ(repeated.token_inversions, 1u) << "a token granted twice fences nothing";
}

TEST(ExclusionChecker, LostUpdatesAreReported) {
  const auto report = check_exclusion({held(0, 10, 1), held(20, 30, 2), held(40, 50, 3)}, 2, 3);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.lost_updates, 1);
  EXPECT_EQ(report.overlaps, 0u);
  EXPECT_NE(examples_of(report).find("1 lost"), std::string::npos) << examples_of(report);
}

TEST(ExclusionChecker, ACounterAboveTheAcquisitionsIsAMismatchToo) {
  const auto report = check_exclusion({held(0, 10, 1)}, 2, 1);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.lost_updates, -1);
}

TEST(ExclusionChecker, MissingIntervalsAreReported) {
  const auto report = check_exclusion({held(0, 10, 1)}, 2, 2);
  EXPECT_TRUE(report.interval_count_mismatch);
  EXPECT_FALSE(report.ok());
}

TEST(ExclusionChecker, ExamplesAreCappedButCountsAreNot) {
  std::vector<HolderInterval> all;
  for (int i = 0; i < 20; ++i) all.push_back(held(i, 1000, 100 - i));
  const auto report = check_exclusion(all, 20, 20);
  EXPECT_EQ(report.overlaps, 19u);
  EXPECT_EQ(report.token_inversions, 19u);
  EXPECT_EQ(report.examples.size(), 2 * kExamplesPerKind);
}

TEST(ExclusionChecker, TheLongestIdleTimeIsReportedButIsNoViolation) {
  const auto report =
      check_exclusion({held(0, 10, 1), held(15, 20, 2, 300), held(1020, 1030, 3, 400)}, 3, 3);
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.longest_idle_ns, 1000);
  EXPECT_NE(report.longest_idle_before.find("pid 400"), std::string::npos)
      << report.longest_idle_before;
}

TEST(ExclusionChecker, ReportSaysWhetherExclusionHeld) {
  EXPECT_NE(format_report(check_exclusion({held(0, 1, 1)}, 1, 1)).find("mutual exclusion held"),
            std::string::npos);
  const auto text = format_report(check_exclusion({held(0, 10, 1), held(5, 15, 2)}, 1, 2));
  EXPECT_NE(text.find("VIOLATED"), std::string::npos) << text;
  EXPECT_NE(text.find("1 overlaps"), std::string::npos) << text;
  EXPECT_NE(text.find("1 lost updates"), std::string::npos) << text;
}

// ---- A read/write lock's shared holds (kind "read").

HolderInterval read(std::int64_t enter, std::int64_t exit, std::int64_t token,
                    std::int64_t pid = 300) {
  return {pid, pid + 1, enter, exit, token, "read"};
}
HolderInterval write(std::int64_t enter, std::int64_t exit, std::int64_t token,
                     std::int64_t pid = 400) {
  return {pid, pid + 1, enter, exit, token, "write"};
}

TEST(ExclusionChecker, ReadersMayShareAndCountNoIncrement) {
  // Readers with tokens in any order among themselves, between writers.
  const auto report = check_exclusion({write(0, 10, 1), read(11, 30, 5, 1), read(12, 20, 3, 2),
                                       read(15, 25, 4, 3), write(31, 40, 6)},
                                      2, 2);
  EXPECT_TRUE(report.ok()) << format_report(report);
  EXPECT_EQ(report.shared_intervals, 3u);
  EXPECT_EQ(report.most_shared_at_once, 3u);
  EXPECT_NE(format_report(report).find("shared holds: 3, at most 3 at once"), std::string::npos);
}

TEST(ExclusionChecker, AReaderBesideAWriterIsAnOverlapEitherWayRound) {
  const auto reader_late = check_exclusion({write(0, 10, 1), read(5, 15, 2)}, 1, 1);
  EXPECT_EQ(reader_late.overlaps, 1u) << format_report(reader_late);
  const auto writer_late =
      check_exclusion({read(0, 10, 1), read(1, 30, 2, 9), write(20, 25, 3)}, 1, 1);
  EXPECT_EQ(writer_late.overlaps, 1u) << format_report(writer_late);
  EXPECT_NE(examples_of(writer_late).find("held the lock"), std::string::npos);
}

TEST(ExclusionChecker, TokensOfSharedHoldsExceedTheLastWritersAndAWritersExceedAll) {
  const auto reader_below = check_exclusion({write(0, 10, 5), read(11, 20, 4)}, 1, 1);
  EXPECT_EQ(reader_below.token_inversions, 1u) << format_report(reader_below);
  const auto writer_below =
      check_exclusion({read(0, 10, 7), read(1, 10, 3, 9), write(11, 20, 6)}, 1, 1);
  EXPECT_EQ(writer_below.token_inversions, 1u) << format_report(writer_below);
}

TEST(ExclusionChecker, OnlyExclusiveHoldsAreCountedAsAcquisitions) {
  EXPECT_TRUE(check_exclusion({read(0, 10, 1), write(11, 20, 2)}, 1, 1).ok());
  EXPECT_TRUE(check_exclusion({read(0, 10, 1), write(11, 20, 2)}, 2, 2).interval_count_mismatch);
}

TEST(IntervalFormat, RoundTrips) {
  const HolderInterval interval{4242, 4245, 1830021477000, 1830021912000, 4294967391, "semaphore"};
  EXPECT_EQ(format_interval(interval),
            "4242 4245 1830021477000 1830021912000 4294967391 semaphore");
  EXPECT_EQ(parse_interval(format_interval(interval)), interval);
}

TEST(IntervalFormat, MalformedLinesAreRejectedSayingWhy) {
  const auto error_of = [](const std::string& line) -> std::string {
    try {
      (void)parse_interval(line);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_NE(error_of("1 2 3 4 5").find("expected 6 fields"), std::string::npos);
  EXPECT_NE(error_of("1 2 3 4 5 mutex extra").find("expected 6 fields"), std::string::npos);
  EXPECT_NE(error_of("1 2 x 4 5 mutex").find("enter_ns 'x'"), std::string::npos);
  EXPECT_NE(error_of("1 2 3 4z 5 mutex").find("exit_ns '4z'"), std::string::npos);
  EXPECT_NE(error_of("1 2 3 4 99999999999999999999 mutex").find("token"), std::string::npos);
  EXPECT_NE(error_of("1 2 30 20 5 mutex").find("before enter_ns"), std::string::npos);
}

TEST(IntervalFormat, StreamsSkipBlankLinesAndNameTheBadLine) {
  std::istringstream good("1 2 3 4 5 mutex\n\n6 7 8 9 10 mutex\n");
  EXPECT_EQ(parse_intervals(good, "good").size(), 2u);

  std::istringstream bad("1 2 3 4 5 mutex\n1 2 3\n");
  try {
    (void)parse_intervals(bad, "worker-3.intervals");
    FAIL() << "a malformed line was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("worker-3.intervals:2:"), std::string::npos) << e.what();
  }
}

TEST(IntervalFormat, AMissingFileIsAnError) {
  EXPECT_THROW((void)read_interval_file("/nonexistent/zkr/intervals"), std::runtime_error);
}

}  // namespace
}  // namespace zkr::exclusion
