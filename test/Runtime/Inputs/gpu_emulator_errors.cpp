// Misuses of device memory the GPU emulator stops with a message (where a
// GPU would crash or compute garbage), chosen by argv[1]:
//   host-read: host code reads a device buffer;
//   sgemm-host: cuBLAS is given a host buffer;
//   launch-limits: a kernel launch with 2048 threads per block;
//   race: a copy on stream A reads what stream B writes, without an event
//   between them (the host only happens to wait for B first): right under
//   the emulator's lazy order, caught under SPMD_EMU_SCHEDULE=random;
//   program-check: every rank checks one program, then each rank another
//   (the NCCL runtime's spmdProgramCheck must stop the job);
//   init: spmdInit only;
//   init-late: rank 1 starts 30 s late: rank 0's spmdInit (MPI start, the
//   NCCL id's exchange, ncclCommInitRank) must end the job after
//   SPMD_TIMEOUT;
//   timeout: both ranks make one all_reduce, then rank 1 stops coming; rank
//   0's next all_reduce must end the job after SPMD_TIMEOUT.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

extern "C" {
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool hostShared);
void spmdInit(void);
int32_t spmdWorldRank(void);
void spmdProgramCheck(int64_t hash, const char *name);
int32_t spmdWorldSize(void);
void spmdAllReduce(int64_t in, int64_t out, int64_t count, int32_t dtype,
                   int32_t kind, int64_t meshShape, int64_t axesMask);
void spmdGpuSgemm(int32_t order, int32_t transA, int32_t transB, int32_t m,
                  int32_t n, int32_t k, float alpha, int64_t a, int32_t lda,
                  int64_t b, int32_t ldb, float beta, int64_t c, int32_t ldc);
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleGetFunction(void *module, const char *name);
void *mgpuStreamCreate();
void mgpuStreamSynchronize(void *stream);
void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
}

// A kernel as spmd-gpu-emulator-entries makes them: no parameters.
extern "C" void __spmd_emu_m__k(void **, int64_t, int64_t, int64_t, int64_t,
                                int64_t, int64_t, void (*)(void *)) {}
extern "C" const int64_t __spmd_emu_m__k_params[] = {0};

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  if (!std::strcmp(argv[1], "init-late")) {
    const char *rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank && std::atoi(rank) == 1)
      std::this_thread::sleep_for(std::chrono::seconds(30));
    spmdInit();
    std::printf("rank %d: initialized\n", spmdWorldRank());
    return 0;
  }
  auto *d =
      static_cast<float *>(mgpuMemAlloc(64 * sizeof(float), nullptr, false));
  if (!std::strcmp(argv[1], "host-read")) {
    std::printf("read %f\n", d[3]);
  } else if (!std::strcmp(argv[1], "sgemm-host")) {
    std::vector<float> host(64);
    spmdGpuSgemm(101, 111, 111, 8, 8, 8, 1.0f, int64_t(d), 8,
                 int64_t(host.data()), 8, 0.0f, int64_t(d), 8);
  } else if (!std::strcmp(argv[1], "launch-limits")) {
    static const char image[] = "spmd-emulated-kernels:m";
    void *module = mgpuModuleLoad(const_cast<char *>(image), sizeof(image));
    void *k = mgpuModuleGetFunction(module, "k");
    mgpuLaunchKernel(k, 1, 1, 1, 2048, 1, 1, 0, nullptr, nullptr, nullptr, 0);
  } else if (!std::strcmp(argv[1], "program-check")) {
    spmdProgramCheck(42, "same");
    spmdProgramCheck(42, "same"); // checked once: no second exchange
    std::printf("rank %d: same program checked\n", spmdWorldRank());
    std::fflush(stdout);
    spmdProgramCheck(100 + spmdWorldRank(), "differs");
  } else if (!std::strcmp(argv[1], "timeout")) {
    auto x = reinterpret_cast<int64_t>(d);
    spmdAllReduce(x, x, 4, /*SPMD_F32=*/0, /*SPMD_SUM=*/0, spmdWorldSize(), 1);
    std::printf("rank %d: first all_reduce done\n", spmdWorldRank());
    std::fflush(stdout);
    if (spmdWorldRank() == 1)
      std::this_thread::sleep_for(std::chrono::seconds(100));
    spmdAllReduce(x, x, 4, 0, 0, spmdWorldSize(), 1);
  } else if (!std::strcmp(argv[1], "init")) {
    spmdInit();
    std::printf("rank %d: initialized\n", spmdWorldRank());
    return 0;
  } else if (!std::strcmp(argv[1], "race")) {
    auto *y =
        static_cast<float *>(mgpuMemAlloc(64 * sizeof(float), nullptr, false));
    void *a = mgpuStreamCreate(), *b = mgpuStreamCreate();
    for (int i = 0; i < 20; ++i) {
      float value = float(i), got = -1;
      unsigned bits;
      std::memcpy(&bits, &value, sizeof(bits));
      mgpuMemset32(d, bits, 64, b);            // B writes d
      mgpuMemcpy(y, d, 64 * sizeof(float), a); // A reads d: no event
      mgpuStreamSynchronize(b);
      mgpuStreamSynchronize(a);
      mgpuMemcpy(&got, y, sizeof(float), nullptr);
      if (got != value) {
        std::printf("race: stream A read %g before stream B wrote %g\n", got,
                    value);
        return 1;
      }
    }
    std::printf("no race seen\n");
    return 0;
  }
  std::printf("not stopped\n");
  return 0;
}
