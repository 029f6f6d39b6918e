"""spmd.Auto's choice against the hand-written strategies a bench measured
in the same run (bench/gpt2.py, bench/fsdp.py): its step over the best
that fits the limit, and how its model ranks them (issue #45)."""

# spmd.Auto's candidates by the bench mode that runs each by hand.
AUTO_CANDIDATES = {
    "DataParallel('replicate')": "spmd-replicate",
    "DataParallel('fully_shard')": "spmd-fully_shard",
    "DataParallel('fully_shard', reshard_after_forward=False)":
        "spmd-fully_shard_keep"}


def spearman(a, b) -> float:
    """Rank correlation of two equally long lists (no ties expected)."""
    rank = lambda v: {x: i for i, x in enumerate(sorted(v))}  # noqa: E731
    ra, rb = rank(a), rank(b)
    n = len(a)
    if n < 2:
        return float("nan")
    d2 = sum((ra[x] - rb[y]) ** 2 for x, y in zip(a, b))
    return 1 - 6 * d2 / (n * (n * n - 1))


def auto_report(runs, t):
    """Prints spmd.Auto's choice against the hand-written strategies
    measured in this run. runs: {mode: [per-rank result]}, spmd-auto's
    holding `auto` (the plan as bench/gpt2.py's worker records it); t:
    {mode: step seconds}."""
    auto = runs.get("spmd-auto")
    if not auto or "auto" not in auto[0]:
        return
    plan = auto[0]["auto"]
    print(f"spmd.Auto chose {plan['chosen']} in {plan['seconds']:.1f} s "
          f"(limit {plan['limit'] / 2**20:,.0f} MiB per rank); modeled "
          "against measured step, s:")
    modeled, measured = [], []
    for name, m in plan["modeled"].items():
        mode = AUTO_CANDIDATES.get(name)
        got = t.get(mode)
        peak = "-" if m["peak"] is None else f"{m['peak'] / 2**20:,.0f} MiB"
        print(f"  {name}: modeled {m['step']:.2f}, measured "
              + (f"{got:.2f}" if got else "(not run)")
              + f", planned peak {peak}"
              + ("" if m["fits"] else " (over the limit)"))
        if got:
            modeled.append(m["step"])
            measured.append(got)
    fitting = [t[AUTO_CANDIDATES[n]] for n, m in plan["modeled"].items()
               if m["fits"] and AUTO_CANDIDATES.get(n) in t]
    if fitting:
        print(f"  spmd.Auto's step / the best hand-written one that fits: "
              f"{t['spmd-auto'] / min(fitting):.2f} (target <= 1.10)")
    if len(modeled) >= 2:
        print(f"  rank correlation, modeled against measured: "
              f"{spearman(modeled, measured):.2f} over {len(modeled)}")
