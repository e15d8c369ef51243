// Faults in the recorder's own writing: a full disk, at start or mid-run, costs the
// traced program nothing, is said once on stderr, and leaves a log that says it is incomplete.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "harness.h"

namespace gmemhook::test {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& f, const std::string& bytes) {
  std::ofstream(f, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The process log at `dir` after one pass over its events.
analysis::ProcessReader read_through(const fs::path& dir) {
  auto reader = analysis::ProcessReader::open(dir);
  reader.for_each_event([](const format::Event&, const analysis::ThreadFileReader&) {});
  return reader;
}

// The reader's "log incomplete: ..." line, which must contain `what`.
void expect_incomplete(const analysis::ProcessReader& reader, const std::string& what) {
  auto incomplete = analysis::incomplete_log_message(reader);
  ASSERT_TRUE(incomplete);
  EXPECT_NE(incomplete->find(what), std::string::npos) << *incomplete;
}

size_t files_under(const fs::path& dir) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

// A tmpfs of `bytes` at a fresh directory, unmounted by the destructor; skipped where the test
// may not mount (the fault-injection knob covers the same path there).
class SmallDisk {
 public:
  explicit SmallDisk(size_t bytes) : dir_(temp_dir("small-disk")) {
    std::string opts = "size=" + std::to_string(bytes) + ",mode=0700";
    mounted_ = mount("tmpfs", dir_.c_str(), "tmpfs", 0, opts.c_str()) == 0;
  }
  ~SmallDisk() {
    if (mounted_) umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  bool mounted_ = false;
};

// 4 threads × 20000 pairs, the disk full after three chunks: the program runs to the end with its
// own output and status, one warning names the cause, the exit line and the End record count
// every event that was not written, and the reader finds the same gap on its own.
TEST(DiskFull, MidRunLatchesCountsAndSaysSo) {
  fs::path out = temp_dir("disk-full-mid");
  auto env = traced_env(out);
  env["GMEMHOOK_TEST_DISK_FULL_AFTER"] = "3";
  RunResult r = run({scenario_path(), "threads", "4", "20000"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "failures 0\n");
  EXPECT_EQ(count_of(r.err, "gmemhook: cannot write"), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device (ENOSPC)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("log incomplete"), std::string::npos) << r.err;

  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  auto reader = analysis::ProcessReader::open(dirs[0]);
  reader.for_each_event([](const format::Event&, const analysis::ThreadFileReader&) {});
  ASSERT_TRUE(reader.end());
  const auto& end = *reader.end();
  EXPECT_EQ(end.last_seq, 4u * 20000 * 2);
  EXPECT_GT(end.not_recorded, 0u);
  EXPECT_EQ(reader.events_read() + end.not_recorded, end.last_seq) << "every event is counted";
  EXPECT_EQ(end.write_error, static_cast<uint64_t>(ENOSPC));
  auto missing = analysis::missing_events(reader);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->count, end.not_recorded);
  auto text = analysis::incomplete_log_message(reader);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("events not recorded after event"), std::string::npos) << *text;
  EXPECT_NE(text->find("No space left on device"), std::string::npos) << *text;
}

// A complete log says nothing of the kind.
TEST(DiskFull, ACompleteLogHasNoGap) {
  fs::path out = temp_dir("disk-ok");
  RunResult r = run({scenario_path(), "threads", "2", "1000"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.err.find("incomplete"), std::string::npos) << r.err;
  auto reader = analysis::ProcessReader::open(process_dirs(out).at(0));
  reader.for_each_event([](const format::Event&, const analysis::ThreadFileReader&) {});
  EXPECT_FALSE(analysis::missing_events(reader));
  EXPECT_EQ(reader.end()->not_recorded, 0u);
}

// A real full disk: process.gmh fits, the thread files soon do not. Creation is not retried per call
// (it cost 52 s before), no empty files are left, one warning names ENOSPC.
TEST(DiskFull, ThreadFilesThatCannotBeCreatedAreNotRetried) {
  SmallDisk disk(256 << 10);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  auto env = traced_env(disk.dir());
  RunResult r = run({scenario_path(), "threads", "4", "20000"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "failures 0\n");
  EXPECT_EQ(count_of(r.err, "gmemhook: cannot write"), 1u) << r.err;
  EXPECT_NE(r.err.find("ENOSPC"), std::string::npos) << r.err;
  // Thread files start small (4 KiB), so each of the 4 threads may get one before the disk
  // fills; what must never come back is a file per retry (100 per thread before).
  EXPECT_LE(files_under(disk.dir()), 5u) << "process.gmh and at most one file per thread";
  auto reader = analysis::ProcessReader::open(process_dirs(disk.dir()).at(0));
  reader.for_each_event([](const format::Event&, const analysis::ThreadFileReader&) {});
  ASSERT_TRUE(reader.end());
  EXPECT_EQ(reader.events_read() + reader.end()->not_recorded, 4u * 20000 * 2);
}

// process.gmh cannot grow past its first chunk (4 KiB here; NVML samples every 10 ms fill it in
// a second) while the program runs on: the samples after it are lost, said once, but the End
// record still lands, in the room every chunk keeps for it, so the log says how the process
// ended and what was lost instead of reading as killed or crashed.
TEST(DiskFull, ProcessFileThatCannotGrowStillGetsItsEndRecord) {
  fs::path out = temp_dir("disk-full-process");
  auto env = traced_env(out);
  env["LD_LIBRARY_PATH"] += std::string(":") + GMEMHOOK_TEST_FAKENVML_DIR;
  env["GMEMHOOK_NVML_INTERVAL_MS"] = "10";
  env["GMEMHOOK_TEST_PROCESS_CHUNK_KIB"] = "4";
  // The first chunk mapped is process.gmh's, the second the thread file's: the third, the next
  // chunk of process.gmh, finds the disk full.
  env["GMEMHOOK_TEST_DISK_FULL_AFTER"] = "2";
  // 4 s at a sample every 10 ms, ~400 samples where ~130 fill the 4 KiB chunk: room for a loaded
  // machine that wakes the sampler late (at 1.2 s it once took too few to fill the chunk).
  RunResult r = run({scenario_path(), "nvml", "1000"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(count_of(r.err, "gmemhook: cannot write"), 1u) << r.err;
  EXPECT_NE(r.err.find("process.gmh: No space left on device (ENOSPC); module maps, notes and NVML "
                       "samples from here on are not recorded (the end record still is)"),
            std::string::npos)
      << r.err;

  auto dirs = process_dirs(out);
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(fs::file_size(dirs[0] / "process.gmh"), 4096u) << "the file did not grow";
  auto reader = analysis::ProcessReader::open(dirs[0]);
  reader.for_each_event([](const format::Event&, const analysis::ThreadFileReader&) {});
  ASSERT_TRUE(reader.end()) << "the End record was lost";
  EXPECT_EQ(reader.end()->how, format::EndHow::Exit);
  EXPECT_EQ(reader.end()->status, 0);
  EXPECT_EQ(reader.end()->last_seq, 4u);
  EXPECT_EQ(reader.events_read(), 4u);
  EXPECT_FALSE(analysis::missing_events(reader));
}

// Not even process.gmh fits: one warning, the program untouched.
TEST(DiskFull, AtStartOneWarningAndTheProgramRunsOn) {
  SmallDisk disk(16 << 10);
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  RunResult r = run({scenario_path(), "plain", "3"}, traced_env(disk.dir()));
  ASSERT_TRUE(r.exited(3)) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\n");
  EXPECT_EQ(count_of(r.err, "gmemhook:"), 1u) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(files_under(disk.dir()), 0u);
}

// A run directory others may rename entries in is refused with one warning.
TEST(UnsafeOut, WritableByOthersWithoutStickyBitIsRefused) {
  fs::path out = temp_dir("unsafe-out");
  fs::permissions(out, fs::perms::all);
  RunResult r = run({scenario_path(), "plain", "0"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\n");
  EXPECT_EQ(count_of(r.err, "gmemhook:"), 1u) << r.err;
  EXPECT_NE(r.err.find("writable by other users without the sticky bit"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(out));

  fs::permissions(out, fs::perms::all | fs::perms::sticky_bit);
  RunResult sticky = run({scenario_path(), "plain", "0"}, traced_env(out));
  ASSERT_TRUE(sticky.exited(0)) << sticky.err;
  EXPECT_EQ(process_dirs(out).size(), 1u) << "like /tmp: sticky, so accepted";
}

// Group members are other users too.
TEST(UnsafeOut, WritableByTheGroupWithoutStickyBitIsRefused) {
  fs::path out = temp_dir("group-out");
  fs::permissions(out, fs::perms::owner_all | fs::perms::group_all);
  RunResult r = run({scenario_path(), "plain", "0"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\n");
  EXPECT_NE(r.err.find("writable by other users without the sticky bit"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(out));
}

// GMEMHOOK_OUT naming a symlink (planted by whoever could write where it is) is not followed to
// its target: the hook says so once and the program runs on unrecorded.
TEST(UnsafeOut, ASymlinkIsNotFollowed) {
  fs::path target = temp_dir("link-target");
  fs::path link = temp_dir("link-holder") / "out";
  fs::create_directory_symlink(target, link);
  RunResult r = run({scenario_path(), "plain", "0"}, traced_env(link));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "hello from scenario\n");
  EXPECT_EQ(count_of(r.err, "gmemhook:"), 1u) << r.err;
  EXPECT_NE(r.err.find("refusing to write into " + link.string() + ": it is a symbolic link"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::is_empty(target));
}

TEST(UnsafeOut, OwnedByAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to hand the directory to another user";
  fs::path out = temp_dir("foreign-out");
  ASSERT_EQ(chown(out.c_str(), 65534, 65534), 0);
  RunResult r = run({scenario_path(), "plain", "0"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_NE(r.err.find("owned by another user"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::is_empty(out));
}

// Another user who may rename entries in the run directory renames the process
// directory and puts a symlink to a directory of their choosing in its place, after the hook made
// it and before any file is created (GMEMHOOK_TEST_SWAP_DIR does exactly that). Every file is
// created relative to the directory the hook opened, so the logs land there, none in the target.
TEST(SymlinkSwap, LogFilesStayInTheDirectoryTheHookMade) {
  fs::path out = temp_dir("swap-out");
  fs::path target = temp_dir("swap-target");
  auto env = traced_env(out);
  env["GMEMHOOK_TEST_SWAP_DIR"] = target.string();
  RunResult r = run({scenario_path(), "threads", "3", "100"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "failures 0\n");
  EXPECT_TRUE(fs::is_empty(target)) << "a log file was written through the symlink";
  fs::path moved;
  size_t links = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.is_symlink()) ++links;
    else if (e.path().string().ends_with(".moved")) moved = e.path();
  }
  ASSERT_EQ(links, 1u) << "the swap did not happen: the test proves nothing";
  ASSERT_FALSE(moved.empty());
  auto reader = read_through(moved);
  EXPECT_EQ(reader.thread_count(), 3u);
  EXPECT_EQ(reader.events_read(), 3u * 100 * 2);
  ASSERT_TRUE(reader.end());
  EXPECT_TRUE(reader.warnings().empty());
}

// The descriptor the hook holds for its directory, taken over by the program for a directory
// of its own: the hook notices (device and inode) and creates nothing there.
TEST(SymlinkSwap, ADirectoryFdTheProgramReplacedIsNotWrittenThrough) {
  fs::path out = temp_dir("stolen-out");
  fs::path own = temp_dir("stolen-own");
  RunResult r = run({scenario_path(), "steal-dir-fd", own.string()}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  ASSERT_EQ(r.out, "replaced 1\n") << "no descriptor to take over: the test proves nothing";
  EXPECT_TRUE(fs::is_empty(own)) << "a log file was created in the program's directory";
  EXPECT_EQ(count_of(r.err, "gmemhook: cannot write"), 1u) << r.err;
}

// On real logs: thread files are sealed when their threads finish and
// process.gmh at exit; one flipped byte in a sealed chunk is reported, never read as numbers.
TEST(Checksum, RealLogsAreSealedAndDamageIsReported) {
  fs::path out = temp_dir("sealed");
  RunResult r = run({scenario_path(), "threads", "2", "20000"}, traced_env(out));
  ASSERT_TRUE(r.exited(0)) << r.err;
  fs::path dir = process_dirs(out).at(0);
  auto seal_at_end = [](const fs::path& f) {
    std::string bytes = read_file(f);
    uint64_t seal = 0;
    if (bytes.size() >= 8) std::memcpy(&seal, bytes.data() + bytes.size() - 8, 8);
    return seal >> 32 == format::kSealMarker;
  };
  size_t threads = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("thread.")) {
      ++threads;
      EXPECT_TRUE(seal_at_end(e.path())) << e.path() << ": its thread finished, so it is sealed";
      EXPECT_GT(fs::file_size(e.path()), 64u << 10) << "several chunks, not just the first";
    }
  EXPECT_EQ(threads, 2u);
  EXPECT_TRUE(seal_at_end(dir / "process.gmh"));
  {
    auto reader = read_through(dir);
    EXPECT_EQ(reader.events_read(), 2u * 20000 * 2);
    EXPECT_TRUE(reader.warnings().empty());
    EXPECT_FALSE(analysis::incomplete_log_message(reader));
  }
  fs::path victim;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with("thread.")) victim = e.path();
  std::string bytes = read_file(victim);
  bytes[20000] ^= 0x10;  // inside the fourth chunk (chunks start at 0, 4, 8 and 16 KiB)
  write_file(victim, bytes);
  auto reader = read_through(dir);
  ASSERT_EQ(reader.warnings().size(), 2u);
  EXPECT_EQ(reader.warnings()[0].file, victim.string());
  EXPECT_EQ(reader.warnings()[0].offset, 16384u);
  EXPECT_NE(reader.warnings()[0].message.find("is damaged"), std::string::npos);
  EXPECT_NE(reader.warnings()[1].message.find("events after the damaged chunk not decoded"),
            std::string::npos);
  EXPECT_LT(reader.events_read(), 2u * 20000 * 2);
  // The chunks after the damaged one are read on: their events are counted, and with the End
  // record's last seq the ones the damaged chunk held are too. Nothing vanishes unsaid.
  EXPECT_GT(reader.undecoded_events(), 0u);
  const auto missing = analysis::missing_events(reader);
  ASSERT_TRUE(missing);
  EXPECT_GT(missing->count, 0u);
  EXPECT_EQ(reader.events_read() + reader.undecoded_events() + missing->count, 2u * 20000 * 2);
  expect_incomplete(reader, "1 damaged chunk not read (16384 bytes, see the warnings); " +
                                std::to_string(reader.undecoded_events()) +
                                " events after it not decoded");
}

// A file size limit (ulimit -f) the log outgrows: growing a file past it raises SIGXFSZ, whose
// default action kills the traced program. The hook checks the limit before it grows a file:
// the program runs to its end, the log stops with one warning, and the loss is counted.
TEST(DiskFull, AFileSizeLimitStopsTheLogNotTheProgram) {
  fs::path out = temp_dir("fsize-limit");
  auto env = traced_env(out);
  // 256 blocks of 512 bytes: thread chunks of 4, 4, 8, 16, 32 and 64 KiB fit, the next does not.
  RunResult r =
      run({"/bin/sh", "-c", "ulimit -f 256 && exec " + scenario_path() + " threads 1 20000"}, env);
  ASSERT_TRUE(r.exited(0)) << "status " << r.status << ": " << r.err;
  EXPECT_EQ(r.out, "failures 0\n");
  EXPECT_EQ(count_of(r.err, "gmemhook: cannot write"), 1u) << r.err;
  EXPECT_NE(r.err.find("EFBIG"), std::string::npos) << r.err;
  auto reader = read_through(process_dirs(out).at(0));
  ASSERT_TRUE(reader.end());
  EXPECT_GT(reader.end()->not_recorded, 0u);
  EXPECT_EQ(reader.events_read() + reader.end()->not_recorded, 20000u * 2);
  EXPECT_EQ(reader.end()->write_error, static_cast<uint64_t>(EFBIG));
  expect_incomplete(reader, "events not recorded after event");
}

// A signal handler that calls cudaMalloc while its thread is inside the recorder. The
// recorder is not re-entrant (one chunk, one append at a time) and may hold locks: the handler's
// calls pass through, unrecorded but counted, and nothing hangs.
TEST(Signals, HandlerCallsInsideTheHookPassThroughAndAreCounted) {
  fs::path out = temp_dir("signal-inside");
  auto env = traced_env(out);
  // The window the signal is aimed into (every recorded event waits this long), and where in it:
  // the signal goes 150 ms after the call is made and the hook holds it for 500 ms, so a loaded
  // machine that runs either thread late still lands it inside (aimed 30 ms into 150 ms, a
  // handler's pair was once recorded outside).
  env["GMEMHOOK_TEST_DELAY_RECORD_US"] = "500000";
  RunResult r = run({scenario_path(), "signal-inside-hook", "4", "150000"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "handler pairs 4\n");
  auto reader = read_through(process_dirs(out).at(0));
  EXPECT_EQ(reader.events_read(), 4u * 2) << "the program's own pairs";
  ASSERT_TRUE(reader.end());
  EXPECT_EQ(reader.end()->not_recorded, 4u * 2) << "the handlers' pairs, counted";
  EXPECT_EQ(reader.end()->write_error, 0u);
  expect_incomplete(reader, "8 events not recorded");
}

// Threads whose first CUDA call comes while another thread opens the log wait for it,
// but not without bound (the opener could be stopped, or waiting on them from a signal handler).
// Here opening takes 1.5 s and the others wait at most 100 ms: they go on unrecorded (waiting
// without bound, they would all have been recorded after 1.5 s), and every call is counted.
TEST(Signals, LateFirstCallsDoNotWaitWithoutBound) {
  fs::path out = temp_dir("slow-open");
  auto env = traced_env(out);
  env["GMEMHOOK_TEST_DELAY_OPEN_MS"] = "1500";
  env["GMEMHOOK_TEST_OPEN_WAIT_MS"] = "100";
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = run({scenario_path(), "threads", "4", "20000"}, env);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(r.out, "failures 0\n");
  auto reader = read_through(process_dirs(out).at(0));
  ASSERT_TRUE(reader.end());
  EXPECT_GT(reader.end()->not_recorded, 0u) << "no thread called while the log was opening (" << s << " s)";
  EXPECT_EQ(reader.events_read() + reader.end()->not_recorded, 4u * 20000 * 2);
  expect_incomplete(reader, "events not recorded");
}

// Nonsense in the environment is said once, and the default is used.
TEST(Environment, InvalidValuesWarnOnceEach) {
  fs::path out = temp_dir("bad-env");
  auto env = traced_env(out);
  env["GMEMHOOK_DEPTH"] = "lots";
  env["GMEMHOOK_QUIET"] = "maybe";
  RunResult r = run({scenario_path(), "plain", "0"}, env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(count_of(r.err, "GMEMHOOK_DEPTH=lots: expected a number of frames"), 1u) << r.err;
  EXPECT_EQ(count_of(r.err, "GMEMHOOK_QUIET=maybe: expected 1 or 0"), 1u) << r.err;
  LoggedProcess p = read_process(process_dirs(out).at(0));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_FALSE(p.events[0].stack.empty()) << "the default depth is used";
}

// A relative GMEMHOOK_OUT is made absolute by the first process: a child that changes directory
// still writes into the same run.
TEST(Environment, RelativeOutIsMadeAbsoluteAndHandedDown) {
  fs::path base = temp_dir("relative-out");
  fs::create_directory(base / "elsewhere");
  auto env = traced_env("unused");
  const std::string preload = env["LD_PRELOAD"];
  env["LD_PRELOAD"] = "";  // the untraced outer shell sets up the traced one in `base`
  env["GMEMHOOK_OUT"] = "";
  const std::string s = scenario_path();
  RunResult r = run(
      {"/bin/sh", "-c",
       "cd " + base.string() + " && LD_PRELOAD=" + preload + " GMEMHOOK_OUT=run exec /bin/sh -c '" +
           s + " plain 0; cd elsewhere; " + s + " plain 0'"},
      env);
  ASSERT_TRUE(r.exited(0)) << r.err;
  EXPECT_EQ(process_dirs(base / "run").size(), 2u) << r.err;
  EXPECT_FALSE(fs::exists(base / "elsewhere" / "run"));
}

}  // namespace
}  // namespace gmemhook::test
