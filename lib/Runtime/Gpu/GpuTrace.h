//===- GpuTrace.h - device work in step traces -------------------*- C++
//-*-===//
//
// While a step trace records (Trace.h), the GPU runtime brackets what it
// enqueues (kernels, GEMMs, collectives, copies) with timing events on the
// work's stream; when the trace stops, the events are read back and become
// complete events on one trace thread per stream, placed on the host clock
// through one anchor event timed against it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_RUNTIME_GPU_GPUTRACE_H
#define SPMD_RUNTIME_GPU_GPUTRACE_H

#include <cuda.h>

#include <string>

namespace spmd::gpu::trace {

/// A timing event recorded on `stream` now, where device work about to be
/// enqueued starts; null when tracing is off.
CUevent begin(CUstream stream);

/// Records the work enqueued on `stream` since `start` (from begin(); null
/// does nothing) as the event `name` of `category`, `args` the body of a
/// JSON object.
void end(CUevent start, CUstream stream, std::string name, const char *category,
         std::string args);

/// Names `stream`'s trace thread ("program stream", ...).
void nameStream(CUstream stream, const char *name);

/// Remembers a kernel's name for the launches of `function`.
void nameFunction(CUfunction function, const char *name);

/// The event name and arguments of a launch of `function`: named after the
/// user's code it runs (spmdGpuTraceSource) when known, else the kernel.
std::string kernelEventName(CUfunction function);
std::string kernelEventArgs(CUfunction function);

/// spmdGpuTraceSource: the user's code of the next traced call.
void setSource(const char *source);

/// `, "source": "..."` for the next traced call when its source is known
/// (spmdGpuTraceSource), else empty.
std::string sourceArg();

} // namespace spmd::gpu::trace

#endif // SPMD_RUNTIME_GPU_GPUTRACE_H
