//===- StateRegistry.h - named state of compiled programs -------*- C++ -*-===//
//
// Shared by the MPI/Gloo and the NCCL runtimes (as MeshGroup.h is): the
// parameters, buffers and optimizer state compiled programs keep between
// steps, by name, in registration order. spmdStateRegister puts a state at
// an address (host globals on the CPU path, device buffers on the GPU path);
// spmdStateData, spmdStateBind, spmdStateCount and spmdStateName read it back
// (the Python bridge binds the model's tensors to them). The runtimes wrap
// these in their C functions and report the error strings their own way.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_STATEREGISTRY_H
#define SPMD_RUNTIME_STATEREGISTRY_H

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace spmd::runtime {

class StateRegistry {
public:
  struct Entry {
    std::string name;
    int64_t address = 0;
    int64_t bytes = 0;
    int32_t dtype = 0;
  };

  const Entry *find(const char *name) const {
    auto it = index.find(name);
    return it == index.end() ? nullptr : &entries[it->second];
  }

  /// Puts `name` at `address` (a state registered again moves: a program
  /// loaded again has its globals elsewhere). False, with `error`, when it
  /// was registered with another size or element type.
  bool add(const char *name, int64_t address, int64_t bytes, int32_t dtype,
           std::string &error) {
    auto it = index.find(name);
    if (it == index.end()) {
      index.emplace(name, entries.size());
      entries.push_back({name, address, bytes, dtype});
      return true;
    }
    Entry &e = entries[it->second];
    if (e.bytes != bytes || e.dtype != dtype) {
      error = "state '" + e.name + "' is registered with " +
              std::to_string(e.bytes) + " bytes of type " +
              std::to_string(e.dtype) + ", now " + std::to_string(bytes) +
              " bytes of type " + std::to_string(dtype);
      return false;
    }
    e.address = address;
    return true;
  }

  /// The entry of `name`; null, with `error`, when there is none.
  const Entry *data(const char *name, std::string &error) const {
    const Entry *e = find(name);
    if (!e)
      error = std::string("no state named '") + name + "' is registered";
    return e;
  }

  /// The entry of `name` when it holds `bytes` bytes of `dtype`; null, with
  /// `error`, otherwise.
  const Entry *bind(const char *name, int64_t bytes, int32_t dtype,
                    std::string &error) const {
    const Entry *e = data(name, error);
    if (e && (e->bytes != bytes || e->dtype != dtype)) {
      error = "state '" + e->name + "' holds " + std::to_string(e->bytes) +
              " bytes of type " + std::to_string(e->dtype) +
              ", the caller expects " + std::to_string(bytes) +
              " bytes of type " + std::to_string(dtype);
      return nullptr;
    }
    return e;
  }

  int64_t count() const { return static_cast<int64_t>(entries.size()); }

  // The bodies of spmdStateData/Bind/Name, for both runtimes: `fail(call,
  // message)` is the runtime's own way to end the job (it does not return).

  template <typename Fail>
  int64_t dataOrFail(const char *name, int64_t *bytes, Fail fail) const {
    std::string error;
    const Entry *e = data(name, error);
    if (!e)
      fail("spmdStateData", error);
    if (bytes)
      *bytes = e->bytes;
    return e->address;
  }

  template <typename Fail>
  int64_t bindOrFail(const char *name, int64_t bytes, int32_t dtype,
                     Fail fail) const {
    std::string error;
    const Entry *e = bind(name, bytes, dtype, error);
    if (!e)
      fail("spmdStateBind", error);
    return e->address;
  }

  template <typename Fail> const char *nameOrFail(int64_t i, Fail fail) const {
    const char *n = name(i);
    if (!n)
      fail("spmdStateName", "index " + std::to_string(i) + " out of range");
    return n;
  }

  /// The name of the `i`-th state registered; null when out of range.
  const char *name(int64_t i) const {
    if (i < 0 || i >= count())
      return nullptr;
    return entries[static_cast<size_t>(i)].name.c_str();
  }

private:
  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> index;
};

} // namespace spmd::runtime

/// The read-back functions of the C ABI over a runtime's registry
/// (`REGISTRY`, an expression), ending the job through `FAIL(call,
/// message)`: both runtimes define them with this, inside their
/// `extern "C"` block (each registers and allocates states its own way).
#define SPMD_DEFINE_STATE_READERS(REGISTRY, FAIL)                              \
  int64_t spmdStateData(const char *name, int64_t *bytes) {                    \
    return (REGISTRY).dataOrFail(name, bytes, FAIL);                           \
  }                                                                            \
  int64_t spmdStateBind(const char *name, int64_t bytes, int32_t dtype) {      \
    return (REGISTRY).bindOrFail(name, bytes, dtype, FAIL);                    \
  }                                                                            \
  int64_t spmdStateCount(void) { return (REGISTRY).count(); }                  \
  const char *spmdStateName(int64_t index) {                                   \
    return (REGISTRY).nameOrFail(index, FAIL);                                 \
  }

#endif // SPMD_RUNTIME_STATEREGISTRY_H
