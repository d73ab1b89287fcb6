// tensor_table.hpp. Both directions walk the archive's object tree (archive_access.hpp): modules
// (the archive and its nested archives) in place, lists, dicts and tuples as copies (a list in an
// OutputArchive may be the caller's own extra value).
#include "runtime/src/checkpoint/tensor_table.hpp"

#include <cstring>
#include <functional>
#include <unordered_map>

#include "runtime/src/checkpoint/archive_access.hpp"
#include "ddp/errors.hpp"

namespace ddp::detail {
namespace {

constexpr char kMagic[4] = {'D', 'D', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 24;
constexpr uint64_t kDataAlign = 64;
constexpr int64_t kPlaceholder = 0x4444505450484c44;  // "DLHPTPDD": never a real state's first value by chance
constexpr uint32_t kRequiresGrad = 1;
constexpr uint64_t kMaxDims = 64;

uint64_t align_up(uint64_t v) { return (v + kDataAlign - 1) / kDataAlign * kDataAlign; }

template <typename T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Reads a T at `at` of [data, data + size); false past the end.
template <typename T>
bool get(const char* data, uint64_t size, uint64_t& at, T& value) {
  if (at > size || size - at < sizeof value) return false;
  std::memcpy(&value, data + at, sizeof value);
  at += sizeof value;
  return true;
}

using TensorMap = std::function<c10::IValue(const at::Tensor&)>;

// `value` with every tensor mapped by `f`: modules changed in place, containers rebuilt. Sets
// *foreign when it meets a value it cannot see into (an object, a storage, a generator...).
c10::IValue map_tensors(const c10::IValue& value, const TensorMap& f, bool* foreign);

void map_object(const c10::intrusive_ptr<c10::ivalue::Object>& object, const TensorMap& f, bool* foreign) {
  for (size_t slot = 0; slot < object->slots().size(); ++slot)
    object->setSlot(slot, map_tensors(object->getSlot(slot), f, foreign));
}

c10::IValue map_tensors(const c10::IValue& value, const TensorMap& f, bool* foreign) {
  if (value.isTensor()) return f(value.toTensor());
  if (value.isObject() && value.toObjectRef().type()->is_module()) {
    map_object(value.toObject(), f, foreign);
    return value;
  }
  if (value.isList()) {
    const c10::List<c10::IValue> list = value.toList();
    c10::impl::GenericList copy(list.elementType());
    copy.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) copy.push_back(map_tensors(list.get(i), f, foreign));
    return copy;
  }
  if (value.isGenericDict()) {
    const c10::Dict<c10::IValue, c10::IValue> dict = value.toGenericDict();
    c10::impl::GenericDict copy(dict.keyType(), dict.valueType());
    copy.reserve(dict.size());
    for (const auto& entry : dict)
      copy.insert(map_tensors(entry.key(), f, foreign), map_tensors(entry.value(), f, foreign));
    return copy;
  }
  if (value.isTuple()) {
    const auto& tuple = value.toTupleRef();
    std::vector<c10::IValue> elements;
    elements.reserve(tuple.size());
    for (const auto& element : tuple.elements()) elements.push_back(map_tensors(element, f, foreign));
    return c10::ivalue::Tuple::createNamed(std::move(elements), tuple.type());
  }
  if (!(value.isNone() || value.isScalar() || value.isString() || value.isDevice())) *foreign = true;
  return value;
}

bool is_placeholder(const at::Tensor& t) {
  return t.defined() && t.is_cpu() && t.scalar_type() == at::kLong && t.dim() == 1 && t.numel() == 2 &&
         t.data_ptr<int64_t>()[0] == kPlaceholder;
}

struct Entry {
  uint64_t offset = 0, bytes = 0;
  int32_t dtype = 0;
  uint32_t flags = 0;
  std::vector<int64_t> sizes;
};

// The entries after the skeleton; throws CheckpointError on a table that does not hold together.
std::vector<Entry> read_entries(const char* data, uint64_t size, uint64_t at, uint64_t count, const std::string& what) {
  auto broken = [&](const std::string& why) {
    return CheckpointError(what + " is not a readable tensor table (" + why + ")");
  };
  std::vector<Entry> entries;
  for (uint64_t i = 0; i < count; ++i) {
    Entry e;
    uint32_t dims = 0, zero = 0;
    if (!get(data, size, at, e.offset) || !get(data, size, at, e.bytes) || !get(data, size, at, e.dtype) ||
        !get(data, size, at, e.flags) || !get(data, size, at, dims) || !get(data, size, at, zero) || dims > kMaxDims)
      throw broken("its entries are cut short");
    e.sizes.resize(dims);
    for (auto& d : e.sizes)
      if (!get(data, size, at, d) || d < 0) throw broken("an entry's sizes are cut short");
    if (e.offset > size || e.bytes > size - e.offset) throw broken("a tensor lies past its end");
    if (e.dtype < 0 || e.dtype >= static_cast<int32_t>(c10::ScalarType::NumOptions)) throw broken("an unknown dtype");
    const auto type = static_cast<c10::ScalarType>(e.dtype);
    if (c10::isQIntType(type) ||
        c10::multiply_integers(e.sizes) * static_cast<int64_t>(c10::elementSize(type)) != static_cast<int64_t>(e.bytes))
      throw broken("a tensor's size does not match its shape");
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace

std::optional<TensorTable> tensor_table_of(torch::serialize::OutputArchive& archive) {
  const auto root = archive_object(archive);
  if (!root) return std::nullopt;
  TensorTable table;
  std::vector<uint32_t> flags;
  std::unordered_map<const c10::TensorImpl*, int64_t> index_of;  // a tensor met twice (tied weights): one entry
  bool unfit = false;
  const TensorMap to_placeholder = [&](const at::Tensor& t) -> c10::IValue {
    if (!t.defined()) return t;
    if (t.layout() != at::kStrided || t.is_quantized() || !t.is_cpu()) {
      unfit = true;
      return t;
    }
    auto [known, fresh] = index_of.emplace(t.unsafeGetTensorImpl(), static_cast<int64_t>(table.tensors.size()));
    if (fresh) {
      table.tensors.push_back(t.detach().contiguous());
      flags.push_back(t.requires_grad() ? kRequiresGrad : 0);
    }
    return torch::tensor({kPlaceholder, known->second}, torch::kLong);
  };
  {
    torch::NoGradGuard no_grad;
    map_object(root, to_placeholder, &unfit);
  }
  if (unfit) return std::nullopt;
  std::string skeleton;
  archive.save_to([&](const void* data, size_t size) -> size_t {
    skeleton.append(static_cast<const char*>(data), size);
    return size;
  });

  std::string& head = table.head;
  head.append(kMagic, sizeof kMagic);
  put(head, kVersion);
  put(head, static_cast<uint64_t>(skeleton.size()));
  put(head, static_cast<uint64_t>(table.tensors.size()));
  head += skeleton;
  uint64_t entries_bytes = 0;
  for (const auto& t : table.tensors) entries_bytes += 32 + 8 * static_cast<uint64_t>(t.dim());
  uint64_t next = align_up(head.size() + entries_bytes);
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    const at::Tensor& t = table.tensors[i];
    const uint64_t bytes = t.numel() * t.element_size();
    table.offsets.push_back(next);
    put(head, next);
    put(head, bytes);
    put(head, static_cast<int32_t>(t.scalar_type()));
    put(head, flags[i]);
    put(head, static_cast<uint32_t>(t.dim()));
    put(head, uint32_t{0});
    for (const int64_t d : t.sizes()) put(head, d);
    next = align_up(next + bytes);
    table.tensor_bytes += bytes;
  }
  table.length = table.tensors.empty() ? head.size() : table.offsets.back() + table.tensors.back().nbytes();
  return table;
}

uint64_t tensor_table_head_length(const char* data, uint64_t size) {
  uint64_t at = sizeof kMagic;
  uint32_t version = 0;
  uint64_t skeleton = 0, count = 0;
  if (size < kHeaderBytes || std::memcmp(data, kMagic, sizeof kMagic) != 0 || !get(data, size, at, version) ||
      version != kVersion || !get(data, size, at, skeleton) || !get(data, size, at, count) ||
      skeleton > size - kHeaderBytes)
    return 0;
  at = kHeaderBytes + skeleton;
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t dims = 0;
    uint64_t dims_at = at + 24;
    if (!get(data, size, dims_at, dims) || dims > kMaxDims) return 0;
    at += 32 + 8 * uint64_t{dims};
    if (at > size) return 0;
  }
  return at;
}

bool is_tensor_table(const char* data, uint64_t size) {
  return size >= sizeof kMagic && std::memcmp(data, kMagic, sizeof kMagic) == 0;
}

torch::serialize::InputArchive read_tensor_table(const PayloadBytes& payload, torch::Device device,
                                                 const std::string& what) {
  const char* data = payload.data.get();
  const uint64_t size = payload.size;
  const uint64_t head = tensor_table_head_length(data, size);
  if (head == 0)
    throw CheckpointError(what + " is not a readable tensor table (its head is cut short or of another version)");
  uint64_t skeleton = 0, count = 0, at = 8;
  get(data, size, at, skeleton);
  get(data, size, at, count);
  const std::vector<Entry> entries = read_entries(data, size, kHeaderBytes + skeleton, count, what);

  torch::serialize::InputArchive archive;
  try {
    archive.load_from(data + kHeaderBytes, skeleton, torch::Device(torch::kCPU));
  } catch (const c10::Error& e) {
    const std::string text = e.what_without_backtrace();
    throw CheckpointError(what +
                          " holds a skeleton that is not a readable archive: " + text.substr(0, text.find('\n')));
  }
  const auto root = archive_object(archive);
  if (!root) throw CheckpointError(what + " is a tensor table, which this build of libddp cannot read");
  bool missing = false;
  auto from_entry = [&](const at::Tensor& t, bool view) -> c10::IValue {
    if (!is_placeholder(t)) return t;
    const int64_t index = t.data_ptr<int64_t>()[1];
    if (index < 0 || static_cast<uint64_t>(index) >= entries.size()) {
      missing = true;
      return t;
    }
    const Entry& e = entries[static_cast<size_t>(index)];
    const auto options = torch::TensorOptions().dtype(static_cast<c10::ScalarType>(e.dtype));
    std::shared_ptr<const char> keep = payload.data;
    at::Tensor out = torch::from_blob(
        const_cast<char*>(data + e.offset), e.sizes, [keep](void*) {}, options);
    out = device.is_cpu() ? (view ? out : out.clone()) : out.to(device);
    if (e.flags & kRequiresGrad) out.requires_grad_(true);
    return out;
  };
  torch::NoGradGuard no_grad;
  bool foreign = false;
  const auto& type = root->type();
  for (size_t slot = 0; slot < root->slots().size(); ++slot) {
    const bool view = type->getAttributeName(slot) == "model";  // copied into the model by loading
    root->setSlot(slot, map_tensors(
                            root->getSlot(slot), [&](const at::Tensor& t) { return from_entry(t, view); }, &foreign));
  }
  if (missing) throw CheckpointError(what + " is not a readable tensor table (a placeholder names no entry)");
  return archive;
}

}  // namespace ddp::detail
