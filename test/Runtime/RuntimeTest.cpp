//===- RuntimeTest.cpp - libSpmdRuntime under mpirun ----------------------===//
//
// Run with 1, 2 or 4 ranks. Every rank checks its own results; a failure on
// any rank fails the job.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Runtime/SpmdRuntime.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

int64_t pack(std::initializer_list<int64_t> shape) {
  int64_t packed = 0, shift = 0;
  for (int64_t s : shape) {
    packed |= s << shift;
    shift += 16;
  }
  return packed;
}

int64_t addr(void *p) { return reinterpret_cast<int64_t>(p); }

class Runtime : public ::testing::Test {
protected:
  int rank = spmdWorldRank();
  int size = spmdWorldSize();
  int64_t mesh = pack({size});
};

TEST_F(Runtime, AllReduceSumAvgMaxInPlace) {
  std::vector<float> x = {float(rank), float(rank + 1), 2.0f};
  std::vector<float> out(3);
  spmdAllReduce(addr(x.data()), addr(out.data()), 3, SPMD_F32, SPMD_SUM, mesh,
                1);
  float s = size * (size - 1) / 2.0f;
  EXPECT_EQ(out[0], s);
  EXPECT_EQ(out[1], s + size);
  EXPECT_EQ(out[2], 2.0f * size);
  spmdAllReduce(addr(x.data()), addr(out.data()), 3, SPMD_F32, SPMD_AVG, mesh,
                1);
  EXPECT_FLOAT_EQ(out[0], s / size);
  spmdAllReduce(addr(x.data()), addr(x.data()), 3, SPMD_F32, SPMD_MAX, mesh, 1);
  EXPECT_EQ(x[0], float(size - 1));
}

TEST_F(Runtime, AllGatherAlongInnerDim) {
  // Each rank holds a 2x1 column [r, 10 + r]; gathered along dim 1: 2 x size.
  std::vector<float> in = {float(rank), float(10 + rank)};
  std::vector<float> out(2 * size);
  spmdAllGather(addr(in.data()), addr(out.data()), /*outer=*/2, /*dim=*/1,
                /*inner=*/1, SPMD_F32, mesh, 1);
  for (int k = 0; k < size; ++k) {
    EXPECT_EQ(out[k], float(k));
    EXPECT_EQ(out[size + k], float(10 + k));
  }
}

TEST_F(Runtime, ReduceScatterAlongDim0) {
  // Global [2*size x 2] with value row*2+col on every rank: each rank keeps
  // two rows, summed over ranks.
  std::vector<double> in(4 * size);
  std::iota(in.begin(), in.end(), 0.0);
  std::vector<double> out(4);
  spmdReduceScatter(addr(in.data()), addr(out.data()), 1, 2 * size, 2, SPMD_F64,
                    SPMD_SUM, mesh, 1);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], double(size) * (4 * rank + i));
}

TEST_F(Runtime, LargeReduceScattersInFlight) {
  // Inputs of 1 MiB and more (the MPI backend runs them as a ring of
  // point-to-point steps): f32 sum read in place and f64 max copied, both
  // in flight at once and waited in reverse order, then an i64 sum and
  // a bf16 sum (reduced in float32). Element i of rank r's input is
  // r * 1000 + i % 997 (exact in every type).
  const int64_t chunk = int64_t(1) << 18;
  auto value = [](int r, int64_t i) { return double(r * 1000 + i % 997); };
  auto expectedSum = [&](int64_t i) {
    double s = 0;
    for (int r = 0; r < size; ++r)
      s += value(r, i);
    return s;
  };
  std::vector<float> f32(chunk * size), f32Out(chunk);
  std::vector<double> f64(chunk * size), f64Out(chunk);
  for (int64_t i = 0; i < chunk * size; ++i) {
    f32[i] = float(value(rank, i));
    f64[i] = value(rank, i);
  }
  int64_t h1 = spmdReduceScatterStart(
      addr(f32.data()), addr(f32Out.data()), 1, chunk * size, 1,
      SPMD_F32 | SPMD_INPUT_STAYS, SPMD_SUM, mesh, 1);
  int64_t h2 =
      spmdReduceScatterStart(addr(f64.data()), addr(f64Out.data()), 1,
                             chunk * size, 1, SPMD_F64, SPMD_MAX, mesh, 1);
  spmdWait(h2);
  spmdWait(h1);
  int64_t mismatches = 0;
  for (int64_t j = 0; j < chunk; ++j) {
    int64_t i = rank * chunk + j;
    mismatches += f32Out[j] != float(expectedSum(i));
    mismatches += f64Out[j] != value(size - 1, i);
  }
  EXPECT_EQ(mismatches, 0);

  std::vector<int64_t> i64(chunk * size), i64Out(chunk);
  std::vector<uint16_t> bf16(chunk * size), bf16Out(chunk);
  for (int64_t i = 0; i < chunk * size; ++i) {
    i64[i] = int64_t(value(rank, i));
    // bfloat16 of small integers: the float's upper 16 bits (exact below
    // 256, so the sums of up to 4 ranks of values below 64 are too).
    float f = float(i % 64);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bf16[i] = uint16_t(bits >> 16);
  }
  spmdReduceScatter(addr(i64.data()), addr(i64Out.data()), 1, chunk * size, 1,
                    SPMD_I64, SPMD_SUM, mesh, 1);
  spmdReduceScatter(addr(bf16.data()), addr(bf16Out.data()), 1, chunk * size, 1,
                    SPMD_BF16, SPMD_SUM, mesh, 1);
  for (int64_t j = 0; j < chunk; ++j) {
    int64_t i = rank * chunk + j;
    mismatches += i64Out[j] != int64_t(expectedSum(i));
    uint32_t bits = uint32_t(bf16Out[j]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    mismatches += f != float(size * (i % 64));
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(Runtime, LargeAllReduces) {
  // 1 MiB and more (a ring on MPI), a length no rank count divides: an f32
  // sum in place, an f32 average and an i32 max into another buffer, two
  // in flight. Element i of rank r is r * 1000 + i % 997.
  const int64_t count = (int64_t(1) << 18) + 7;
  auto value = [](int r, int64_t i) { return r * 1000 + int(i % 997); };
  std::vector<float> sum(count), avgIn(count), avg(count);
  std::vector<int32_t> maxIn(count), max(count);
  for (int64_t i = 0; i < count; ++i) {
    sum[i] = avgIn[i] = float(value(rank, i));
    maxIn[i] = value(rank, i);
  }
  int64_t h1 = spmdAllReduceStart(addr(sum.data()), addr(sum.data()), count,
                                  SPMD_F32, SPMD_SUM, mesh, 1);
  int64_t h2 = spmdAllReduceStart(addr(avgIn.data()), addr(avg.data()), count,
                                  SPMD_F32, SPMD_AVG, mesh, 1);
  spmdAllReduce(addr(maxIn.data()), addr(max.data()), count, SPMD_I32, SPMD_MAX,
                mesh, 1);
  spmdWait(h2);
  spmdWait(h1);
  int64_t mismatches = 0;
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int r = 0; r < size; ++r)
      expected += float(value(r, i));
    mismatches += sum[i] != expected;
    mismatches += avg[i] != expected / float(size);
    mismatches += max[i] != value(size - 1, i);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(Runtime, AllToAllShard0ToShard1) {
  // Local [1 x size] rows (row = rank); after all_to_all(split 1, concat 0)
  // each rank holds column `rank` of the global [size x size] matrix.
  std::vector<int32_t> in(size);
  for (int j = 0; j < size; ++j)
    in[j] = rank * 100 + j;
  std::vector<int32_t> out(size);
  spmdAllToAll4(addr(in.data()), addr(out.data()), 1, size, 1, 1, 1, 0,
                SPMD_I32, mesh, 1);
  for (int i = 0; i < size; ++i)
    EXPECT_EQ(out[i], i * 100 + rank);
}

TEST_F(Runtime, BroadcastFromRoot) {
  std::vector<int64_t> x = {rank == size - 1 ? 42 : -1, rank};
  spmdBroadcast(addr(x.data()), addr(x.data()), 2, SPMD_I64, size - 1, mesh, 1);
  EXPECT_EQ(x[0], 42);
  EXPECT_EQ(x[1], size - 1);
}

TEST_F(Runtime, GroupsOfATwoDimensionalMesh) {
  if (size != 4)
    GTEST_SKIP() << "needs 4 ranks";
  int64_t grid = pack({2, 2});
  // Rank r = 2 * i + j. Axis 1 groups: {0,1}, {2,3}; axis 0: {0,2}, {1,3}.
  EXPECT_EQ(spmdAxisIndex(grid, 0b10), rank % 2);
  EXPECT_EQ(spmdAxisIndex(grid, 0b01), rank / 2);
  EXPECT_EQ(spmdAxisIndex(grid, 0b11), rank);
  float v = float(rank), sum = 0;
  spmdAllReduce(addr(&v), addr(&sum), 1, SPMD_F32, SPMD_SUM, grid, 0b10);
  EXPECT_EQ(sum, rank < 2 ? 1.0f : 5.0f);
  spmdAllReduce(addr(&v), addr(&sum), 1, SPMD_F32, SPMD_SUM, grid, 0b01);
  EXPECT_EQ(sum, rank % 2 == 0 ? 2.0f : 4.0f);
}

TEST_F(Runtime, AsynchronousStartsAndWaits) {
  // Two collectives in flight, inputs freed right after the starts, waited
  // in reverse order; a second wait on a handle returns at once.
  std::vector<float> sum(4), gathered(2 * size);
  int64_t h1, h2;
  {
    std::vector<float> a = {1, 2, 3, float(rank)};
    std::vector<float> b = {float(rank), float(rank)};
    h1 = spmdAllReduceStart(addr(a.data()), addr(sum.data()), 4, SPMD_F32,
                            SPMD_SUM, mesh, 1);
    h2 = spmdAllGatherStart(addr(b.data()), addr(gathered.data()), 2, 1, 1,
                            SPMD_F32, mesh, 1);
  }
  spmdWait(h2);
  spmdWait(h1);
  spmdWait(h1);
  EXPECT_EQ(sum[0], float(size));
  EXPECT_EQ(sum[3], size * (size - 1) / 2.0f);
  for (int k = 0; k < size; ++k) {
    EXPECT_EQ(gathered[k], float(k));
    EXPECT_EQ(gathered[size + k], float(k));
  }
}

// A large all-reduce (over MPI a ring of 2 (n - 1) steps, each started
// when the previous one is found done) that nobody waits for completes
// while the rank runs kernels: the runtime polls the collectives in flight
// at each sgemm. Bounded so that a runtime that does not poll fails
// instead of hanging.
TEST_F(Runtime, CollectivesMoveWhileKernelsRun) {
  const int64_t count = int64_t(1) << 20;
  std::vector<float> in(count, 1.0f), out(count, 0.0f);
  int64_t handle = spmdAllReduceStart(addr(in.data()), addr(out.data()), count,
                                      SPMD_F32, SPMD_SUM, mesh, 1);
  EXPECT_EQ(spmdCollectivesInFlight(), 1);
  float a = 1.0f, b = 2.0f, c = 0.0f;
  auto start = std::chrono::steady_clock::now();
  while (spmdCollectivesInFlight() > 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(60))
    spmdSgemm(/*row major*/ 101, /*no trans*/ 111, 111, 1, 1, 1, 1.0f, addr(&a),
              1, addr(&b), 1, 0.0f, addr(&c), 1);
  EXPECT_EQ(spmdCollectivesInFlight(), 0);
  EXPECT_EQ(c, 2.0f);
  spmdWait(handle);
  EXPECT_EQ(out[0], float(size));
  EXPECT_EQ(out[count - 1], float(size));
}

TEST_F(Runtime, StateRegistry) {
  std::vector<float> w(8, 1.0f);
  spmdStateRegister("fc.weight", addr(w.data()), 32, SPMD_F32);
  int64_t bytes = 0;
  EXPECT_EQ(spmdStateData("fc.weight", &bytes), addr(w.data()));
  EXPECT_EQ(bytes, 32);
  EXPECT_GE(spmdStateCount(), 1);
  EXPECT_EQ(spmdStateBind("fc.weight", 32, SPMD_F32), addr(w.data()));
}

// The CPU programs' caching allocator (HostAllocator.cpp): a miss that
// must give up cached bytes resizes a cached mapping of another size, so
// its pages (and their contents) stay instead of being mapped afresh.
TEST_F(Runtime, HostCacheResizesCachedMappings) {
  constexpr size_t kMiB = size_t(1) << 20;
  spmdHostMemoryResetPeak();
  auto *a = static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(kMiB));
  ASSERT_NE(a, nullptr);
  std::fill(a, a + kMiB, 0x5A);
  _mlir_memref_to_llvm_free(a);
  // Grown: the old pages keep their bytes, the new ones are zero.
  auto *b =
      static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(kMiB + kMiB / 2));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b[0], 0x5A);
  EXPECT_EQ(b[kMiB - 1], 0x5A);
  EXPECT_EQ(b[kMiB + kMiB / 2 - 1], 0);
  _mlir_memref_to_llvm_free(b);
  // Shrunk.
  auto *c = static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(kMiB / 2));
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c[0], 0x5A);
  int64_t live = -1, peak = -1;
  spmdHostMemory(&live, &peak);
  EXPECT_EQ(live, int64_t(kMiB / 2));
  EXPECT_EQ(peak, int64_t(kMiB + kMiB / 2));
  _mlir_memref_to_llvm_free(c);
}

} // namespace

int main(int argc, char **argv) {
  // The allocator's defaults, whatever the environment says.
  unsetenv("SPMD_CPU_CACHE_SLACK");
  unsetenv("SPMD_CPU_CACHE");
  MPI_Init(&argc, &argv);
  spmdInit();
  ::testing::InitGoogleTest(&argc, argv);
  // Only rank 0 prints the report; every rank runs every test.
  if (spmdWorldRank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  int anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  spmdFinalize();
  MPI_Finalize();
  return anyFailed;
}
