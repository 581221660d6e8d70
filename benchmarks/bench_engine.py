"""Engine speed: one estimate, a cold CLI estimate, a cold whole-catalog search, the simulator.

Figures (targets of the "untie the core" issue, 2-core machine):
- estimate in-process from model and GPU names (``estimate(make_deployment(...))``, ms per call on fresh
  inputs, the median of 3 batches) <= llm-analysis's time from names on the same workload; beside it the
  call reusing one deployment (the core: what ``estimate()`` computes) and with everything the CLI
  prints (``to_dict()``);
- ``inferbound estimate`` cold (a fresh process, median of 5) <= 0.3 s, with the package's bytecode
  cached as an installed wheel has it (.ci/setup compiles it; the line says whether it is);
- ``inferbound search meta-llama/Llama-3.1-70B`` cold (whole catalog) <= 1.5 x the cold estimate;
- simulator: 10,000 requests of Llama-3.1-70B on 4x H100 TP4 at 8 req/s (1024 in / 256 out) <= 0.5 s
  (median of 3 fresh processes);
  with ``--million``: 1,000,000 requests <= 60 s and <= 2 GB peak memory (a child process, its
  maximum resident set from getrusage);
- the YAML loaders on data/hardware.yaml (PyYAML's C loader against the pure-Python one).
Where ``llm-analysis`` is installed (the ``bench`` extra: ``bash benchmarks/setup_bench.sh``, then run
this with ``.venv-bench/bin/python``), its in-process
inference call and its cold CLI run on the same workload (Llama-2-7B, H100 SXM, batch 8, 1024 in /
256 out) are printed side by side.

Run: .venv-bench/bin/python benchmarks/bench_engine.py [--million]   (or .venv/bin/python: no peer)
"""
from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

BIN = Path(sys.executable).parent


def ms_per_call(fn, n: int, repeats: int = 3) -> float:
    """Median over ``repeats`` batches of ``n`` calls on fresh inputs (the machines are noisy)."""
    fn(0)
    per = []
    for r in range(repeats):
        t = time.perf_counter()
        for i in range(n):
            fn(r * n + i + 1)
        per.append((time.perf_counter() - t) / n * 1e3)
    return statistics.median(per)


def cold(cmd: list[str], runs: int = 5, cpu: list[float] | None = None) -> float:
    """Median wall time of ``runs`` fresh processes; ``cpu`` (a list) gets the median CPU time (user + system,
    the child's threads included: getrusage RUSAGE_CHILDREN) of the same runs."""
    walls, cpus = [], []
    for _ in range(runs):
        r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
    if cpu is not None:
        cpu.append(statistics.median(cpus))
    return statistics.median(walls)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def estimates() -> float:
    import inferbound as ib
    dep = ib.make_deployment(model="meta-llama/Llama-2-7b-hf", gpu="h100_sxm")
    core = ms_per_call(lambda i: ib.estimate(dep, batch=8, input_len=1024 + i, output_len=256), 200)
    full = ms_per_call(lambda i: ib.estimate(dep, batch=8, input_len=2048 + i, output_len=256).to_dict(), 100)
    names = ms_per_call(lambda i: ib.estimate(ib.make_deployment(model="meta-llama/Llama-2-7b-hf", gpu="h100_sxm"),
                                              batch=8, input_len=3072 + i, output_len=256), 100)
    print(f"estimate in-process     from names {names:6.3f} ms; reusing the deployment: core {core:6.3f} ms, "
          f"with every printed extra (to_dict) {full:6.3f} ms")
    try:
        import logging
        from llm_analysis.analysis import LLMAnalysis
        from llm_analysis.config import (ParallelismConfig, get_dtype_config_by_name, get_gpu_config_by_name,
                                         get_model_config_by_name)
    except ImportError:
        print("llm-analysis           not installed (bash benchmarks/setup_bench.sh, then run this with "
              ".venv-bench/bin/python): no comparison")
        return core
    logging.getLogger().setLevel(logging.ERROR)
    mc, gc = get_model_config_by_name("NousResearch_Llama-2-7b-hf"), get_gpu_config_by_name("h100-sxm-80gb")
    dc = get_dtype_config_by_name("w16a16e16")
    la = ms_per_call(lambda i: LLMAnalysis(mc, gc, dc, ParallelismConfig(tp_size=1)).inference(
        batch_size_per_gpu=8, seq_len=1024 + i, num_tokens_to_generate=256), 200)
    la_names = ms_per_call(lambda i: LLMAnalysis(
        get_model_config_by_name("NousResearch_Llama-2-7b-hf"), get_gpu_config_by_name("h100-sxm-80gb"),
        get_dtype_config_by_name("w16a16e16"), ParallelismConfig(tp_size=1)).inference(
        batch_size_per_gpu=8, seq_len=3072 + i, num_tokens_to_generate=256), 100)
    print(f"llm-analysis in-process from names {la_names:6.3f} ms, reusing its configs {la:6.3f} ms (same workload; "
          f"prefill/decode latency and memory only)")
    print(f"  from names, ours / llm-analysis = {names / la_names:.2f}x (target <= 1x: {verdict(names <= la_names)})")
    return core


def byte_compiled() -> bool:
    """Whether every module of the package has current cached bytecode (.ci/setup compiles it, as a wheel
    install does): a .pyc whose header records the source's size and modification time."""
    import importlib.util
    import inferbound
    for src in Path(inferbound.__file__).parent.rglob("*.py"):
        pyc = Path(importlib.util.cache_from_source(str(src)))
        if not pyc.exists():
            return False
        head, st = pyc.read_bytes()[:16], src.stat()
        flags = int.from_bytes(head[4:8], "little")
        if flags == 0 and (int.from_bytes(head[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
                           or int.from_bytes(head[12:16], "little") != st.st_size & 0xFFFFFFFF):
            return False
    return True


def cli() -> float:
    cpu: list[float] = []
    est = cold([str(BIN / "inferbound"), "estimate"], cpu=cpu)
    print(f"inferbound estimate     cold {est:6.3f} s, CPU {cpu[0]:6.3f} s   (target <= 0.3 s: {verdict(est <= 0.3)}; bytecode "
          f"{'cached' if byte_compiled() else 'NOT current: starts recompile the package (run bash .ci/setup)'})")
    try:
        import llm_analysis  # noqa: F401
        la = cold([sys.executable, "-m", "llm_analysis.analysis", "infer", "--model_name",
                   "NousResearch_Llama-2-7b-hf", "--gpu_name", "h100-sxm-80gb", "--batch_size_per_gpu", "8",
                   "--seq_len", "1024", "--num_tokens_to_generate", "256", "--log_level", "ERROR"])
        print(f"llm-analysis infer      cold {la:6.3f} s")
    except (ImportError, subprocess.CalledProcessError):
        pass
    search = cold([str(BIN / "inferbound"), "search", "meta-llama/Llama-3.1-70B"], runs=3)
    ratio = search / est
    print(f"inferbound search 70B   cold {search:6.3f} s   = {ratio:.2f}x the cold estimate "
          f"(target <= 1.5x: {verdict(ratio <= 1.5)})")
    return ratio


def simulator(n: int, target_s: float, target_gb: float | None, runs: int = 1) -> None:
    """Wall time of ``n`` requests in a fresh process (median of ``runs``), its steps and peak memory."""
    code = ("import time,resource;from inferbound.deploy.deployment import make_deployment;from inferbound.sim import simulate;"
            "d=make_deployment(model='meta-llama/Llama-3.1-70B',gpu='h100_sxm',tp=4);t=time.perf_counter();"
            f"r=simulate(d,rate=8,requests={n},input_len=1024,output_len=256,seed=0);w=time.perf_counter()-t;"
            "print(w,r['steps'],resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    outs = [subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
            for _ in range(runs)]
    wall = statistics.median(float(o[0]) for o in outs)
    steps, rss_kb = int(outs[0][1]), max(int(o[2]) for o in outs)
    mem = rss_kb * 1024 / 1e9
    line = (f"simulate {n:>9,} requests {wall:7.2f} s{' (median of ' + str(runs) + ')' if runs > 1 else ''}  ({steps:,} steps, {steps / wall:,.0f} steps/s; "
            f"target <= {target_s:g} s: {verdict(wall <= target_s)})  peak {mem:.2f} GB")
    if target_gb is not None:
        line += f" (target <= {target_gb:g} GB: {verdict(mem <= target_gb)})"
    print(line)


def yaml_loaders() -> None:
    import yaml
    text = (resources.files("inferbound") / "data" / "hardware.yaml").read_text("utf-8")
    py = ms_per_call(lambda i: yaml.load(text, Loader=yaml.SafeLoader), 5)
    c = ms_per_call(lambda i: yaml.load(text, Loader=yaml.CSafeLoader), 5) if hasattr(yaml, "CSafeLoader") else None
    print(f"hardware.yaml parse     Python {py:6.1f} ms, C " + ("n/a" if c is None else f"{c:6.1f} ms "
                                                               f"({py / c:.1f}x faster)"))


def main() -> None:
    million = "--million" in sys.argv[1:]
    print(f"inferbound engine benchmark (peak RSS of this process so far: "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB)")
    estimates()
    cli()
    simulator(10_000, 0.5, None, runs=3)
    if million:
        simulator(1_000_000, 60.0, 2.0)
    yaml_loaders()


if __name__ == "__main__":
    main()
