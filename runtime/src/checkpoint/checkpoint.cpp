// Checkpoints: one torch archive {ddp/format, model, optimizer, extra/*}; rank 0 writes it
// atomically (temp + fsync + rename + dir fsync), every rank learns the outcome. Both hold a
// PauseProgress (as long as the process group's timeout): a slow save is not a hang.
#include "ddp/checkpoint.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include <sstream>

#include "runtime/src/checkpoint/checkpoint_archive.hpp"
#include "runtime/src/checkpoint/tensor_table.hpp"
#include "ddp/progress.hpp"
#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/process/progress_feed.hpp"

namespace ddp {
namespace {

const char* const kFormat = "ddp-checkpoint-v1";

std::string errno_text() { return std::strerror(errno); }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A save or load is a legitimate pause, for as long as a collective may take.
std::chrono::milliseconds pause_limit() {
  const auto& world = detail::registry().world;
  return world ? world->timeout() : std::chrono::milliseconds(0);
}

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void write_atomically(const std::string& path, torch::serialize::OutputArchive& archive) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw CheckpointError("cannot create '" + tmp + "': " + errno_text() +
                          "; check that the directory exists and is writable");
  }
  std::string write_error;
  archive.save_to([&](const void* data, size_t size) -> size_t {
    const char* p = static_cast<const char*>(data);
    size_t left = size;
    while (left > 0 && write_error.empty()) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        write_error = errno_text();
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    return write_error.empty() ? size : 0;
  });
  if (write_error.empty() && ::fsync(fd) != 0) write_error = errno_text();
  ::close(fd);
  if (!write_error.empty()) {
    ::unlink(tmp.c_str());
    throw CheckpointError("writing checkpoint '" + path + "' failed: " + write_error + " (is the disk full?)");
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = errno_text();
    ::unlink(tmp.c_str());
    throw CheckpointError("cannot rename '" + tmp + "' to '" + path + "': " + err);
  }
  int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void save_local(const std::string& path, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                const CheckpointExtra& extra) {
  torch::serialize::OutputArchive archive = detail::checkpoint_archive(model, optimizer, extra);
  write_atomically(path, archive);
}

// Every parameter and buffer of `module` (recursively, as Module::load walks it) is in the
// archive with the module's shape and dtype; else a CheckpointError naming the tensor, before
// anything is loaded.
void check_tensors(torch::serialize::InputArchive& archive, const torch::nn::Module& module, const std::string& prefix,
                   const std::string& what) {
  auto check = [&](const std::string& key, const torch::Tensor& want, bool is_buffer) {
    torch::Tensor got;
    if (!archive.try_read(key, got, is_buffer) || !got.defined()) {
      throw CheckpointError(what + " has no " + (is_buffer ? "buffer '" : "parameter '") + prefix + key +
                            "' the model has; was it saved from another model?");
    }
    if (got.sizes() != want.sizes() || got.scalar_type() != want.scalar_type()) {
      std::ostringstream msg;
      msg << what << " does not match the model: tensor '" << prefix << key << "' is " << got.scalar_type()
          << got.sizes() << " there and " << want.scalar_type() << want.sizes()
          << " in the model; nothing was loaded (was it saved from another model?)";
      throw CheckpointError(msg.str());
    }
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive child_archive;
    if (!archive.try_read(child.key(), child_archive)) {
      throw CheckpointError(what + " has no module '" + prefix + child.key() +
                            "' the model has; was it saved from "
                            "another model?");
    }
    check_tensors(child_archive, *child.value(), prefix + child.key() + ".", what);
  }
}

// Copies every parameter and buffer of `module` (recursively) out of the archive into the
// module's own storage (check_tensors passed): the parameters keep their memory, and a
// tensor table's views are read once.
void copy_tensors(torch::serialize::InputArchive& archive, torch::nn::Module& module) {
  auto copy = [&](const std::string& key, torch::Tensor& into, bool is_buffer) {
    torch::Tensor got;
    archive.read(key, got, is_buffer);
    into.copy_(got);
  };
  for (auto& p : module.named_parameters(/*recurse=*/false)) copy(p.key(), p.value(), false);
  for (auto& b : module.named_buffers(/*recurse=*/false)) copy(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive child_archive;
    archive.read(child.key(), child_archive);
    copy_tensors(child_archive, *child.value());
  }
}

// A checkpoint file laid out as a tensor table (a snapshot the launcher persisted), mapped.
std::optional<detail::PayloadBytes> mapped_tensor_table(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  char magic[4] = {};
  const bool table = ::fstat(fd, &st) == 0 && ::pread(fd, magic, sizeof magic, 0) == sizeof magic &&
                     detail::is_tensor_table(magic, sizeof magic);
  void* addr = table ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (addr == MAP_FAILED) return std::nullopt;
  const auto size = static_cast<size_t>(st.st_size);
  detail::PayloadBytes bytes;
  bytes.data = std::shared_ptr<const char>(static_cast<const char*>(addr),
                                           [size](const char* p) { ::munmap(const_cast<char*>(p), size); });
  bytes.size = size;
  return bytes;
}

}  // namespace

const torch::optim::OptimizerParamState* optimizer_param_state(const torch::optim::Optimizer& optimizer,
                                                               const torch::Tensor& param) {
  const auto it = optimizer.state().find(compat::optimizer_state_key(param));
  return it == optimizer.state().end() ? nullptr : it->second.get();
}

void save_checkpoint(const std::string& path, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                     const CheckpointExtra& extra) {
  const PauseProgress pause(pause_limit());
  const detail::feed::SavingClock saving;
  const bool distributed = is_initialized() && get_world_size() > 1;
  std::string error;
  if (!distributed || get_rank() == 0) {
    try {
      save_local(path, model, optimizer, extra);
    } catch (const CheckpointError& e) {
      error = e.what();
    } catch (const c10::Error& e) {
      error = "saving checkpoint '" + path + "' failed: " + first_line(e.what_without_backtrace());
    }
  }
  if (distributed) {
    // Doubles as the barrier: nobody continues (or deletes the old file) before rank 0 is done.
    auto failed = torch::tensor({error.empty() ? 0 : 1}, torch::kInt);
    all_reduce(failed, ReduceOp::kMax);
    if (failed.item<int>() != 0 && error.empty()) {
      error = "rank 0 failed to write checkpoint '" + path + "'; see rank 0's log for the cause";
    }
  }
  if (!error.empty()) throw CheckpointError(error);
}

CheckpointExtra load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                std::optional<torch::Device> device) {
  const PauseProgress pause(pause_limit());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw CheckpointError("checkpoint '" + path + "' does not exist (" + errno_text() + ")");
  }
  torch::serialize::InputArchive archive;
  if (const auto table = mapped_tensor_table(path)) {  // a snapshot the launcher persisted
    archive = detail::read_tensor_table(*table, device.value_or(ddp::device()), "checkpoint '" + path + "'");
  } else {
    try {
      archive.load_from(path, device.value_or(ddp::device()));
    } catch (const c10::Error& e) {
      throw CheckpointError("'" + path +
                            "' is not a readable checkpoint (truncated, corrupt or not a torch archive): " +
                            first_line(e.what_without_backtrace()));
    }
  }
  if (!detail::is_checkpoint_archive(archive)) {
    throw CheckpointError("'" + path + "' is not a libddp checkpoint (no '" + std::string(kFormat) +
                          "' marker); was it written by ddp::save_checkpoint?");
  }
  CheckpointExtra extra = detail::load_checkpoint_archive(archive, "checkpoint '" + path + "'", model, optimizer);
  const auto step = extra.find("step");
  detail::feed::restored(step != extra.end() && step->second.isInt() ? std::optional(step->second.toInt())
                                                                     : std::nullopt);
  return extra;
}

namespace detail {

torch::serialize::OutputArchive checkpoint_archive(const torch::nn::Module& model,
                                                   const torch::optim::Optimizer* optimizer,
                                                   const CheckpointExtra& extra) {
  torch::serialize::OutputArchive archive;
  archive.write("ddp/format", c10::IValue(std::string(kFormat)));
  torch::serialize::OutputArchive model_archive;
  model.save(model_archive);
  archive.write("model", model_archive);
  if (optimizer) {
    torch::serialize::OutputArchive optimizer_archive;
    optimizer->save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
  }
  c10::List<std::string> keys;
  for (const auto& [key, value] : extra) {
    keys.push_back(key);
    archive.write("extra/" + key, value);
  }
  archive.write("ddp/extra_keys", c10::IValue(keys));
  return archive;
}

bool is_checkpoint_archive(torch::serialize::InputArchive& archive) {
  c10::IValue format;
  return archive.try_read("ddp/format", format) && format.isString() && format.toStringRef() == kFormat;
}

void check_checkpoint_archive(torch::serialize::InputArchive& archive, const std::string& what,
                              const torch::nn::Module& model, const torch::optim::Optimizer* optimizer) {
  if (!is_checkpoint_archive(archive))
    throw CheckpointError(what + " is not a libddp checkpoint archive (no '" + std::string(kFormat) + "' marker)");
  torch::serialize::InputArchive checked_model;
  if (!archive.try_read("model", checked_model)) throw CheckpointError(what + " has no model state");
  check_tensors(checked_model, model, "", what);
  torch::serialize::InputArchive checked_optimizer;
  if (optimizer && !archive.try_read("optimizer", checked_optimizer))
    throw CheckpointError(what + " has no optimizer state; pass nullptr as the optimizer");
}

CheckpointExtra load_checkpoint_archive(torch::serialize::InputArchive& archive, const std::string& what,
                                        torch::nn::Module& model, torch::optim::Optimizer* optimizer) {
  torch::serialize::InputArchive checked_model;
  if (!archive.try_read("model", checked_model)) throw CheckpointError(what + " has no model state");
  check_tensors(checked_model, model, "", what);
  try {
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    torch::NoGradGuard no_grad;
    copy_tensors(model_archive, model);
  } catch (const c10::Error& e) {
    throw CheckpointError(what + " does not match the model: " + first_line(e.what_without_backtrace()));
  }
  if (optimizer) {
    torch::serialize::InputArchive optimizer_archive;
    if (!archive.try_read("optimizer", optimizer_archive)) {
      throw CheckpointError(what + " has no optimizer state; pass nullptr as the optimizer");
    }
    try {
      optimizer->load(optimizer_archive);
    } catch (const c10::Error& e) {
      throw CheckpointError(what + " does not match the optimizer: " + first_line(e.what_without_backtrace()));
    }
  }
  CheckpointExtra extra;
  c10::IValue keys;
  if (archive.try_read("ddp/extra_keys", keys)) {
    const auto list = keys.toList();
    for (size_t k = 0; k < list.size(); ++k) {
      const std::string name = list.get(k).toStringRef();
      c10::IValue value;
      archive.read("extra/" + name, value);
      extra[name] = value;
    }
  }
  return extra;
}

}  // namespace detail
}  // namespace ddp
