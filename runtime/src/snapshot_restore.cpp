// ddp::Snapshot::restore (docs/snapshots.md, "Agreeing on a step, healing"): the ranks agree on
// S, the smallest newest step among the ranks holding a snapshot; ranks without S receive it
// from the lowest rank holding it (length, then bytes, broadcast on ddp::device()) and keep it
// in their own region; every rank checks its archive and all agree before any loads, so a
// rank that cannot load fails every rank at the same point instead of leaving them in a
// collective. Collectives, in order: MIN, all_gather, [broadcast, broadcast], MIN.
// restore_newest first agrees on S (MIN) and broadcasts rank 0's newest checkpoint step, then
// loads that checkpoint (load_checkpoint) or runs restore().
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>

#include "checkpoint_archive.hpp"
#include "contract/snapshot_file.hpp"
#include "ddp/process_group.hpp"
#include "ddp/progress.hpp"
#include "ddp/snapshot.hpp"
#include "group_impl.hpp"

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

// The complete snapshot of `step` in the region: the newest if it is that step, else the
// other slot's (a rank that saved one step more than another still holds the older step).
std::optional<snapshot::Snapshot> snapshot_of_step(int fd, int64_t step, std::optional<snapshot::Snapshot> newest) {
  if (newest && static_cast<int64_t>(newest->step) == step) return newest;
  newest.reset();  // free its memory before reading the other
  if (fd < 0) return std::nullopt;
  const snapshot::Header h = snapshot::read_header(fd);
  for (const snapshot::Slot& s : h.slots) {
    if (s.seq == 0 || static_cast<int64_t>(s.step) != step) continue;
    snapshot::Snapshot out;
    out.payload.resize(s.length);
    if (!snapshot::detail::pread_all(fd, out.payload.data(), s.length, s.offset)) continue;
    if (snapshot::slot_checksum(s, out.payload.data()) != s.checksum) continue;
    out.step = s.step;
    out.seq = s.seq;
    return out;
  }
  return std::nullopt;
}

// Rank `source`'s `payload` sent to every rank: the others return what they received (the
// source an empty string). The length goes first, so receivers can allocate.
std::string broadcast_payload(const std::string& payload, int source) {
  const bool sending = get_rank() == source;
  auto length = torch::tensor({static_cast<int64_t>(sending ? payload.size() : 0)}, torch::kLong).to(device());
  broadcast(length, source);
  const int64_t n = length.item<int64_t>();
  if (n == 0) return {};
  // The root's tensor is only read: a view of the payload on the CPU, a copy on a GPU.
  torch::Tensor bytes = sending ? torch::from_blob(const_cast<char*>(payload.data()), {n}, torch::kUInt8).to(device())
                                : torch::empty({n}, torch::TensorOptions().dtype(torch::kUInt8).device(device()));
  broadcast(bytes, source);
  if (sending) return {};
  bytes = bytes.cpu().contiguous();
  return std::string(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(n));
}

// The archive in `payload`, checked against model and optimizer (nothing loaded); throws
// CheckpointError.
torch::serialize::InputArchive checked_archive(const std::string& payload, const std::string& what,
                                               const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                                               torch::Device device) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(payload.data(), payload.size(), device);
  } catch (const c10::Error& e) {
    throw CheckpointError(what + " passed its checksum but is not a readable archive: " +
                          std::string(e.what_without_backtrace()).substr(0, 200));
  }
  detail::check_checkpoint_archive(archive, what, model, optimizer);
  return archive;
}

// A received snapshot kept in this rank's region, so that it holds it at the next failure.
// A region that cannot hold it is a warning: this restore goes on.
void keep_in_region(int fd, const std::string& path, int64_t step, const std::string& payload) {
  if (fd < 0) return;
  const snapshot::WriteResult r =
      snapshot::write_snapshot(fd, static_cast<uint64_t>(step), payload.data(), payload.size());
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

}  // namespace

std::optional<Snapshot::Restored> Snapshot::restore(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                                    std::optional<torch::Device> device) {
  collect();                                           // this process's write in flight lands first
  const auto& world_group = detail::registry().world;  // a large payload's broadcast is a legitimate pause
  const PauseProgress pause(world_group ? world_group->timeout() : std::chrono::milliseconds(0));
  const auto started = std::chrono::steady_clock::now();
  std::optional<snapshot::Snapshot> newest;
  if (fd_ >= 0) newest = snapshot::read_newest_snapshot(fd_);
  const int64_t step = reduce_over_ranks(newest ? static_cast<int64_t>(newest->step) : kNoSnapshot, ReduceOp::kMin);
  if (step == kNoSnapshot) return std::nullopt;  // no rank holds one: the caller reads its disk checkpoint
  std::optional<snapshot::Snapshot> held = snapshot_of_step(fd_, step, std::move(newest));

  Restored out;
  out.step = step;
  const std::vector<bool> has = holders(held.has_value());
  for (int r = 0; r < static_cast<int>(has.size()); ++r) {
    if (!has[r]) out.healed_ranks.push_back(r);
    else if (out.source_rank < 0) out.source_rank = r;
  }
  if (out.source_rank < 0) return std::nullopt;  // cannot happen: the rank whose newest is S holds S
  std::string payload;
  if (out.healed_ranks.empty()) {
    out.source_rank = -1;
    payload = std::move(held->payload);
  } else {
    static const std::string kNothing;
    std::string received = broadcast_payload(held ? held->payload : kNothing, out.source_rank);
    out.healed = !held;
    payload = held ? std::move(held->payload) : std::move(received);
  }
  held.reset();

  const std::string what = "the in-memory snapshot of step " + std::to_string(step) + " (" +
                           (out.healed ? "received from rank " + std::to_string(out.source_rank) : path_) + ")";
  std::string error;
  torch::serialize::InputArchive archive;
  try {
    archive = checked_archive(payload, what, model, optimizer, device.value_or(ddp::device()));
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
  if (out.healed) keep_in_region(fd_, path_, step, payload);
  out.extra = detail::load_checkpoint_archive(archive, what, model, optimizer);
  if (out.healed)
    std::cerr << "ddp::Snapshot: rank " << get_rank() << " received the snapshot of step " << step << " from rank "
              << out.source_rank << " (" << payload.size() << " bytes; restored in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() << " s)"
              << std::endl;
  return out;
}

std::optional<Snapshot::Restored> Snapshot::restore_newest(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                                           const std::string& checkpoint_dir,
                                                           std::optional<torch::Device> device) {
  collect();
  std::optional<snapshot::Snapshot> newest;
  if (fd_ >= 0) newest = snapshot::read_newest_snapshot(fd_);
  const int64_t step = reduce_over_ranks(newest ? static_cast<int64_t>(newest->step) : kNoSnapshot, ReduceOp::kMin);
  newest.reset();
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
    out = restore(model, optimizer, device);
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
