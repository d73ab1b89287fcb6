// ddp::Snapshot::restore (docs/snapshots.md, "Agreeing on a step, healing"): the ranks agree on
// S, the smallest newest step among the ranks holding a snapshot; ranks without S receive it
// from the lowest rank holding it (length, then bytes, broadcast on ddp::device()) and keep it
// in their own region; every rank checks its archive and all agree before any loads, so a
// rank that cannot load fails every rank at the same point instead of leaving them in a
// collective. Collectives, in order: MIN, all_gather, [broadcast, broadcast], MIN.
// restore_newest first agrees on S (MIN) and broadcasts rank 0's newest checkpoint step, then
// loads that checkpoint (load_checkpoint) or runs restore(). A rank's own snapshot is read where
// it lies: its slot mapped copy-on-write, only a tensor table's head checksummed.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>

#include "runtime/src/checkpoint/checkpoint_archive.hpp"
#include "contract/snapshot_file.hpp"
#include "ddp/process_group.hpp"
#include "ddp/progress.hpp"
#include "ddp/snapshot.hpp"
#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/process/progress_feed.hpp"
#include "runtime/src/checkpoint/tensor_table.hpp"

namespace ddp {
namespace {

constexpr int64_t kNoSnapshot = std::numeric_limits<int64_t>::max();

bool distributed() { return is_initialized() && get_world_size() > 1; }

// Every rank's value reduced with `op` (the value itself without a process group).
int64_t reduce_over_ranks(int64_t value, ReduceOp op) {
  if (!distributed()) return value;
  auto t = torch::tensor({value}, torch::kLong).to(device());
  all_reduce(t, op);
  return t.item<int64_t>();
}

// Whether each rank holds the agreed step, by rank (this rank's flag alone without a group).
std::vector<bool> holders(bool held) {
  if (!distributed()) return {held};
  std::vector<bool> out;
  for (const torch::Tensor& t : all_gather(torch::tensor({held ? 1 : 0}, torch::kInt).to(device())))
    out.push_back(t.item<int>() != 0);
  return out;
}

// A complete snapshot in this rank's region, mapped where it lies (no copy).
struct Held {
  int64_t step = 0;
  detail::PayloadBytes payload;
};

// Slot `s` of the region open on `fd` (of `file_size` bytes), mapped copy-on-write and checked
// against its checksum; nullopt when it is empty, torn or cannot be mapped.
std::optional<Held> map_slot(int fd, const snapshot::Slot& s, uint64_t file_size) {
  if (!snapshot::slot_in_file(s, file_size)) return std::nullopt;
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = s.offset / page * page;
  const size_t span = static_cast<size_t>(s.offset - start + std::max<uint64_t>(s.length, 1));
  void* addr = ::mmap(nullptr, span, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, static_cast<off_t>(start));
  if (addr == MAP_FAILED) return std::nullopt;
  const std::shared_ptr<const char> mapping(static_cast<const char*>(addr),
                                            [span](const char* p) { ::munmap(const_cast<char*>(p), span); });
  Held out;
  out.step = static_cast<int64_t>(s.step);
  out.payload.data = std::shared_ptr<const char>(mapping, mapping.get() + (s.offset - start));
  out.payload.size = s.length;
  if (snapshot::slot_checksum(s, out.payload.data.get()) != s.checksum) return std::nullopt;
  return out;
}

// The newest complete snapshot in the region open on `fd` (with `step`: that step's, from
// either slot: a rank that saved one step more than another still holds the older step).
std::optional<Held> held_snapshot(int fd, int64_t step = -1) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return std::nullopt;
  const snapshot::Header h = snapshot::read_header(fd);
  for (const int i : snapshot::slots_newest_first(h)) {
    if (step >= 0 && static_cast<int64_t>(h.slots[i].step) != step) continue;
    if (auto held = map_slot(fd, h.slots[i], static_cast<uint64_t>(st.st_size))) return held;
  }
  return std::nullopt;
}

// Rank `source`'s `payload` sent to every rank: the others return what they received (the
// source nothing). The length goes first, so receivers can allocate.
detail::PayloadBytes broadcast_payload(const detail::PayloadBytes& payload, int source) {
  const bool sending = get_rank() == source;
  auto length = torch::tensor({static_cast<int64_t>(sending ? payload.size : 0)}, torch::kLong).to(device());
  broadcast(length, source);
  const int64_t n = length.item<int64_t>();
  if (n == 0) return {};
  // The root's tensor is only read: a view of the payload on the CPU, a copy on a GPU.
  torch::Tensor bytes = sending
                            ? torch::from_blob(const_cast<char*>(payload.data.get()), {n}, torch::kUInt8).to(device())
                            : torch::empty({n}, torch::TensorOptions().dtype(torch::kUInt8).device(device()));
  broadcast(bytes, source);
  if (sending) return {};
  bytes = bytes.cpu().contiguous();
  detail::PayloadBytes received;
  received.data = std::shared_ptr<const char>(static_cast<const char*>(bytes.data_ptr()), [bytes](const char*) {});
  received.size = static_cast<uint64_t>(n);
  return received;
}

// The archive in `payload` (a tensor table or a whole archive), checked against model and
// optimizer (nothing loaded); throws CheckpointError.
torch::serialize::InputArchive checked_archive(const detail::PayloadBytes& payload, const std::string& what,
                                               const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                                               torch::Device device) {
  torch::serialize::InputArchive archive;
  if (detail::is_tensor_table(payload.data.get(), payload.size)) {
    archive = detail::read_tensor_table(payload, device, what);
  } else {
    try {
      archive.load_from(payload.data.get(), payload.size, device);
    } catch (const c10::Error& e) {
      throw CheckpointError(what + " passed its checksum but is not a readable archive: " +
                            std::string(e.what_without_backtrace()).substr(0, 200));
    }
  }
  detail::check_checkpoint_archive(archive, what, model, optimizer);
  return archive;
}

// A received snapshot kept in this rank's region, so that it holds it at the next failure (a
// tensor table with its head checked, as its writer wrote it). A region that cannot hold it is
// a warning: this restore goes on.
void keep_in_region(int fd, const std::string& path, int64_t step, const detail::PayloadBytes& payload) {
  if (fd < 0) return;
  const uint64_t head = detail::tensor_table_head_length(payload.data.get(), payload.size);
  const snapshot::Part whole{0, payload.data.get(), payload.size};
  const snapshot::WriteResult r = snapshot::write_snapshot_parts(fd, static_cast<uint64_t>(step), &whole, 1,
                                                                 payload.size, head > 0 ? head : payload.size);
  if (r.error != 0)
    std::cerr << "ddp::Snapshot: cannot keep the received snapshot of step " << step << " in " << path << " (it needs "
              << r.bytes_needed << " bytes): " << std::strerror(r.error) << "; training goes on without it"
              << std::endl;
}

// The newest ckpt_<digits>.pt (a regular file) in `dir` (with `only_step`: that step's):
// (step, path); nullopt when there is none.
std::optional<std::pair<int64_t, std::string>> newest_checkpoint_in(const std::string& dir, int64_t only_step = -1) {
  std::optional<std::pair<int64_t, std::string>> best;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= 8 || name.rfind("ckpt_", 0) != 0 || name.compare(name.size() - 3, 3, ".pt") != 0) continue;
    const std::string digits = name.substr(5, name.size() - 8);
    if (digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); }))
      continue;
    if (!it->is_regular_file(ec)) continue;
    const int64_t step = std::stoll(digits);
    if ((only_step < 0 || step == only_step) && (!best || step > best->first)) best.emplace(step, it->path().string());
  }
  return best;
}

// Rank 0's newest checkpoint step in `dir`, on every rank; -1 when there is none.
int64_t rank0_newest_checkpoint(const std::string& dir) {
  int64_t step = -1;
  if (get_rank() == 0) {
    if (auto found = newest_checkpoint_in(dir)) step = found->first;
  }
  if (!distributed()) return step;
  auto t = torch::tensor({step}, torch::kLong).to(ddp::device());
  broadcast(t, 0);
  return t.item<int64_t>();
}

// restore() once the region's newest snapshot (`newest`) is read: agree, heal, check, load.
std::optional<Snapshot::Restored> restore_agreed(int fd, const std::string& path, std::optional<Held> newest,
                                                 torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                                 torch::Device device) {
  const auto& world_group = detail::registry().world;  // a large payload's broadcast is a legitimate pause
  const PauseProgress pause(world_group ? world_group->timeout() : std::chrono::milliseconds(0));
  const auto started = std::chrono::steady_clock::now();
  const int64_t step = reduce_over_ranks(newest ? newest->step : kNoSnapshot, ReduceOp::kMin);
  if (step == kNoSnapshot) return std::nullopt;  // no rank holds one: the caller reads its disk checkpoint
  std::optional<Held> held = newest && newest->step == step ? std::move(newest) : held_snapshot(fd, step);
  newest.reset();

  Snapshot::Restored out;
  out.step = step;
  const std::vector<bool> has = holders(held.has_value());
  for (int r = 0; r < static_cast<int>(has.size()); ++r) {
    if (!has[r]) out.healed_ranks.push_back(r);
    else if (out.source_rank < 0) out.source_rank = r;
  }
  if (out.source_rank < 0) return std::nullopt;  // cannot happen: the rank whose newest is S holds S
  detail::PayloadBytes payload;
  if (out.healed_ranks.empty()) {
    out.source_rank = -1;
    payload = held->payload;
  } else {
    detail::PayloadBytes received = broadcast_payload(held ? held->payload : detail::PayloadBytes{}, out.source_rank);
    out.healed = !held;
    payload = held ? held->payload : std::move(received);
  }
  held.reset();

  const std::string what = "the in-memory snapshot of step " + std::to_string(step) + " (" +
                           (out.healed ? "received from rank " + std::to_string(out.source_rank) : path) + ")";
  std::string error;
  torch::serialize::InputArchive archive;
  try {
    archive = checked_archive(payload, what, model, optimizer, device);
  } catch (const CheckpointError& e) {
    error = e.what();
  }
  const int world = get_world_size();
  const int64_t failed = reduce_over_ranks(error.empty() ? world : get_rank(), ReduceOp::kMin);
  if (failed < world) {
    if (error.empty())
      error = what + " does not load on rank " + std::to_string(failed) + " (its log says why); nothing was loaded";
    throw CheckpointError(error);
  }
  if (out.healed) keep_in_region(fd, path, step, payload);
  out.extra = detail::load_checkpoint_archive(archive, what, model, optimizer);
  detail::feed::restored(step);
  if (out.healed)
    std::cerr << "ddp::Snapshot: rank " << get_rank() << " received the snapshot of step " << step << " from rank "
              << out.source_rank << " (" << payload.size << " bytes; restored in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s)"
              << std::endl;
  return out;
}

}  // namespace

std::optional<Snapshot::Restored> Snapshot::restore(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                                    std::optional<torch::Device> device) {
  collect();  // this process's write in flight lands first
  return restore_agreed(fd_, path_, held_snapshot(fd_), model, optimizer, device.value_or(ddp::device()));
}

std::optional<Snapshot::Restored> Snapshot::restore_newest(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                                           const std::string& checkpoint_dir,
                                                           std::optional<torch::Device> device) {
  collect();
  std::optional<Held> newest = held_snapshot(fd_);
  const int64_t step = reduce_over_ranks(newest ? newest->step : kNoSnapshot, ReduceOp::kMin);
  const int64_t on_disk = rank0_newest_checkpoint(checkpoint_dir);
  std::optional<Restored> out;
  if (on_disk >= 0 && (step == kNoSnapshot || on_disk > step)) {
    out.emplace();
    out->step = on_disk;
    const auto file = newest_checkpoint_in(checkpoint_dir, on_disk);  // rank 0's file, as this rank sees the folder
    out->source = file ? file->second : checkpoint_dir + "/ckpt_" + std::to_string(on_disk) + ".pt";
    out->why = step == kNoSnapshot ? "no rank holds an in-memory snapshot"
                                   : "it is newer than the in-memory snapshot of step " + std::to_string(step);
    out->extra = load_checkpoint(out->source, model, optimizer, device);
  } else if (step != kNoSnapshot) {
    out = restore_agreed(fd_, path_, std::move(newest), model, optimizer, device.value_or(ddp::device()));
    if (out) {
      out->why = on_disk >= 0 ? "the newest checkpoint in " + checkpoint_dir + " is of step " + std::to_string(on_disk)
                              : checkpoint_dir + " holds no checkpoint";
    }
  }
  if (out && get_rank() == 0) {
    std::cerr << "ddp::Snapshot: resuming from "
              << (out->source == "snapshot" ? "the in-memory snapshot of step " + std::to_string(out->step)
                                            : out->source + " (step " + std::to_string(out->step) + ")")
              << ": " << out->why << std::endl;
  }
  return out;
}

}  // namespace ddp
