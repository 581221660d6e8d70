"""Online serving in steady state, analytic: a Poisson request rate (open loop) or N clients (closed loop).

Per replica (rate λ_r = λ/replicas, or N_r = N/replicas clients with think time Z), continuous batching
as steady_state.py prices it through the tabulated step contract (stepmodel.py). C requests are in
service (prefilling or decoding); the engine is busy a share b of the time:

    open loop    C = λ_r·E2E (Little's law)          b = 1 − e^(−C)     (requests in service ~ Poisson,
                                                                         M/G/∞; PASTA: arrivals see b)
    closed loop  C = N_r·E2E/(E2E + Z)               b = 1 − (1 − C/N_r)^N_r   (each client in service
                 (capped at the engine's C_max)                           with probability C/N_r)

While busy, C/b requests are in service, D = (C/b)·(Ō − 1)·t/E2E of them decoding (their share of a
request's life), and the mean step per output token is t(D) (steady_state.steps: D decodes, and the
D·p prompts that keep D constant arriving in lumps, so some steps carry prefill). The share s =
(O − 1)·t/E2E is a fixed point (``_Replica.at``: plain passes, bisection on s where they do not settle),
so requests/s = C/E2E = b·D/((O − 1)·t(D)) is what the priced D serves. Per length class c
(lengths.py), with requests arriving at X = C/E2E per second (Little's law in service):

    ITL = TPOT = t(D)       (TPOT excludes the first token; equal here: every decode step is alike)
                            (multi-step scheduling, N steps per call: ITL = N·t as benchmarks record
                            chunks, E2E + (N − 1)·t/2, W's step rest N·t/2: multistep.py)
                            (stream interval k: ITL = the gap between chunks of k tokens, streaming.py)
    TTFT_c = W + S_c        S_c = Σ_k t(D' decodes + chunk k of I_c)  (steady_state.prefill_seconds), D'
                            the decoders among the others an arrival meets: C (open loop, PASTA) or
                            C·(N_r − 1)/N_r (closed), at the decode share
    W      = the wait for the step in flight and for prefill work ahead (steady_state.ttft: the decode
             step's mean rest for arrivals that find the engine busy but no prefill running, an M/G/1
             prefill queue for the rest); arrivals find the engine busy with probability b (open
             loop) or 1 − (1 − C/N_r)^(N_r − 1) (another client in service; 0 for N_r = 1)
    E2E_c  = TTFT_c + (O_c − 1)·t                               E2E = Σ_c w_c E2E_c

Which closed loop. Back-to-back clients (Z = 0, the benchmark's: ``vllm bench serve --max-concurrency``)
with fixed lengths send their prompts in waves:
the first N at once, each later one at the step end of its predecessor's last token. Their TTFT, TPOT
and throughput are closed_loop.py's wave model over a run of ``requests`` prompts (default
data/closed_loop.yaml: vllm bench serve's --num-prompts), not this steady state. With a think time
(exponential per client, as ``inferbound simulate`` draws it), lengths that spread, speculative decoding,
prefix hits, a host KV tier, or prompts longer than a prefill-first engine's step, arrivals are treated as
random as below, and a note says why the waves are not modelled.

C solves its equation by bisection on [0, C_max] (C_max: the KV-cache, token-budget and max_num_seqs
caps, steady_state.caps, as C = D_max·(1 + p), or the smaller C where the decodes asked for, C/b·share,
reach D_max: short outputs; it may be below one request, a long prompt chunked over steps; only a KV cache
holding less than one request is refused). Open loop with no root below C_max is overload (an
error naming the capacity). Closed loop with N_r·E2E/(E2E + Z) > C_max keeps C = C_max in service and
the rest queue: requests/s X = C_max/E2E, each client's cycle is N_r/X (Little), and the queue wait
W = N_r/X − Z − E2E is added to TTFT and E2E. Little's law, X·(E2E + Z) = N_r, holds by construction.

Percentiles are over the length classes (a fixed-length workload has one value); step-to-step and
arrival variation is not modelled here: ``inferbound simulate`` gives the tails. Images (``images`` per
request, images.py): their tokens join every prompt and the towers' pass the prefill work (steady_state),
and arrivals are treated as random (the wave model prices text prompts). Power per GPU:
b·P(step) + (1 − b)·P_idle (energy.power_w). ``error_bands``: the calibration's serving bands per figure
(deploy/bands.py), the ones the simulator's results carry.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..deploy.deployment import Deployment, make_deployment
from ..deploy.bands import error_bands
from ..deploy.operating_band import UNBOUNDED, Overload, estimate_bands
from ..pricing.energy import dollars_per_second, per_million, power_w
from ..step.explain import phase
from ..base.datafiles import data_yaml
from . import multistep, steady_state, streaming
from .closed_loop import ClosedLoop, Waves
from .recv import receive_wait
from .features import Features
from .images import images_notes, with_images
from .lengths import Mix, describe
from .serving_replica import Replica as _Replica

PERCENTILES = (50, 90, 99)


@dataclass
class ServingEstimate:
    model: str
    gpu: str
    num_gpus: int
    replicas: int
    mode: str  # "rate" (open loop) or "concurrency" (closed loop)
    request_rate: float | None  # offered requests/s, whole deployment (open loop)
    concurrency: int | None  # clients, whole deployment (closed loop)
    think_time_s: float
    lengths: str
    input_len: float  # mean prompt tokens
    output_len: float  # mean output tokens
    in_service: float  # requests prefilling or decoding per replica (C)
    queued: float  # requests waiting for admission per replica (closed loop past the caps)
    decode_batch: float  # D while busy, per replica
    busy_share: float  # b
    step_time_s: float
    ttft_s: dict  # mean, p50, p90, p99
    itl_s: float
    tpot_s: float  # without the first token
    e2e_s: dict
    queue_wait_s: float
    output_tok_s: float  # whole deployment
    output_tok_s_per_gpu: float
    tok_s_per_user: float
    requests_per_s: float
    littles_law: float  # requests/s × (E2E + Z) / requests in the system (1 by construction)
    limited_by: str  # "none", or the cap that holds C at C_max (kv-cache, token budget, max_num_seqs)
    bound: str
    power_per_gpu_w: float
    joules_per_output_token: float
    usd_per_million_output_tokens: float | None
    kv_capacity_bytes_per_gpu: float
    engine_settings: str
    notes: list = field(default_factory=list)
    error_bands: dict = field(default_factory=dict)  # by figure (throughput, ttft, tpot, itl, e2e): deploy/bands.py
    percentiles: str = ("over the request length classes; step and arrival variation is not modelled "
                        "(inferbound simulate gives the tails)")
    wave_step: dict | None = None  # closed-loop waves: TPOT's split_s, communication_s, prefill_step_share

    def to_dict(self) -> dict:
        return asdict(self)


def _stats(values, weights) -> dict:
    """Mean and weighted percentiles over the length classes."""
    v, w = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    order = np.argsort(v)
    cum = np.cumsum(w[order]) / w.sum()
    out = {"mean": float(np.dot(v, w) / w.sum())}
    for q in PERCENTILES:
        out[f"p{q}"] = float(v[order][min(int(np.searchsorted(cum, q / 100 - 1e-12)), v.size - 1)])
    return out


def _count(c: float) -> str:
    """A mean count of requests: whole from 10 up, two digits below (0.5 when long prompts bind the budget)."""
    return f"{c:,.0f}" if c >= 10 else f"{c:.2g}"


def _wave_reason(dep: Deployment, mix: Mix, clients: float, think_time: float) -> str | None:
    """Why the closed loop's wave model (closed_loop.py) does not apply, or None when it does."""
    rt = dep.runtime
    if mix.images:
        return (f"images={mix.images} per request: the closed loop's wave model prices text prompts without the "
                f"towers' pass, so arrivals are treated as random (steady state, workloads/images.py)")
    if think_time > 0:
        return (f"think time {think_time:g} s: clients think exponential times (as inferbound simulate draws them) and "
                f"desynchronize, so arrivals are treated as random (steady state), not as waves")
    if len(mix.inputs) > 1 or any(float(x) != int(x) for x in (*mix.inputs, *mix.outputs)):
        return (f"lengths spread ({describe(mix)}): the closed loop's prefill waves (fixed lengths, ignore-eos) break "
                f"up, so arrivals are treated as random; a benchmark with narrow length ranges may still run in waves "
                f"and see a higher TTFT than this (inferbound simulate replays it)")
    if Features(dep, rt, mix).active:
        return ("speculative decoding, prefix hits or a host KV tier: the closed loop's wave model prices plain steps "
                "only, so arrivals are treated as random; a benchmark's waves may see a higher TTFT (inferbound "
                "simulate replays them)")
    if not rt.mixed_batches and max(mix.inputs) > rt.token_budget:
        return (f"{rt.label} runs prefill-first steps and a prompt of {max(mix.inputs):g} tokens spans several of its "
                f"{rt.token_budget}-token steps: the wave model needs a prompt per step, so arrivals are treated as random")
    if rt.recv_interval > 1 and clients > 1:
        return (f"scheduler recv interval {rt.recv_interval} (SGLang --scheduler-recv-interval): a prompt waits for the "
                f"scheduler's next receive, so the closed loop's prefill waves do not hold; the steady state adds the "
                f"mean wait (workloads/recv.py) and inferbound simulate replays the counter")
    if multistep.steps_of(rt) > 1:
        return (f"multi-step scheduling ({rt.scheduler_steps} decode steps per call): the wave model prices one step "
                f"per call, so arrivals are treated as random (steady state, workloads/multistep.py)")
    if float(clients) != int(clients):
        return (f"{clients:g} clients per replica is not whole: the wave model needs whole clients per replica, so "
                f"arrivals are treated as random")
    return None


def _first_wave_note(dep: Deployment, r: "_Replica", mix: Mix, clients: float, think_time: float, run: float) -> str:
    """With a think time, the clients' first prompts still leave at once (t = 0): the first wave's mean TTFT
    (closed_loop.py), which a run of ``run`` prompts adds to its mean and this steady state leaves out."""
    if think_time <= 0 or _wave_reason(dep, mix, clients, 0.0) is not None:
        return ""
    i, o = int(mix.inputs[0]), int(mix.outputs[0])
    m = min(int(clients), int(r.rt.max_num_seqs * dep.par.attention_groups), max(int(run / dep.par.replicas), 1))
    first = float(ClosedLoop(r.sm, r.rt, i, o).first(m)[0].mean())
    return (f"; the first {m} prompts per replica still leave at once and queue as a wave (mean TTFT "
            f"{first * 1e3:,.0f} ms, closed_loop.py), which adds (that − TTFT)·{m}/{run / dep.par.replicas:,.0f} "
            f"to a run's mean TTFT and is left out here")


def default_requests() -> int:
    """The run's prompts when none are given: data/closed_loop.yaml (vllm bench serve's --num-prompts)."""
    return int(data_yaml("closed_loop.yaml")["num_prompts"]["value"])


def _from_waves(dep: Deployment, r: "_Replica", mix: Mix, concurrency: int, requests: float,
                notes: list) -> ServingEstimate:
    """The ServingEstimate of back-to-back clients in waves (closed_loop.py), per replica scaled to the whole."""
    reps, rt = dep.par.replicas, dep.runtime
    i, o = int(mix.inputs[0]), int(mix.outputs[0])
    wv: Waves = ClosedLoop(r.sm, rt, i, o).waves(int(concurrency // reps), requests / reps)
    g, n_groups, rest = wv.groups
    how = {"waves": f"then {n_groups} group(s) of {g} (last {rest}) per cycle of {o} steps",
           "waves (prefill-first)": "every wave alike (prefill-first steps)",
           "one prompt at a time": "then one prompt at a time, chunked over its steps",
           "every step carries prompts": "then every step carries prompts"}.get(wv.regime,
                                                                                 "then every step full (budget-bound)")
    notes.insert(0, f"closed loop, back-to-back clients, fixed lengths: prompts in waves (the first {wv.running} "
                    f"queue behind the {r.rt.token_budget * dep.par.attention_groups}-token budget over "
                    f"{wv.first_steps} steps, mean TTFT {wv.ttft_first * 1e3:,.0f} ms; {how}, TTFT "
                    f"{wv.ttft_steady * 1e3:,.0f} ms); means over a run of {requests:,.0f} prompts = {wv.waves:.3g} "
                    f"waves (closed_loop.py)")
    notes.extend(wv.notes)
    vals, weights = [v for v, _ in wv.ttft_values], [w for _, w in wv.ttft_values]
    x = wv.requests_per_s
    out_tok_s = x * o * reps
    dps = dollars_per_second(dep.gpu, dep.num_gpus)
    e2e = [v + (o - 1) * wv.tpot for v in vals]
    return ServingEstimate(
        model=dep.model.name, gpu=dep.gpu.id, num_gpus=dep.num_gpus, replicas=reps, mode="concurrency",
        request_rate=None, concurrency=concurrency, think_time_s=0.0, lengths=describe(mix), input_len=float(i),
        output_len=float(o), in_service=float(wv.running), queued=float(wv.queued),
        decode_batch=wv.running * (o - 1) / o, busy_share=1.0, step_time_s=wv.tpot, ttft_s=_stats(vals, weights),
        itl_s=wv.tpot, tpot_s=wv.tpot, e2e_s=_stats(e2e, weights), queue_wait_s=wv.queue_wait,
        output_tok_s=out_tok_s, output_tok_s_per_gpu=out_tok_s / dep.num_gpus, tok_s_per_user=1.0 / wv.tpot,
        requests_per_s=x * reps, littles_law=x * wv.e2e / (concurrency / reps), limited_by=wv.limited_by,
        bound=phase(wv.decode_cost, "").bound, power_per_gpu_w=wv.watts,
        joules_per_output_token=wv.watts * dep.num_gpus / out_tok_s,
        usd_per_million_output_tokens=per_million(dps, out_tok_s), kv_capacity_bytes_per_gpu=r.capacity,
        engine_settings=rt.describe(), notes=notes, error_bands=error_bands(dep, "serving"),
        percentiles="over the prompts' places in the waves (first wave and later ones, weighted by the run's waves)",
        wave_step={"split_s": wv.split_s, "communication_s": wv.comm_s, "prefill_step_share": wv.prefill_step_share})


def serving(deployment: Deployment | None = None, rate: float | None = None, concurrency: int | None = None,
            think_time: float = 0.0, input_len: float = 1024, output_len: float = 256, lengths: Mix | None = None,
            requests: int | None = None, images: int = 0, operating_band: bool = True,
            **deployment_kwargs) -> ServingEstimate:
    """The steady state of serving at ``rate`` requests/s (open loop) or ``concurrency`` clients (closed
    loop) on the deployment's engine (module docstring). ``lengths``: a length mix in place of fixed
    ``input_len``/``output_len``. ``requests``: the closed loop's run of prompts (``vllm bench serve
    --num-prompts``; default data/closed_loop.yaml), whose first wave its means include. ``images``: images
    per request of a multimodal checkpoint (workloads/images.py): ``input_len`` of the result is text + image
    tokens. ``operating_band``: open loop, carry the latency bands through the capacity band (the same
    estimate re-priced at rate/(1 ± b): deploy/operating_band.py); False prices the rate alone."""
    dep = deployment or make_deployment(**deployment_kwargs)
    if (rate is None) == (concurrency is None):
        raise ValueError("give exactly one of rate (requests/s, open loop) or concurrency (clients, closed loop)")
    if rate is not None and not (np.isfinite(rate) and rate > 0):
        raise ValueError(f"rate={rate} must be a positive, finite number of requests/s (an offline run: "
                         f"--scenario max-throughput)")
    if concurrency is not None and (int(concurrency) != concurrency or concurrency < 1):
        raise ValueError(f"concurrency={concurrency} must be an integer >= 1")
    if not (np.isfinite(think_time) and think_time >= 0):
        raise ValueError(f"think_time={think_time} must be a number of seconds >= 0")
    if requests is not None and (isinstance(requests, bool) or int(requests) != requests or requests < 1):
        raise ValueError(f"requests={requests!r} must be an integer >= 1 (the closed loop's number of prompts)")
    mix = lengths if lengths is not None else steady_state.as_mix(input_len, output_len)
    text_input, mix = mix.mean_input, with_images(dep.model, mix, images)
    reps = dep.par.replicas
    closed = concurrency is not None
    clients = concurrency / reps if closed else 0.0
    r = _Replica(dep, mix, closed, clients, think_time)
    notes = list(mix.notes) + list(dep.warnings) + images_notes(dep, mix, text_input)
    if closed:
        why = _wave_reason(dep, mix, clients, think_time)
        run = float(requests or default_requests())
        if why is None:
            return streaming.apply(_from_waves(dep, r, mix, int(concurrency), run, notes), dep.runtime,
                                   mix.outputs, mix.weights)  # what a client sees under a stream interval
        notes.insert(0, why + _first_wave_note(dep, r, mix, clients, think_time, run))
    rt = dep.runtime

    def recv_of(p):  # the wait for SGLang's next receive (workloads/recv.py); one client lands on an idle engine
        return receive_wait(rt, p["t"], 1.0 if closed else p["b"]) if (not closed or clients > 1) else 0.0
    recv_on = rt.recv_interval > 1
    if closed and think_time == 0 and not recv_on:  # every client is in service (or queued past the caps)
        point, capped = r.point(min(clients, r.c_max)), clients > r.c_max
    elif closed:  # a client thinking (or waiting for the scheduler's receive) is not in service
        point, capped = r.solve(lambda p: clients * p["mean_e2e"] / (p["mean_e2e"] + think_time + recv_of(p)))
    if closed:
        x = point["c"] / point["mean_e2e"]  # requests/s per replica
        wait = max(clients / x - think_time - recv_of(point) - point["mean_e2e"], 0.0) if capped else 0.0
    else:
        lam = rate / reps
        point, capped = r.solve(lambda p: lam * p["mean_e2e"])
        if capped:
            x_max = point["c"] / point["mean_e2e"] * reps
            raise Overload(f"rate={rate:g} req/s overloads {dep.label()}: it serves at most {x_max:.3g} req/s "
                             f"({min(r.caps, key=r.caps.get)} holds {_count(r.c_max)} requests per replica); allowed: "
                             f"rate < {x_max:.3g}, or more replicas")
        x, wait = lam, 0.0
    recv = recv_of(point)
    if recv:
        notes.append(f"scheduler recv interval {rt.recv_interval}: a request waits {recv * 1e3:,.1f} ms on average for "
                     f"the scheduler's next receive, (k − 1)/2 decode steps of {point['t'] * 1e3:,.2f} ms "
                     f"(workloads/recv.py)")
    ttft = [a + wait + recv for a in point["ttft"]]
    e2e = [a + wait + recv for a in point["e2e"]]
    mean_e2e = float(np.dot(mix.weights, e2e))
    in_system = clients if closed else x * mean_e2e
    b, t = point["b"], point["t"]
    step_w = float(power_w(dep.gpu, dep.compute_dtype, point["flops"], point["bytes"], t))
    watts = b * step_w + (1 - b) * dep.gpu.power.idle_w
    out_tok_s = x * mix.mean_output * reps
    dps = dollars_per_second(dep.gpu, dep.num_gpus)
    if capped:
        notes.append(f"{min(r.caps, key=r.caps.get)} holds {_count(r.c_max)} requests per replica: the other "
                     f"{clients - point['c']:.0f} clients wait {wait * 1e3:,.0f} ms in the queue")
    if point["u"] >= steady_state.MAX_PREFILL_UTILIZATION:
        notes.append(f"prefill work arrives at {point['u']:.2f} of what one prompt at a time can take; the "
                     f"prefill queue is modelled at utilization {steady_state.MAX_PREFILL_UTILIZATION}")
    est = ServingEstimate(
        model=dep.model.name, gpu=dep.gpu.id, num_gpus=dep.num_gpus, replicas=reps,
        mode="concurrency" if closed else "rate", request_rate=None if closed else rate,
        concurrency=concurrency, think_time_s=think_time, lengths=describe(mix), input_len=mix.mean_input,
        output_len=mix.mean_output, in_service=point["c"], queued=(clients - point["c"]) if capped else 0.0,
        decode_batch=point["d"], busy_share=b, step_time_s=t, ttft_s=_stats(ttft, mix.weights),
        itl_s=multistep.chunk_gap(t, dep.runtime), tpot_s=t + multistep.tail(t, dep.runtime) / max(mix.mean_output - 1, 1),
        e2e_s=_stats(e2e, mix.weights), queue_wait_s=wait, output_tok_s=out_tok_s,
        output_tok_s_per_gpu=out_tok_s / dep.num_gpus, tok_s_per_user=1.0 / t, requests_per_s=x * reps,
        littles_law=x * (mean_e2e + think_time) / in_system if in_system else 1.0,
        limited_by=min(r.caps, key=r.caps.get) if capped else "none", bound=phase(point["cost"], "").bound,
        power_per_gpu_w=watts, joules_per_output_token=watts * dep.num_gpus / out_tok_s,
        usd_per_million_output_tokens=per_million(dps, out_tok_s), kv_capacity_bytes_per_gpu=r.capacity,
        engine_settings=dep.runtime.describe(), notes=notes, error_bands=error_bands(dep, "serving"))
    est = streaming.apply(est, dep.runtime, mix.outputs, mix.weights)  # a stream interval's chunks
    if operating_band:
        est.error_bands = estimate_bands(est, lambda r_: serving(
            dep, rate=r_, think_time=think_time, input_len=input_len, output_len=output_len, lengths=lengths,
            requests=requests, images=images, operating_band=False))
        unbounded = [f.upper() for f, v in est.error_bands.items() if v is not None and not np.isfinite(v)]
        if unbounded:
            est.notes.append(f"{', '.join(unbounded)}: {UNBOUNDED} (rate {rate:g} req/s reaches the capacity at "
                             f"its low end, -{est.error_bands['throughput']:.0%}: deploy/operating_band.py)")
    return est
