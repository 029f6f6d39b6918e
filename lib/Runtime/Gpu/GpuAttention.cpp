//===- GpuAttention.cpp - spmdGpuAttentionForward/Backward ----------------===//
//
// The fused attention kernels (AttentionKernels.cuh) behind the runtime ABI
// spmd-lower-attention calls on the GPU path: the CPU path's signatures
// (SpmdRuntime.h) on device buffers. The kernels come from the fatbin nvcc
// built into this library (sm_90 code and compute_90 PTX for newer GPUs);
// under the GPU emulator (its libcuda defines spmdEmuStepBegin) from the
// host-compiled copies the emulated libcuda holds
// (test/lib/GpuEmulator/Device/EmulatedAttention.cpp). Launched on the
// program stream inside a compiled program; outside one, the call returns
// when the kernels are done.
//
//===----------------------------------------------------------------------===//

#include "AttentionShape.h"
#include "GpuCommon.h"
#include "GpuTrace.h"

#include "Spmd/Runtime/SpmdGpuRuntime.h"

#include <dlfcn.h>

#include <cstdio>
#include <string>

#ifdef SPMD_HAVE_ATTENTION_FATBIN
#include "attention_fatbin.h"
#endif

using namespace spmd::attention;

namespace {

struct Kernels {
  CUfunction forward = nullptr, backward = nullptr;
};

const Kernels &kernels() {
  static Kernels k = [] {
    spmd::gpu::ensureContext();
    CUmodule module = nullptr;
    if (dlsym(RTLD_DEFAULT, "spmdEmuStepBegin")) {
      spmd::gpu::checkCu(
          cuModuleLoadData(&module, "spmd-emulated-kernels:spmd_attention"),
          "cuModuleLoadData (attention kernels, emulated)");
    } else {
#ifdef SPMD_HAVE_ATTENTION_FATBIN
      spmd::gpu::checkCu(cuModuleLoadData(&module, spmd_attention_fatbin),
                         "cuModuleLoadData (attention kernels)");
#else
      spmd::gpu::fail("spmdGpuAttentionForward",
                      "this libSpmdGpuRuntime was built without nvcc: no GPU "
                      "attention kernels");
#endif
    }
    Kernels k;
    spmd::gpu::checkCu(
        cuModuleGetFunction(&k.forward, module, "spmdAttentionForwardKernel"),
        "cuModuleGetFunction (attention forward)");
    spmd::gpu::checkCu(
        cuModuleGetFunction(&k.backward, module, "spmdAttentionBackwardKernel"),
        "cuModuleGetFunction (attention backward)");
    return k;
  }();
  return k;
}

Shape shape(const char *what, int64_t B, int64_t H, int64_t L, int64_t S,
            int64_t E, int64_t Ev, int64_t maskB, int64_t maskH, int64_t maskL,
            double scale, int64_t causal) {
  if (E > kMaxHead || Ev > kMaxHead) {
    char detail[128];
    std::snprintf(detail, sizeof(detail),
                  "head dimensions %lld and %lld: at most %d on the GPU",
                  (long long)E, (long long)Ev, kMaxHead);
    spmd::gpu::fail(what, detail);
  }
  if (B > 65535 || H > 65535)
    spmd::gpu::fail(what, "more than 65535 batches or heads");
  Shape s{};
  s.B = int(B), s.H = int(H), s.L = int(L), s.S = int(S), s.E = int(E),
  s.Ev = int(Ev);
  s.maskB = maskB, s.maskH = maskH, s.maskL = maskL;
  s.scale = float(scale);
  s.causal = int(causal != 0);
  return s;
}

/// The blocks of kRowsPerBlock rows that cover `rows`.
int64_t blocksOf(int64_t rows) {
  return (rows + kRowsPerBlock - 1) / kRowsPerBlock;
}

/// Launches `f` over a grid of `blocks` x H x B (row blocks, heads,
/// batches).
void launch(CUfunction f, int64_t rowBlocks, int64_t H, int64_t B,
            void **params, const char *name, const char *what) {
  CUstream stream = spmd::gpu::programStream();
  auto blocks = unsigned(rowBlocks);
  if (blocks == 0)
    return;
  CUevent traced = spmd::gpu::trace::begin(stream);
  spmd::gpu::checkCu(cuLaunchKernel(f, blocks, unsigned(H), unsigned(B),
                                    kThreads, 1, 1, 0, stream, params, nullptr),
                     what);
  if (traced)
    spmd::gpu::trace::end(traced, stream, name, "attention",
                          "\"blocks\": " + std::to_string(blocks) +
                              ", \"heads\": " + std::to_string(H) +
                              ", \"batches\": " + std::to_string(B) +
                              spmd::gpu::trace::sourceArg());
}

/// Outside a compiled program the call returns when the kernels are done.
void finish(const char *what) {
  if (!spmd::gpu::programStream())
    spmd::gpu::checkCu(cuStreamSynchronize(nullptr), what);
}

} // namespace

extern "C" {

void spmdGpuAttentionForward(int64_t query, int64_t key, int64_t value,
                             int64_t mask, int64_t out, int64_t lse, int64_t B,
                             int64_t H, int64_t L, int64_t S, int64_t E,
                             int64_t Ev, int64_t maskB, int64_t maskH,
                             int64_t maskL, double scale, int64_t causal,
                             int64_t qB, int64_t qH, int64_t qL, int64_t kB,
                             int64_t kH, int64_t kL, int64_t vB, int64_t vH,
                             int64_t vL, int64_t oB, int64_t oH, int64_t oL) {
  const Kernels &k = kernels();
  Shape s = shape("spmdGpuAttentionForward", B, H, L, S, E, Ev, maskB, maskH,
                  maskL, scale, causal);
  s.q = {qB, qH, qL}, s.k = {kB, kH, kL}, s.v = {vB, vH, vL},
  s.o = {oB, oH, oL};
  void *params[] = {&query, &key, &value, &mask, &out, &lse, &s};
  launch(k.forward, blocksOf(L), H, B, params, "attention forward",
         "cuLaunchKernel (attention forward)");
  finish("cuStreamSynchronize (attention forward)");
}

void spmdGpuAttentionBackward(
    int64_t grad, int64_t query, int64_t key, int64_t value, int64_t out,
    int64_t lse, int64_t mask, int64_t gradQuery, int64_t gradKey,
    int64_t gradValue, int64_t B, int64_t H, int64_t L, int64_t S, int64_t E,
    int64_t Ev, int64_t maskB, int64_t maskH, int64_t maskL, double scale,
    int64_t causal, int64_t gB, int64_t gH, int64_t gL, int64_t qB, int64_t qH,
    int64_t qL, int64_t kB, int64_t kH, int64_t kL, int64_t vB, int64_t vH,
    int64_t vL, int64_t oB, int64_t oH, int64_t oL, int64_t dqB, int64_t dqH,
    int64_t dqL, int64_t dkB, int64_t dkH, int64_t dkL, int64_t dvB,
    int64_t dvH, int64_t dvL) {
  const Kernels &k = kernels();
  Shape s = shape("spmdGpuAttentionBackward", B, H, L, S, E, Ev, maskB, maskH,
                  maskL, scale, causal);
  s.g = {gB, gH, gL}, s.q = {qB, qH, qL}, s.k = {kB, kH, kL},
  s.v = {vB, vH, vL}, s.o = {oB, oH, oL}, s.dq = {dqB, dqH, dqL},
  s.dk = {dkB, dkH, dkL}, s.dv = {dvB, dvH, dvL};
  // The kernel's order: grad, query, key, value, out, lse, mask, outputs.
  // One launch: the dQ blocks of the query rows, then the dK dV blocks of
  // the key rows (AttentionKernels.cuh, backward).
  void *params[] = {&grad, &query,     &key,     &value,     &out, &lse,
                    &mask, &gradQuery, &gradKey, &gradValue, &s};
  launch(k.backward, blocksOf(L) + blocksOf(S), H, B, params,
         "attention backward", "cuLaunchKernel (attention backward)");
  finish("cuStreamSynchronize (attention backward)");
}

} // extern "C"
