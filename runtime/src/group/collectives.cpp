// The collectives of process_group.hpp and ddp::Work. Each one validates what it can locally
// (ConfigError), enters the progress record (sequence number: "all_reduce #12" in errors),
// runs the shape check when the group has it on, starts the c10d op and returns a Work whose
// wait() translates c10d exceptions (GroupImpl::rethrow_comm_error) and finishes the outputs
// (copy back, AVG's division, the fallbacks' slicing). Blocking forms are async(...).wait().
// Fallbacks (gloo lacks them in LibTorch 1.13): reduce_scatter = all_reduce of the
// concatenated inputs + this member's slice; all_gather_into_tensor = all_gather into views
// of the output; all_to_all = one all_to_all_single over the flattened tensors; AVG = SUM and
// a division.
#include "ddp/process_group.hpp"

#include <functional>

#include "runtime/src/group/group_impl.hpp"
#include "runtime/src/parallel/join_guard.hpp"
#include "runtime/src/group/shape_check.hpp"
#include "runtime/src/checkpoint/snapshot_fence.hpp"

namespace ddp {
namespace detail {

struct WorkState {
  Group group;
  compat::WorkPtr work;  // null: nothing to wait for
  std::string what;      // "all_reduce #12"
  uint64_t seq = 0;
  std::function<void()> finish;  // runs once, after the c10d work succeeded
  bool recv_any = false;
  bool done = false;
  std::exception_ptr error;
  int source = -1;
};

namespace {

using progress::Op;
using shape_check::Call;

c10d::ReduceOp c10d_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return c10d::ReduceOp::SUM;
    case ReduceOp::kProduct: return c10d::ReduceOp::PRODUCT;
    case ReduceOp::kMin: return c10d::ReduceOp::MIN;
    case ReduceOp::kMax: return c10d::ReduceOp::MAX;
    case ReduceOp::kBand: return c10d::ReduceOp::BAND;
    case ReduceOp::kBor: return c10d::ReduceOp::BOR;
    case ReduceOp::kBxor: return c10d::ReduceOp::BXOR;
  }
  return c10d::ReduceOp::SUM;
}

std::string dtype_text(int64_t t) { return c10::toString(static_cast<c10::ScalarType>(t)); }

std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "] " + c10::toString(t.scalar_type());
}

void require(bool ok, const std::string& name, const std::string& what) {
  if (!ok) throw ConfigError(name + ": " + what);
}

void require_dense(const torch::Tensor& t, const std::string& name, const char* role) {
  require(t.defined(), name, std::string(role) + " is an undefined tensor");
  require(t.is_contiguous() && !t.is_sparse(), name,
          std::string(role) + " must be a dense contiguous tensor (call .contiguous())");
}

Call call_of(Op op, const torch::Tensor& t, int64_t root = -1, int64_t reduce_op = -1) {
  Call c;
  c.kind = static_cast<int64_t>(op);
  if (t.defined()) {
    c.dtype = static_cast<int64_t>(t.scalar_type());
    c.shape = t.sizes().vec();
  }
  c.root = root;
  c.reduce_op = reduce_op;
  return c;
}

// One small all_gather of every member's fingerprint; throws the same ConfigError everywhere.
void check(const GroupImpl& g, const std::string& what, const Call& call) {
  const int n = g.size();
  auto mine = torch::tensor(shape_check::encode(call, n), torch::kLong);
  if (g.backend_name() == "nccl") mine = mine.to(registry().device);
  std::vector<torch::Tensor> in{mine};
  std::vector<std::vector<torch::Tensor>> out(1);
  for (int i = 0; i < n; ++i) out[0].push_back(torch::empty_like(mine));
  g.wait(g.backend().allgather(out, in), what + " (its shape check)");
  std::vector<Call> calls;
  for (auto& t : out[0]) {
    auto cpu = t.cpu();
    calls.push_back(shape_check::decode(cpu.data_ptr<int64_t>(), n));
  }
  const std::string bad = shape_check::mismatch(calls, g.ranks(), progress::op_name, dtype_text);
  if (!bad.empty()) throw ConfigError(what + ": " + bad);
}

// NCCL only moves CUDA tensors: a CPU tensor is staged on this worker's device; outputs are
// copied back in finish (copy_back).
torch::Tensor staged(const torch::Tensor& t, const GroupImpl& g) {
  if (g.backend_name() == "nccl" && t.defined() && !t.is_cuda()) return t.to(registry().device);
  return t;
}

struct Launch {
  const char* name;
  Op op;
  torch::Tensor fed;  // what the progress record shows (may be undefined)
  bool checked = true;
  Call call;
  int source = -1;        // recv from a known member: its global rank
  bool recv_any = false;  // recv from any member: the source is known after wait()
};

// Enters the record, checks shapes, starts the op; a failure before the start completes the
// record entry and is translated (ConfigError from the check passes through).
Work start(const Group& group, Launch l, const std::function<compat::WorkPtr(compat::Backend&)>& begin,
           std::function<void()> finish) {
  join_guard::check(l.name);
  snapshot_fence::wait();  // a snapshot write in flight lands before the ranks move on
  auto& g = group.impl();
  auto& backend = g.backend();  // ConfigError for a non-member
  auto state = std::make_shared<WorkState>();
  state->group = group;
  state->seq = enter_collective(g, l.op, l.fed);
  state->what = std::string(l.name) + " #" + std::to_string(state->seq);
  state->finish = std::move(finish);
  state->source = l.source;
  state->recv_any = l.recv_any;
  try {
    if (l.checked && g.check_shapes() && !shape_check::skipped()) check(g, state->what, l.call);
    state->work = begin(backend);
  } catch (const ddp::Error&) {
    feed::complete(state->seq);
    throw;
  } catch (const c10::Error& e) {  // thrown before anything was sent: the backend refused the call
    feed::complete(state->seq);
    std::string cause = e.what();
    throw ConfigError(state->what + ": the " + g.backend_name() +
                      " backend refused it: " + cause.substr(0, cause.find("\nException raised from")) +
                      " (gloo has no bfloat16 or bool reductions; see docs/runtime.md \"Collectives\")");
  } catch (...) {
    feed::complete(state->seq);
    g.rethrow_comm_error(state->what);
  }
  if (l.op != Op::kSend && l.op != Op::kRecv && feed::enabled()) {
    const uint64_t seq = state->seq;
    compat::work_future(state->work)->addCallback([seq](c10::ivalue::Future&) { feed::complete(seq); });
  }
  return Work(state);
}

void divide_if_avg(torch::Tensor& t, ReduceOp op, int size) {
  if (op == ReduceOp::kAvg) t.div_(size);
}

// Copies `from` into `to` unless it already is `to`'s memory (a view of it, or itself).
void copy_back(torch::Tensor& to, const torch::Tensor& from) {
  if (from.device() == to.device() && from.data_ptr() == to.data_ptr()) return;
  to.copy_(from.view_as(to));
}

void check_op(ReduceOp op, const torch::Tensor& t, const std::string& name) {
  const bool bitwise = op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
  require(!bitwise || !t.is_floating_point(), name,
          "band/bor/bxor need an integer or bool tensor, not " + std::string(c10::toString(t.scalar_type())));
  require(op != ReduceOp::kAvg || t.is_floating_point(), name,
          "avg needs a floating-point tensor, not " + std::string(c10::toString(t.scalar_type())) + "; use sum");
}

}  // namespace
}  // namespace detail

using detail::Launch;
using detail::require;
using detail::require_dense;
using progress::Op;

void Work::wait() {
  if (!state_) return;
  auto& s = *state_;
  if (s.error) std::rethrow_exception(s.error);
  if (s.done) return;
  try {
    if (s.work) s.group.impl().wait(s.work, s.what);
    if (s.recv_any) s.source = s.group.impl().ranks().at(static_cast<size_t>(s.work->sourceRank()));
    if (s.finish) s.finish();
    s.done = true;
  } catch (...) {
    s.error = std::current_exception();
  }
  detail::feed::complete(s.seq);
  if (s.error) std::rethrow_exception(s.error);
}

bool Work::is_completed() const {
  if (!state_ || state_->done || state_->error) return true;
  return state_->work && state_->work->isCompleted();
}

int Work::source_rank() const { return state_ ? state_->source : -1; }

namespace async {

Work barrier(const Group& group) {
  Launch l{"barrier", Op::kBarrier, {}, true, detail::call_of(Op::kBarrier, {})};
  return detail::start(
      group, l, [](compat::Backend& b) { return b.barrier(c10d::BarrierOptions()); }, nullptr);
}

Work broadcast(torch::Tensor& tensor, int src, const Group& group) {
  require_dense(tensor, "broadcast", "the tensor");
  auto& g = group.impl();
  const int root = g.group_rank_of(src);
  auto io = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  Launch l{"broadcast", Op::kBroadcast, tensor, true, detail::call_of(Op::kBroadcast, tensor, root)};
  return detail::start(
      group, l,
      [io, root](compat::Backend& b) {
        c10d::BroadcastOptions o;
        o.rootRank = root;
        return b.broadcast(*io, o);
      },
      [io, tensor]() mutable { detail::copy_back(tensor, (*io)[0]); });
}

Work all_reduce(torch::Tensor& tensor, ReduceOp op, const Group& group) {
  require_dense(tensor, "all_reduce", "the tensor");
  detail::check_op(op, tensor, "all_reduce");
  auto& g = group.impl();
  auto io = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  Launch l{"all_reduce", Op::kAllReduce, tensor, true,
           detail::call_of(Op::kAllReduce, tensor, -1, static_cast<int64_t>(op))};
  return detail::start(
      group, l,
      [io, op](compat::Backend& b) {
        c10d::AllreduceOptions o;
        o.reduceOp = detail::c10d_op(op);
        return b.allreduce(*io, o);
      },
      [io, tensor, op, size = g.size()]() mutable {
        detail::copy_back(tensor, (*io)[0]);
        detail::divide_if_avg(tensor, op, size);
      });
}

Work all_gather(std::vector<torch::Tensor>& outputs, const torch::Tensor& tensor, const Group& group) {
  require_dense(tensor, "all_gather", "the tensor");
  auto& g = group.impl();
  auto in = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  auto out = std::make_shared<std::vector<std::vector<torch::Tensor>>>(1);
  for (int i = 0; i < g.size(); ++i) (*out)[0].push_back(torch::empty_like((*in)[0]));
  Launch l{"all_gather", Op::kAllGather, tensor, true, detail::call_of(Op::kAllGather, tensor)};
  outputs.clear();
  auto* dest = &outputs;
  return detail::start(
      group, l, [in, out](compat::Backend& b) { return b.allgather(*out, *in); },
      [out, dest, device = tensor.device()] {
        dest->clear();
        for (auto& t : (*out)[0]) dest->push_back(t.to(device));
      });
}

Work all_gather_into_tensor(torch::Tensor& output, const torch::Tensor& input, const Group& group) {
  const std::string name = "all_gather_into_tensor";
  require_dense(input, name, "the input");
  require_dense(output, name, "the output");
  auto& g = group.impl();
  require(output.numel() == input.numel() * g.size() && output.scalar_type() == input.scalar_type(), name,
          "the output must hold " + std::to_string(g.size()) + " x the input's " + std::to_string(input.numel()) +
              " elements of " + c10::toString(input.scalar_type()) + ", got " + detail::shape_text(output));
  auto flat_out = detail::staged(output, g).view({g.size(), -1});
  auto in = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(input, g).view(-1));
  auto out = std::make_shared<std::vector<std::vector<torch::Tensor>>>(1, flat_out.unbind(0));
  Launch l{"all_gather_into_tensor", Op::kAllGather, input, true, detail::call_of(Op::kAllGather, input)};
  return detail::start(
      group, l, [in, out](compat::Backend& b) { return b.allgather(*out, *in); },
      [output, flat_out]() mutable { detail::copy_back(output, flat_out); });
}

Work reduce(torch::Tensor& tensor, int dst, ReduceOp op, const Group& group) {
  require_dense(tensor, "reduce", "the tensor");
  detail::check_op(op, tensor, "reduce");
  auto& g = group.impl();
  const int root = g.group_rank_of(dst);
  auto io = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  Launch l{"reduce", Op::kReduce, tensor, true, detail::call_of(Op::kReduce, tensor, root, static_cast<int64_t>(op))};
  const bool is_root = g.rank() == root;
  return detail::start(
      group, l,
      [io, op, root](compat::Backend& b) {
        c10d::ReduceOptions o;
        o.rootRank = root;
        o.reduceOp = detail::c10d_op(op);
        return b.reduce(*io, o);
      },
      [io, tensor, op, is_root, size = g.size()]() mutable {
        if (!is_root) return;
        detail::copy_back(tensor, (*io)[0]);
        detail::divide_if_avg(tensor, op, size);
      });
}

Work gather(std::vector<torch::Tensor>& outputs, const torch::Tensor& tensor, int dst, const Group& group) {
  require_dense(tensor, "gather", "the tensor");
  auto& g = group.impl();
  const int root = g.group_rank_of(dst);
  auto in = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  auto out = std::make_shared<std::vector<std::vector<torch::Tensor>>>();
  if (g.rank() == root) {
    out->resize(1);
    for (int i = 0; i < g.size(); ++i) (*out)[0].push_back(torch::empty_like((*in)[0]));
  }
  outputs.clear();
  auto* dest = &outputs;
  Launch l{"gather", Op::kGather, tensor, true, detail::call_of(Op::kGather, tensor, root)};
  return detail::start(
      group, l,
      [in, out, root](compat::Backend& b) {
        c10d::GatherOptions o;
        o.rootRank = root;
        return b.gather(*out, *in, o);
      },
      [out, dest, device = tensor.device()] {
        dest->clear();
        if (!out->empty()) {
          for (auto& t : (*out)[0]) dest->push_back(t.to(device));
        }
      });
}

Work scatter(torch::Tensor& output, const std::vector<torch::Tensor>& scatter_list, int src, const Group& group) {
  require_dense(output, "scatter", "the output");
  auto& g = group.impl();
  const int root = g.group_rank_of(src);
  auto in = std::make_shared<std::vector<std::vector<torch::Tensor>>>();
  if (g.rank() == root) {
    require(static_cast<int>(scatter_list.size()) == g.size(), "scatter",
            "src passes one tensor per member: " + std::to_string(g.size()) + ", got " +
                std::to_string(scatter_list.size()));
    in->resize(1);
    for (size_t i = 0; i < scatter_list.size(); ++i) {
      require_dense(scatter_list[i], "scatter", "scatter_list[i]");
      require(scatter_list[i].sizes() == output.sizes() && scatter_list[i].scalar_type() == output.scalar_type(),
              "scatter",
              "scatter_list[" + std::to_string(i) + "] is " + detail::shape_text(scatter_list[i]) +
                  " but the output is " + detail::shape_text(output) + "; every tensor must be shaped like the output");
      (*in)[0].push_back(detail::staged(scatter_list[i], g));
    }
  } else {
    require(scatter_list.empty(), "scatter", "only src passes a scatter_list; pass {} on the other members");
  }
  auto out = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(output, g));
  Launch l{"scatter", Op::kScatter, output, true, detail::call_of(Op::kScatter, output, root)};
  return detail::start(
      group, l,
      [in, out, root](compat::Backend& b) {
        c10d::ScatterOptions o;
        o.rootRank = root;
        return b.scatter(*out, *in, o);
      },
      [out, output]() mutable { detail::copy_back(output, (*out)[0]); });
}

Work reduce_scatter_tensor(torch::Tensor& output, const torch::Tensor& input, ReduceOp op, const Group& group) {
  const std::string name = "reduce_scatter_tensor";
  require_dense(input, name, "the input");
  require_dense(output, name, "the output");
  detail::check_op(op, input, name);
  auto& g = group.impl();
  require(input.numel() == output.numel() * g.size() && output.scalar_type() == input.scalar_type(), name,
          "the input must hold " + std::to_string(g.size()) + " x the output's " + std::to_string(output.numel()) +
              " elements of " + c10::toString(output.scalar_type()) + ", got " + detail::shape_text(input));
  // The fallback: SUM/... all_reduce of a copy of the whole input, then this member's slice.
  auto flat = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(input, g).reshape(-1).clone());
  Launch l{"reduce_scatter", Op::kReduceScatter, output, true,
           detail::call_of(Op::kReduceScatter, output, -1, static_cast<int64_t>(op))};
  const int64_t n = output.numel();
  const int64_t offset = n * g.rank();
  return detail::start(
      group, l,
      [flat, op](compat::Backend& b) {
        c10d::AllreduceOptions o;
        o.reduceOp = detail::c10d_op(op);
        return b.allreduce(*flat, o);
      },
      [flat, output, op, n, offset, size = g.size()]() mutable {
        output.copy_((*flat)[0].narrow(0, offset, n).view_as(output));
        detail::divide_if_avg(output, op, size);
      });
}

Work reduce_scatter(torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op, const Group& group) {
  auto& g = group.impl();
  require(static_cast<int>(inputs.size()) == g.size(), "reduce_scatter",
          "pass one input per member: " + std::to_string(g.size()) + ", got " + std::to_string(inputs.size()));
  require_dense(output, "reduce_scatter", "the output");
  std::vector<torch::Tensor> flat;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_dense(inputs[i], "reduce_scatter", "inputs[i]");
    require(inputs[i].numel() == output.numel() && inputs[i].scalar_type() == output.scalar_type(), "reduce_scatter",
            "inputs[" + std::to_string(i) + "] is " + detail::shape_text(inputs[i]) + " but the output is " +
                detail::shape_text(output) + "; every input must be shaped like the output");
    flat.push_back(inputs[i].reshape(-1));
  }
  return async::reduce_scatter_tensor(output, torch::cat(flat), op, group);
}

namespace {
// all_to_all_single, then `then` (all_to_all's copy into its outputs) in the same Work.
Work start_all_to_all(torch::Tensor output, const torch::Tensor& input, const std::vector<int64_t>& output_splits,
                      const std::vector<int64_t>& input_splits, const Group& group, std::function<void()> then) {
  const std::string name = "all_to_all_single";
  require_dense(input, name, "the input");
  require_dense(output, name, "the output");
  require(input.scalar_type() == output.scalar_type(), name, "input and output must have one dtype");
  auto& g = group.impl();
  const int n = g.size();
  auto splits_of = [&](const torch::Tensor& t, const std::vector<int64_t>& given, const char* which) {
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    std::vector<int64_t> s = given;
    if (s.empty()) {
      require(rows % n == 0, name,
              std::string("the ") + which + "'s dim 0 (" + std::to_string(rows) + ") does not split into " +
                  std::to_string(n) + " equal parts; pass " + which + "_splits");
      s.assign(static_cast<size_t>(n), rows / n);
    }
    require(static_cast<int>(s.size()) == n, name,
            std::string(which) + "_splits needs one entry per member (" + std::to_string(n) + ")");
    int64_t sum = 0;
    for (int64_t v : s) {
      require(v >= 0, name, std::string(which) + "_splits must not be negative");
      sum += v;
    }
    require(sum == rows, name,
            std::string(which) + "_splits add up to " + std::to_string(sum) + " rows but its dim 0 is " +
                std::to_string(rows));
    return s;
  };
  std::vector<int64_t> in_s = splits_of(input, input_splits, "input");
  std::vector<int64_t> out_s = splits_of(output, output_splits, "output");
  const int64_t in_row = input.dim() == 0 ? 1 : input.numel() / std::max<int64_t>(input.size(0), 1);
  const int64_t out_row = output.dim() == 0 ? 1 : output.numel() / std::max<int64_t>(output.size(0), 1);
  detail::Call call = detail::call_of(Op::kAllToAll, input);
  for (int j = 0; j < n; ++j) {
    call.send_elems.push_back(in_s[static_cast<size_t>(j)] * in_row);
    call.recv_elems.push_back(out_s[static_cast<size_t>(j)] * out_row);
  }
  auto in = detail::staged(input, g);
  auto out = detail::staged(output, g);
  Launch l{"all_to_all", Op::kAllToAll, input, true, call};
  return detail::start(
      group, l,
      [in, out, in_s, out_s](compat::Backend& b) mutable {
        c10d::AllToAllOptions o;
        return b.alltoall_base(out, in, out_s, in_s, o);
      },
      [out, output, then = std::move(then)]() mutable {
        detail::copy_back(output, out);
        if (then) then();
      });
}

}  // namespace

Work all_to_all_single(torch::Tensor& output, const torch::Tensor& input, const std::vector<int64_t>& output_splits,
                       const std::vector<int64_t>& input_splits, const Group& group) {
  return start_all_to_all(output, input, output_splits, input_splits, group, nullptr);
}

Work all_to_all(std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& inputs, const Group& group) {
  auto& g = group.impl();
  const std::string name = "all_to_all";
  require(static_cast<int>(inputs.size()) == g.size() && static_cast<int>(outputs.size()) == g.size(), name,
          "pass one input and one output per member (" + std::to_string(g.size()) + "), got " +
              std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  std::vector<torch::Tensor> flat;
  std::vector<int64_t> in_s, out_s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_dense(inputs[i], name, "inputs[i]");
    require_dense(outputs[i], name, "outputs[i]");
    require(inputs[i].scalar_type() == inputs[0].scalar_type() && outputs[i].scalar_type() == inputs[0].scalar_type(),
            name, "every input and output must have one dtype");
    flat.push_back(inputs[i].reshape(-1));
    in_s.push_back(inputs[i].numel());
    out_s.push_back(outputs[i].numel());
  }
  int64_t total = 0;
  for (int64_t v : out_s) total += v;
  auto out = torch::empty({total}, inputs[0].options());
  auto* dest = &outputs;
  return start_all_to_all(out, torch::cat(flat), out_s, in_s, group, [out, out_s, dest] {
    int64_t at = 0;
    for (size_t i = 0; i < out_s.size(); ++i) {
      (*dest)[i].copy_(out.narrow(0, at, out_s[i]).view_as((*dest)[i]));
      at += out_s[i];
    }
  });
}

Work send(const torch::Tensor& tensor, int dst, const Group& group, int tag) {
  require_dense(tensor, "send", "the tensor");
  auto& g = group.impl();
  const int peer = g.group_rank_of(dst);
  require(peer != g.rank(), "send", "dst " + std::to_string(dst) + " is this process itself; send to another rank");
  auto io = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  Launch l{"send", Op::kSend, tensor, false, {}};
  return detail::start(
      group, l, [io, peer, tag](compat::Backend& b) { return b.send(*io, peer, tag); }, [io] {});
}

Work recv(torch::Tensor& tensor, int src, const Group& group, int tag) {
  require_dense(tensor, "recv", "the tensor");
  auto& g = group.impl();
  const int peer = src < 0 ? -1 : g.group_rank_of(src);
  require(peer != g.rank(), "recv",
          "src " + std::to_string(src) + " is this process itself; receive from another rank");
  auto io = std::make_shared<std::vector<torch::Tensor>>(1, detail::staged(tensor, g));
  Launch l{"recv", Op::kRecv, tensor, false, {}};
  l.source = src < 0 ? -1 : src;
  l.recv_any = src < 0;
  Work w = detail::start(
      group, l,
      [io, peer, tag](compat::Backend& b) { return peer < 0 ? b.recvAnysource(*io, tag) : b.recv(*io, peer, tag); },
      [io, tensor]() mutable { detail::copy_back(tensor, (*io)[0]); });
  return w;
}

}  // namespace async

void barrier(const Group& group) { async::barrier(group).wait(); }
void broadcast(torch::Tensor& tensor, int src, const Group& group) { async::broadcast(tensor, src, group).wait(); }
void all_reduce(torch::Tensor& tensor, ReduceOp op, const Group& group) { async::all_reduce(tensor, op, group).wait(); }
std::vector<torch::Tensor> all_gather(const torch::Tensor& tensor, const Group& group) {
  std::vector<torch::Tensor> out;
  async::all_gather(out, tensor, group).wait();
  return out;
}
void all_gather_into_tensor(torch::Tensor& output, const torch::Tensor& input, const Group& group) {
  async::all_gather_into_tensor(output, input, group).wait();
}
void reduce(torch::Tensor& tensor, int dst, ReduceOp op, const Group& group) {
  async::reduce(tensor, dst, op, group).wait();
}
std::vector<torch::Tensor> gather(const torch::Tensor& tensor, int dst, const Group& group) {
  std::vector<torch::Tensor> out;
  async::gather(out, tensor, dst, group).wait();
  return out;
}
void scatter(torch::Tensor& output, const std::vector<torch::Tensor>& scatter_list, int src, const Group& group) {
  async::scatter(output, scatter_list, src, group).wait();
}
void reduce_scatter(torch::Tensor& output, const std::vector<torch::Tensor>& inputs, ReduceOp op, const Group& group) {
  async::reduce_scatter(output, inputs, op, group).wait();
}
void reduce_scatter_tensor(torch::Tensor& output, const torch::Tensor& input, ReduceOp op, const Group& group) {
  async::reduce_scatter_tensor(output, input, op, group).wait();
}
void all_to_all_single(torch::Tensor& output, const torch::Tensor& input, const std::vector<int64_t>& output_splits,
                       const std::vector<int64_t>& input_splits, const Group& group) {
  async::all_to_all_single(output, input, output_splits, input_splits, group).wait();
}
void all_to_all(std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& inputs, const Group& group) {
  async::all_to_all(outputs, inputs, group).wait();
}
void send(const torch::Tensor& tensor, int dst, const Group& group, int tag) {
  async::send(tensor, dst, group, tag).wait();
}
int recv(torch::Tensor& tensor, int src, const Group& group, int tag) {
  Work w = async::recv(tensor, src, group, tag);
  w.wait();
  return w.source_rank();
}
Work isend(const torch::Tensor& tensor, int dst, const Group& group, int tag) {
  return async::send(tensor, dst, group, tag);
}
Work irecv(torch::Tensor& tensor, int src, const Group& group, int tag) { return async::recv(tensor, src, group, tag); }

}  // namespace ddp
