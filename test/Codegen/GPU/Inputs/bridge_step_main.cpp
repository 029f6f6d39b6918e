// Drives a train step as spmd.compile builds it (test/Python/emit_program.py:
// `train_step(x, y)` with every parameter, optimizer state and output as
// named state) on the CPU path (-DSPMD_CPU) or the GPU path, on any number
// of ranks, for 3 steps from fixed state and data: every state is set from
// its name through the runtime's registry, the step runs on this rank's rows
// of the global batch, and the final state (parameters, optimizer state, the
// loss) is written to a file (CPU) or compared with that file (GPU), state
// by state, by name.
//
// TOLERANCE: the largest relative deviation accepted (default 1e-5);
// ONLY_OUTPUTS: only the returned values (the loss) are written and
// compared (a real-size model's state is gigabytes of text);
// ADAM_EPS: the optimizer's eps (default 1e-8);
// SPMD_TIME_STEPS=N: N more steps after the check, timed (median printed).
//
// Shapes and types come from macros: ROWS (global batch), XC (features per
// row, 0 for 1-D), X_I64 / X_RANGE (integer inputs in [0, X_RANGE)), YC,
// Y_I64, Y_RANGE likewise. All state is f32 but the optimizer's run-time
// float options (`optimizer.param_groups.G.lr`, ...: f64), which are set to
// typical values and not compared.
//
//   bridge_step_cpu OUT.txt           (the CPU path: writes the reference)
//   bridge_step_cpu --check REF.txt   (the CPU path on N ranks vs REF)
//   bridge_step_gpu REF.txt           (the GPU path vs REF)
// SPMD_STEP_VERBOSE=1: rank 0 lists every state that deviates;
// SPMD_TRACE=DIR: the 3 steps are traced (StepDriver.h's StepTrace);
// SPMD_CUDA_GRAPH=1: steps 2 and 3 run as one CUDA graph (GraphSteps).
#include "../../../lib/Support/StepDriver.h"

#include "Spmd/Runtime/SpmdRuntime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#ifndef TOLERANCE
#define TOLERANCE 1e-5
#endif
// Adam's eps. A parameter whose exact gradient is 0 (attention's key bias:
// softmax ignores a shift shared by all keys) gets rounding noise as its
// gradient, which Adam normalizes to steps of lr; two paths that round
// differently then differ by lr, however right both are. A larger eps damps
// that noise and keeps the comparison meaningful for the rest.
#ifndef ADAM_EPS
#define ADAM_EPS 1e-8
#endif

#ifdef ONLY_OUTPUTS
static constexpr bool onlyOutputs = true;
#else
static constexpr bool onlyOutputs = false;
#endif

extern "C" void spmd_register_state(void);
extern "C" void train_step(...);

/// A memref in the expanded calling convention: allocated, aligned, offset,
/// sizes, strides (what spmd.compile passes through ctypes).
static void pushMemRef(std::vector<int64_t> &args, void *data,
                       std::vector<int64_t> sizes) {
  args.push_back(reinterpret_cast<int64_t>(data));
  args.push_back(reinterpret_cast<int64_t>(data));
  args.push_back(0);
  for (int64_t s : sizes)
    args.push_back(s);
  int64_t stride = 1;
  std::vector<int64_t> strides(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  for (int64_t s : strides)
    args.push_back(s);
}

/// This rank's rows of a global input, on the device.
static void *input(int64_t rows, int64_t first, int64_t cols, bool isInt,
                   int64_t range, double a, double b) {
  int64_t per = cols ? cols : 1;
  std::vector<float> f(size_t(rows * per));
  std::vector<int64_t> i(size_t(rows * per));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < per; ++c) {
      int64_t g = first + r;
      f[size_t(r * per + c)] = float(std::sin(a * double(g) + b * double(c)));
      i[size_t(r * per + c)] = (g * 7 + c * 3 + int64_t(a * 10)) % range;
    }
  size_t bytes = size_t(rows * per) * (isInt ? 8 : 4);
  void *d = devAlloc(bytes);
  copy(d, isInt ? static_cast<void *>(i.data()) : f.data(), bytes);
  return d;
}

/// The value of a run-time optimizer option (an f64 state named
/// `optimizer.param_groups.G.<option>`), or a negative number for other
/// state.
static double hyperparam(const std::string &name) {
  if (name.find("optimizer.param_groups.") == std::string::npos)
    return -1;
  std::string option = name.substr(name.rfind('.') + 1);
  if (option == "lr")
    return 0.01;
  if (option == "momentum" || option == "beta1")
    return 0.9;
  if (option == "dampening")
    return 0.0;
  if (option == "weight_decay")
    return 0.01;
  if (option == "beta2")
    return 0.999;
  if (option == "eps")
    return ADAM_EPS;
  return -1;
}

static bool startsAtZero(const std::string &name) {
  for (const char *z :
       {".exp_avg", ".step", "output.", "momentum_buffer", ".max_exp_avg_sq"})
    if (name.find(z) != std::string::npos)
      return true;
  return false;
}

int main(int argc, char **argv) {
  // The CPU build writes FILE; `--check FILE` (and the GPU build) compares
  // with it instead (the CPU path on N ranks vs on 1).
  bool check = argc == 3 && !std::strcmp(argv[1], "--check");
  if (check) {
    argv[1] = argv[2];
    argc = 2;
  }
#ifndef SPMD_CPU
  check = true;
#endif
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  spmdInit();
  int rank = spmdWorldRank(), size = spmdWorldSize();
  spmd_register_state();
  std::map<std::string, std::pair<int64_t, int64_t>> states; // data, bytes
  for (int64_t s = 0; s < spmdStateCount(); ++s) {
    std::string name = spmdStateName(s);
    int64_t bytes = 0;
    int64_t data = spmdStateData(name.c_str(), &bytes);
    if (double value = hyperparam(name); value >= 0) {
      copy(reinterpret_cast<void *>(data), &value, sizeof(value));
      continue;
    }
    states[name] = {data, bytes};
    std::vector<float> v(size_t(bytes / 4), 0.0f);
    if (!startsAtZero(name)) {
      unsigned h = 0;
      for (char c : name)
        h = h * 31 + unsigned(c);
      for (size_t j = 0; j < v.size(); ++j)
        v[j] = float(0.3 * std::sin(0.7 * double(j) + double(h % 1000)));
    }
    copy(reinterpret_cast<void *>(data), v.data(), size_t(bytes));
  }
  int64_t rows = ROWS / size, first = rank * rows;
  void *x = input(rows, first, XC, X_I64, X_RANGE, 0.37, 0.91);
  void *y = input(rows, first, YC, Y_I64, Y_RANGE, 0.53, 0.29);
  std::vector<int64_t> args;
  pushMemRef(args, x,
             XC ? std::vector<int64_t>{rows, XC} : std::vector<int64_t>{rows});
  pushMemRef(args, y,
             YC ? std::vector<int64_t>{rows, YC} : std::vector<int64_t>{rows});
  using Fn = void (*)(...);
  Fn step = reinterpret_cast<Fn>(&train_step);
  StepTrace trace;
  GraphSteps graph;
  bool known = args.size() == 10 || args.size() == 12 || args.size() == 14;
  if (!known) {
    std::fprintf(stderr, "unexpected inputs\n");
    return 2;
  }
  auto call = [&] {
    if (args.size() == 10) // 1-D, 1-D
      step(args[0], args[1], args[2], args[3], args[4], args[5], args[6],
           args[7], args[8], args[9]);
    else if (args.size() == 12) // 2-D, 1-D or 1-D, 2-D
      step(args[0], args[1], args[2], args[3], args[4], args[5], args[6],
           args[7], args[8], args[9], args[10], args[11]);
    else // 2-D, 2-D
      step(args[0], args[1], args[2], args[3], args[4], args[5], args[6],
           args[7], args[8], args[9], args[10], args[11], args[12], args[13]);
  };
  for (int s = 0; s < 3; ++s) {
    trace.beginStep();
    graph.run(call);
    trace.endStep();
  }
  if (!trace.finish(rank))
    return 1;
  std::map<std::string, std::vector<float>> got;
  for (auto &[name, st] : states) {
    std::vector<float> v(size_t(st.second / 4));
    copy(v.data(), reinterpret_cast<void *>(st.first), size_t(st.second));
    got[name] = v;
  }

  if (!check) {
    FILE *f = std::fopen(argv[1], "w");
    if (!f) {
      std::perror(argv[1]);
      return 1;
    }
    for (auto &[name, v] : got) {
      if (onlyOutputs && name.rfind("output.", 0) != 0)
        continue;
      std::fprintf(f, "%s %zu", name.c_str(), v.size());
      for (float e : v)
        std::fprintf(f, " %.9e", double(e));
      std::fprintf(f, "\n");
    }
    std::fclose(f);
    std::printf("cpu: %zu states written to %s\n", got.size(), argv[1]);
    return 0;
  }
  FILE *f = std::fopen(argv[1], "r");
  if (!f) {
    std::perror(argv[1]);
    return 1;
  }
  double worst = 0;
  std::string worstState;
  size_t compared = 0, values = 0;
  char name[512];
  size_t n = 0;
  bool ok = true;
  while (std::fscanf(f, "%511s %zu", name, &n) == 2) {
    std::vector<double> ref(n);
    for (double &e : ref)
      if (std::fscanf(f, "%le", &e) != 1)
        ok = false;
    auto it = got.find(name);
    if (it == got.end() || it->second.size() != n) {
      std::printf("rank %d: state %s missing or of another size\n", rank, name);
      ok = false;
      continue;
    }
    double stateWorst = 0;
    for (size_t j = 0; j < n; ++j) {
      double d = std::fabs(double(it->second[j]) - ref[j]) /
                 std::fmax(1.0, std::fabs(ref[j]));
      if (d > stateWorst || std::isnan(d))
        stateWorst = d;
      if (d > worst || std::isnan(d)) {
        worst = d;
        worstState = name;
      }
    }
    if (rank == 0 && !(stateWorst < 1e-5) && std::getenv("SPMD_STEP_VERBOSE"))
      std::printf("  %s: %.1e (first values: gpu %g, cpu %g)\n", name,
                  stateWorst, double(it->second[0]), ref[0]);
    ++compared;
    values += n;
  }
  std::fclose(f);
  size_t expected =
      onlyOutputs
          ? size_t(std::count_if(got.begin(), got.end(),
                                 [](const auto &entry) {
                                   return entry.first.rfind("output.", 0) == 0;
                                 }))
          : got.size();
  ok = ok && compared == expected && worst < TOLERANCE && !std::isnan(worst);
  std::printf("bridge step: rank %d of %d, %zu states (%zu values) after 3 "
              "steps vs the CPU path, max relative deviation %.1e%s%s: %s\n",
              rank, size, compared, values, worst, ok ? "" : " in ",
              ok ? "" : worstState.c_str(), ok ? "OK" : "WRONG");
  // SPMD_TIME_STEPS=N: N more steps after the check, timed (each returns
  // when its device work is done), the median printed.
  if (const char *t = std::getenv("SPMD_TIME_STEPS"); t && std::atoi(t) > 0) {
    std::vector<double> ms;
    for (int s = 0; s < std::atoi(t); ++s) {
      auto start = std::chrono::steady_clock::now();
      graph.run(call);
      ms.push_back(std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("time: rank %d: spmd%s %.3f ms per step (median of %zu)\n",
                rank, std::getenv("SPMD_CUDA_GRAPH") ? " (CUDA graph)" : "",
                ms[ms.size() / 2], ms.size());
  }
  spmdFinalize();
  return ok ? 0 : 1;
}
