"""What a rank's compiled steps hold in memory, and the limit they must fit.

State (parameters, buffers, gradients and optimizer state kept across
steps) lives in buffers the runtime allocates, by name; a step's other
buffers come and go in the runtime's caching allocator, whose high-water
mark is the measured transient peak. The compiler plans that peak ahead of
time (spmd-plan-memory); `memory_stats()` gives both, and
`check_limit` refuses a step whose plan does not fit SPMD_MEMORY_LIMIT
before it runs, on every rank.
"""

import ctypes
import os

from . import _runtime

# spmd.state roles by the category memory_stats() reports them under.
CATEGORY = {"param": "parameters", "gradient": "gradients",
             "optimizer_state": "optimizer_state"}


def state_bytes() -> dict:
    """Bytes of every state this rank holds, in total and by category
    (parameters, gradients, optimizer_state, other: buffers, random state,
    outputs)."""
    from ._executable import STATE_ROLES
    lib = _runtime.runtime()
    totals = {"parameters": 0, "gradients": 0, "optimizer_state": 0,
              "other": 0}
    size = ctypes.c_int64()
    for i in range(lib.spmdStateCount()):
        name = lib.spmdStateName(i)
        lib.spmdStateData(name, ctypes.byref(size))
        role = STATE_ROLES.get(name.decode(), "")
        totals[CATEGORY.get(role, "other")] += size.value
    totals["total"] = sum(totals.values())
    return totals


def memory_stats() -> dict:
    """This rank's memory, in bytes:

    * `state_bytes`, and by category `parameters_bytes`, `gradients_bytes`
      (`.grad` kept between steps), `optimizer_state_bytes`,
      `other_state_bytes`;
    * `live_bytes` and `transient_peak_bytes`: the compiled programs'
      other buffers now and at most since the last
      reset_peak_memory_stats() (on the GPU target device memory);
    * `peak_bytes`: state + the transient peak;
    * after a step on the CPU target, the plan of the step that ran last:
      `planned_transient_peak_bytes`, `planned_peak_bytes` (state + it),
      and what the transient buffers are at the planned peak:
      `planned_activations_bytes`, `planned_gradients_bytes` (whole
      gradients before their reduction), `planned_communication_bytes`
      (collectives' outputs).
    """
    from ._executable import last_plan
    live, peak = _runtime.device().memory()
    state = state_bytes()
    stats = {"state_bytes": state["total"]}
    for k in ("parameters", "gradients", "optimizer_state", "other"):
        stats[f"{k}_bytes" if k != "other" else "other_state_bytes"] = \
            state[k]
    stats.update(live_bytes=live, transient_peak_bytes=peak,
                 peak_bytes=state["total"] + peak)
    plan = last_plan()
    if plan is not None:
        stats.update(
            planned_transient_peak_bytes=plan["transient_peak"],
            planned_peak_bytes=state["total"] + plan["transient_peak"],
            planned_activations_bytes=plan["activations"],
            planned_gradients_bytes=plan["gradients"],
            planned_communication_bytes=plan["communication"])
    return stats


def release_freed_host_memory():
    """Returns the host memory Python and torch freed to the system: glibc
    keeps freed heap blocks in the process (a model's parameters, built
    before the first call and replaced by the program's state, stayed ~900
    MiB of resident heap on GPT-2 124M). No-op without glibc."""
    import gc
    gc.collect()
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _local_ranks() -> int:
    for var in ("OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE",
                "MPI_LOCALNRANKS"):
        if os.environ.get(var, "").isdigit():
            return max(1, int(os.environ[var]))
    return 1


def memory_limit() -> int:
    """The bytes one rank may use: SPMD_MEMORY_LIMIT, else this machine's
    memory shared by the ranks on it."""
    value = os.environ.get("SPMD_MEMORY_LIMIT", "")
    if value:
        try:
            limit = int(value)
        except ValueError:
            raise ValueError(f"SPMD_MEMORY_LIMIT={value!r}: expected a "
                             "number of bytes") from None
        if limit <= 0:
            raise ValueError(f"SPMD_MEMORY_LIMIT={value!r}: expected a "
                             "positive number of bytes")
        return limit
    pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return pages // _local_ranks()


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def check_limit(plan, program):
    """Raises on every rank, before the step first runs, when some rank's
    planned peak (its state + the planned transient peak) exceeds the
    memory limit; the message gives the plan by category and what would
    fit."""
    if plan is None:
        return
    error = None
    try:
        limit = memory_limit()
        state = state_bytes()
        peak = state["total"] + plan["transient_peak"]
        if peak > limit:
            sharded = any(s.sharded for s in program.states)
            hints = []
            if not sharded:
                hints.append("parallel_mode=spmd.DataParallel('fully_shard') "
                             "(parameters, gradients and optimizer state "
                             "split across the ranks)")
            hints.append("more ranks (each holds less under fully_shard "
                         "and a smaller batch)")
            hints.append("a smaller batch or sequence (activations)")
            error = MemoryError(
                f"spmd: the step's planned peak on rank {_runtime.rank()} is "
                f"{_mib(peak)}, above the limit of {_mib(limit)} "
                f"(SPMD_MEMORY_LIMIT, default this machine's memory / ranks "
                f"on it): state {_mib(state['total'])} (parameters "
                f"{_mib(state['parameters'])}, gradients "
                f"{_mib(state['gradients'])}, optimizer state "
                f"{_mib(state['optimizer_state'])}, other "
                f"{_mib(state['other'])}) + transient "
                f"{_mib(plan['transient_peak'])} at its peak (activations "
                f"{_mib(plan['activations'])}, whole gradients "
                f"{_mib(plan['gradients'])}, communication "
                f"{_mib(plan['communication'])}). It would fit with less: "
                + "; ".join(hints) + ".")
    except ValueError as err:
        error = err
    _runtime.agree_on_failure(error)
