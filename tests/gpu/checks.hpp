// The GPU check program's checks (tests/gpu, run by scripts/gpu-check.sh under a launcher or
// with --spawn). Each runs in one worker, throws std::runtime_error naming what differed, and
// prints one "ok ..." / "peer=..." line on rank 0. Options come as "--key value" pairs.
#pragma once

#include <map>
#include <string>

#include <torch/torch.h>

namespace ddp::gpu_check {

using Args = std::map<std::string, std::string>;

std::string arg(const Args& args, const std::string& key, const std::string& fallback);

// "--device cuda" -> cuda:0 for gloo, ddp::device() (cuda:LOCAL_RANK) for NCCL; "cpu" -> CPU.
torch::Device check_device(const Args& args);

// all_reduce / broadcast / all_gather / barrier on device tensors (and a CPU tensor).
void collectives(const Args& args);
// DDP training on the device equals single-process training on the combined batch (CPU).
void ddp_matches_single(const Args& args);
// Checkpoint saved from the device, loaded mapped to CPU, saved again and loaded back.
void checkpoint_round_trip(const Args& args);
// ddp::Snapshot on the device: what each save() holds is the state of save() time although
// the next training step (with and without DDP) changes every tensor while its copies run.
void snapshot_staging(const Args& args);
// Step time of an MLP or a small conv net, without DDP and then wrapped in DDP.
void bench(const Args& args);

}  // namespace ddp::gpu_check
