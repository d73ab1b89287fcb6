// The snapshot region's format (contract/snapshot_region.hpp, snapshot_file.hpp) on real
// files: round trips, the slots' alternation and placement, torn slots skipped (a corrupt
// payload, a crash between invalidating a slot and its checksum), and the launcher's private
// /dev/shm files (os/shm_file: mode 0600, the sweep of a dead launcher's files).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "contract/snapshot_file.hpp"
#include "launcher/os/shm_file.hpp"
#include "tests/support/files.hpp"

using namespace ddp::snapshot;
using ddp::test::TempDir;

namespace {

struct OpenFile {
  explicit OpenFile(const std::string& path) : fd(::open(path.c_str(), O_RDWR | O_CREAT, 0600)) { REQUIRE(fd >= 0); }
  ~OpenFile() { ::close(fd); }
  int fd;
};

void save(int fd, uint64_t step, const std::string& payload) {
  const WriteResult r = write_snapshot(fd, step, payload.data(), payload.size());
  REQUIRE(r.error == 0);
}

Header header_of(int fd) { return read_header(fd); }

}  // namespace

TEST_CASE("snapshot: the checksum is zlib's CRC-32, continuable") {
  const std::string text = "123456789";
  CHECK(crc32(text.data(), text.size()) == 0xCBF43926u);
  const std::string a = "the quick brown fox ", b = "jumps over the lazy dog";
  CHECK(crc32(b.data(), b.size(), crc32(a.data(), a.size())) == crc32((a + b).data(), a.size() + b.size()));
}

TEST_CASE("snapshot: an empty region has no snapshot; the newest of several is read") {
  TempDir dir;
  OpenFile f(dir / "region");
  CHECK_FALSE(read_newest_snapshot(f.fd).has_value());
  save(f.fd, 1, "first");
  save(f.fd, 2, std::string(10000, 'b'));
  save(f.fd, 3, "third");
  auto s = read_newest_snapshot(f.fd);
  REQUIRE(s);
  CHECK(s->step == 3);
  CHECK(s->seq == 3);
  CHECK(s->payload == "third");
}

TEST_CASE("snapshot: the slots alternate and settle at header + two payloads") {
  TempDir dir;
  OpenFile f(dir / "region");
  const std::string payload(3 * kAlign, 'x');
  for (uint64_t step = 1; step <= 6; ++step) {
    save(f.fd, step, payload);
    const Header h = header_of(f.fd);
    CHECK(h.slots[(step - 1) % 2].step == step);  // slot 0, 1, 0, 1, ...
    if (step > 1) CHECK(h.slots[0].offset + h.slots[0].length <= h.slots[1].offset);
  }
  struct stat st {};
  REQUIRE(::fstat(f.fd, &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == kHeaderSize + 2 * payload.size());
}

TEST_CASE("snapshot: a region reserved already, without holes, is not reserved again") {
  TempDir dir;
  OpenFile f(dir / "region");
  CHECK_FALSE(ddp::snapshot::detail::reserved(f.fd, 1));  // empty
  REQUIRE(::ftruncate(f.fd, 1 << 20) == 0);               // 1 MiB long, a hole throughout
  CHECK_FALSE(ddp::snapshot::detail::reserved(f.fd, 4096));
  REQUIRE(::posix_fallocate(f.fd, 0, 1 << 20) == 0);
  CHECK(ddp::snapshot::detail::reserved(f.fd, 1 << 20));
  CHECK_FALSE(ddp::snapshot::detail::reserved(f.fd, (1 << 20) + 1));  // longer than the file
  // Writes that grow the file reserve what they add: every slot is whole afterwards.
  const std::string payload(3 * kAlign, 'x');
  for (uint64_t step = 1; step <= 3; ++step) save(f.fd, step, payload);
  CHECK(ddp::snapshot::detail::reserved(f.fd, 1 << 20));
  REQUIRE(read_newest_snapshot(dir / "region"));
  CHECK(read_newest_snapshot(dir / "region")->step == 3);
}

TEST_CASE("snapshot: a payload growing past its place never overlaps the other slot") {
  TempDir dir;
  OpenFile f(dir / "region");
  save(f.fd, 1, "small");
  save(f.fd, 2, "small");
  save(f.fd, 3, std::string(5 * kAlign, 'L'));  // slot 0 grows past slot 1's payload
  const Header h = header_of(f.fd);
  CHECK(h.slots[0].offset >= h.slots[1].offset + h.slots[1].length);
  auto s = read_newest_snapshot(f.fd);
  REQUIRE(s);
  CHECK(s->step == 3);
  CHECK(s->payload == std::string(5 * kAlign, 'L'));
}

TEST_CASE("snapshot: a torn newest slot is skipped for the older one") {
  TempDir dir;
  OpenFile f(dir / "region");
  save(f.fd, 7, "older state");
  save(f.fd, 8, "newer state");
  SECTION("its payload corrupted") {
    const Header h = header_of(f.fd);
    REQUIRE(::pwrite(f.fd, "X", 1, static_cast<off_t>(h.slots[1].offset + 2)) == 1);
  }
  SECTION("a crash mid-copy: invalidated, half the payload, no checksum") {
    Header h = header_of(f.fd);
    const Slot empty{};
    REQUIRE(::pwrite(f.fd, &empty, sizeof empty, offsetof(Header, slots)) == sizeof empty);  // slot 0: the older
    REQUIRE(::pwrite(f.fd, "half", 4, static_cast<off_t>(h.slots[0].offset)) == 4);
    auto s = read_newest_snapshot(f.fd);
    REQUIRE(s);
    CHECK(s->step == 8);  // the newest one is still whole
    return;
  }
  SECTION("its descriptor torn (a step that does not match the checksum)") {
    const uint64_t step = 9;
    REQUIRE(::pwrite(f.fd, &step, sizeof step, offsetof(Header, slots) + sizeof(Slot) + offsetof(Slot, step)) == 8);
  }
  auto s = read_newest_snapshot(f.fd);
  REQUIRE(s);
  CHECK(s->step == 7);
  CHECK(s->payload == "older state");
}

TEST_CASE("snapshot: both slots torn, or a file that is not a region: nothing") {
  TempDir dir;
  OpenFile f(dir / "region");
  save(f.fd, 1, "a");
  save(f.fd, 2, "b");
  const Header h = header_of(f.fd);
  REQUIRE(::pwrite(f.fd, "?", 1, static_cast<off_t>(h.slots[0].offset)) == 1);
  REQUIRE(::pwrite(f.fd, "?", 1, static_cast<off_t>(h.slots[1].offset)) == 1);
  CHECK_FALSE(read_newest_snapshot(f.fd).has_value());
  ddp::test::write_file(dir / "junk", std::string(8192, 'j'));
  CHECK_FALSE(read_newest_snapshot(dir / "junk").has_value());
  CHECK_FALSE(read_newest_snapshot(dir / "missing").has_value());
}

TEST_CASE("snapshot: the launcher's files are private, and a dead launcher's are swept") {
  TempDir dir;
  const auto made = ddp::launch::os::create_private_shm_file(dir.path(), "pfx", "0");
  REQUIRE(made.error.empty());
  struct stat st {};
  REQUIRE(::stat(made.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(st.st_size == 0);
  const auto other = ddp::launch::os::create_private_shm_file(dir.path(), "pfx", "0");
  CHECK(other.path != made.path);  // unguessable: a fresh random part each time

  // A launcher that is gone (a pid no process has: the kernel's limit is below 2^22 + 1).
  const std::string dead = dir / "pfx-4194305-0123abcd-0";
  const std::string alive = dir / ("pfx-" + std::to_string(::getppid()) + "-0123abcd-0");
  const std::string unrelated = dir / "other-4194305-x-0";
  for (const auto& p : {dead, alive, unrelated}) ddp::test::write_file(p, "");
  CHECK(ddp::launch::os::sweep_orphaned_shm_files(dir.path(), "pfx") == 1);
  CHECK_FALSE(ddp::test::file_exists(dead));
  CHECK(ddp::test::file_exists(alive));
  CHECK(ddp::test::file_exists(unrelated));
  CHECK(ddp::test::file_exists(made.path));  // ours: this process is running

  CHECK_FALSE(ddp::launch::os::create_private_shm_file(dir / "missing", "pfx", "0").error.empty());
}
