"""A `puffer-tui bench vec` measurement (Result), the best setting of each backend per workload
with its ratios against the peers, and the short labels of the readable table."""

from __future__ import annotations

from dataclasses import dataclass, field

GYMNASIUM = ("gymnasium-sync", "gymnasium-async")


@dataclass
class Result:
    workload: str
    backend: str
    num_envs: int
    num_workers: int
    batch_size: int
    sps: float
    zero_copy: bool | None = None
    error: str | None = None
    cpu_us_per_step: float | None = None  # process-tree CPU microseconds an agent step
    rounds: list = field(default_factory=list)  # [steps/s, CPU µs/step] of each round


def best_by_backend(results: list[Result]) -> dict[tuple[str, str], Result]:
    best: dict[tuple[str, str], Result] = {}
    for r in results:
        key = (r.workload, r.backend)
        if key not in best or r.sps > best[key].sps:
            best[key] = r
    return best


def ratios(results: list[Result]) -> dict[tuple[str, str], dict[str, float]]:
    """Each backend's best against Gymnasium's best and against our synchronous mode."""
    best = best_by_backend(results)
    out = {}
    for (workload, backend), r in best.items():
        gym = max((best[(workload, g)].sps for g in GYMNASIUM if (workload, g) in best),
                  default=0.0)
        sync = best.get((workload, "multiprocessing"))
        serial = best.get((workload, "serial"))
        out[(workload, backend)] = {
            "vs_gymnasium_best": r.sps / gym if gym else None,
            "vs_our_sync": r.sps / sync.sps if sync and sync.sps else None,
            "vs_our_serial": r.sps / serial.sps if serial and serial.sps else None,
        }
    return out

# backend -> short label for the table
LABELS = {
    "serial": "serial",
    "serial-pool": "serial pool",
    "multiprocessing": "mp sync",
    "multiprocessing-pool": "mp pool",
    "multiprocessing-inline": "mp inline",
    "gymnasium-sync": "gym Sync",
    "gymnasium-async": "gym Async",
    "envpool": "envpool",
}


def setting_label(result) -> str:
    """The backend's short label, with what tells its settings apart (a pool's batches
    zero-copy or gathered; inline workers overlapped)."""
    label = LABELS.get(result.backend, result.backend)
    if result.backend == "multiprocessing-pool":
        label += " zero-copy" if result.zero_copy else " gathered"
    if result.backend == "multiprocessing-inline" and result.batch_size < result.num_envs:
        label += " pool"
    return label


def _ratio(value) -> str:
    return "" if value is None else f"{value:.2f}x"


def _sps(value: float) -> str:
    if value >= 1e6:
        return f"{value / 1e6:,.1f} M"
    return f"{value:,.0f}"


def print_table(results, best, summary, cores: int) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"agent-steps/second, best setting per backend ({cores} cores)")
    for col in ("workload", "backend", "envs", "workers", "batch", "steps/s", "CPU µs/step",
                "x gym best", "x mp sync", "x serial"):
        table.add_column(col, justify="left" if col in ("workload", "backend") else "right")
    workloads = list(dict.fromkeys(r.workload for r in results))
    for workload in workloads:
        for backend in LABELS:
            r = best.get((workload, backend))
            if r is None:
                continue
            ratio = summary[(workload, backend)]
            sps = f"[red]{r.error}[/red]" if r.error and not r.sps else _sps(r.sps)
            label = setting_label(r)
            cpu = "" if r.cpu_us_per_step is None else f"{r.cpu_us_per_step:,.1f}"
            table.add_row(workload, label, str(r.num_envs), str(r.num_workers),
                          str(r.batch_size), sps, cpu, _ratio(ratio["vs_gymnasium_best"]),
                          _ratio(ratio["vs_our_sync"]), _ratio(ratio["vs_our_serial"]))
        table.add_section()
    Console(width=132).print(table)
    print("Gymnasium's AsyncVectorEnv uses one process per env; CPU µs/step counts this "
          "process's threads and its worker processes; '--json' lists every setting tried.")


def _spread(values) -> str:
    import statistics

    if not values:
        return ""
    return (f" (round by round: median {statistics.median(values):.2f}x, "
            f"{min(values):.2f}-{max(values):.2f}x over {len(values)})")


def print_peers(peers: dict, stat: str) -> None:
    """Ours against EnvPool, each side's best setting by steps/s."""
    for workload, p in peers.items():
        ours, theirs = p["ours"], p["envpool"]
        label = LABELS.get(ours["backend"], ours["backend"])
        print(f"{workload}: ours ({label}, {ours['num_workers']} workers, batch "
              f"{ours['batch_size']}) / EnvPool ({theirs['num_workers']} threads, batch "
              f"{theirs['batch_size']}), {stat} of "
              f"rounds: steps/s {p['sps_ratio']:.2f}x{_spread(p['sps_ratio_rounds'])}; CPU per "
              f"step {p['cpu_ratio']:.2f}x{_spread(p['cpu_ratio_rounds'])} (below 1: ours "
              f"cheaper)")
