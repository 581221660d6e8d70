"""Price operators from the measured kernel curves (inferbound.pricing.kernels) of one GPU under one engine.

An operator that states its kernel shape (operators/op.py: GEMMs, the fused MoE layer, attention, host
work) on a GPU with curves (kernels.curves_for; ``efficiency.kernel_curves``) is priced by the curve of
the engine's backend (engines.yaml ``pricing.kernel_curves``) at the op's kernel dtype. A curve gives
a compute side t_c, a memory side t_m (activation-quantization pass included) and a fixed cost o with
t = o + smooth_max(t_c, t_m) (kernels/gemm.py, moe.py, attention.py, loadattention.py). The op keeps
the roofline's bound label and split:

    compute-bound (t_c >= t_m):  compute seconds = t − o,  memory seconds = 0
    memory-bound:                memory seconds  = t − o,  compute seconds = 0;   overhead = o

which is max(F/(P·e_c), B/(W·e_m)) + o with e_c = F/(P·(t − o)) on the binding side and the curve's own
side elsewhere (kernels.gemm.roofline_fractions), F and B the op's FLOPs and bytes. An op of several
kernels (a gate+up and a down projection; MoE's two grouped GEMMs plus routing; attention's decode and
prefill kernels) sums them. Peaks are the GPU's (the catalog's, or a user's override): curve
efficiencies are fractions of datasheet peaks. Calibration residual factors multiply a whole kernel
class: the engine profile's (``Calibration.engines[key]``: gemm, moe, attention; an engine version's
kernels against the measured ones), else the global ``Calibration.kernel_factors``. No curve for the
GPU, class or dtype:
the op falls back to the scalar roofline (roofline.py), and so do norms, elementwise and embeddings.

Kernel dtype of a GEMM (kernels.kernel_dtype): the stored weight format of its component against the
activation dtype it runs at; fp8 weights with block scales (bits > 8, DeepSeek's 128×128) are fp8_block;
fp4 weights at 4.25 bits are MXFP4 (weight-only with 16-bit activations: mxfp4_wo), at 4.5 NVFP4;
fp8 weights with 16-bit activations run weight-only like int8 (FP8 Marlin: int8_wo curve); MXFP4 experts
run the kernel the engine picks on fp4-capable GPUs (engines.yaml ``pricing.mxfp4_moe_activation``:
TensorRT-LLM quantizes the activations to MXFP8 on Blackwell, mxfp4_fp8). Per-tensor
fp8 runs with static (calibrated) activation scales when the checkpoint ships them or TensorRT-LLM
calibrates at build, so it pays no dynamic-quantization pass (kernels.yaml quant_bytes set to 0).

Host work: an op ``host`` per step costs h·(step_s + seq_s·sequences) (engines.yaml ``pricing.host`` per
profile, or the calibration's fitted ``engines``; h the machine's ``efficiency.host_factor``), priced as
overhead.
"""
from __future__ import annotations

import numpy as np

from . import kernels as K
from ..base.datafiles import data_yaml
from ..base.numeric import fast_ndim
from ..deploy.engines import version_tuple
from .kernels import gemm as _gemm
from .kernels import loadattention as LA
from .kernels.moe import expert_load

CLASSES = ("gemm", "moe", "attention", "collective")


def pricing_data() -> dict:
    return data_yaml("engines.yaml").get("pricing", {})


def _value(v):
    return v.get("value") if isinstance(v, dict) else v


def curve_engine(engine_key: str) -> str:
    """The backend whose measured kernels price an engine profile (``name@version`` or ``name``)."""
    name = engine_key.split("@", 1)[0]
    table = pricing_data().get("kernel_curves", {})
    return str(_value(table.get(name, "trtllm")))


def vendor_kernels(engine_key: str, vendor: str) -> dict:
    """{kernel class: curve engine} for a profile (``name@version``) on a vendor's GPUs where the engine runs
    another kernel than its template curves measured (engines.yaml ``pricing.vendor_kernels``, by engine name,
    an entry's ``min_version`` against the profile's version); {} elsewhere."""
    name, _, version = engine_key.partition("@")
    table = ((pricing_data().get("vendor_kernels") or {}).get(name) or {}).get(vendor) or {}
    out = {}
    for cls, v in table.items():
        low = v.get("min_version") if isinstance(v, dict) else None
        if low is None or (version and version_tuple(version) >= version_tuple(str(low))):
            out[cls] = str(_value(v))
    return out


def host_cost(engine_key: str, calibration=None) -> tuple[float, float]:
    """(seconds per step, seconds per sequence) of an engine's host work: the calibration's fit for that
    profile, else engines.yaml ``pricing.host`` (profile, then engine name, then ``default``)."""
    if calibration is not None:
        fitted = calibration.engines.get(engine_key) or calibration.engines.get(engine_key.split("@", 1)[0])
        if fitted:
            return float(fitted["step_s"]), float(fitted["seq_s"])
    table = pricing_data().get("host", {})
    e = table.get(engine_key) or table.get(engine_key.split("@", 1)[0]) or table["default"]
    return float(_value(e["step_s"])), float(_value(e["seq_s"]))


def gemm_kernel_dtype(shape: dict, act: str, engine: str) -> tuple[str | None, bool]:
    """(kernel dtype, static activation scales) of a GEMM op's shape at activation dtype ``act``; None
    where no kernel dtype fits (the op is then priced by the roofline). 16-bit weights (LM head, router,
    unquantized components) run 16-bit GEMMs whatever the activation format."""
    w, bits = shape["weight"], shape.get("bits")
    if w in ("bf16", "fp16", "fp32"):
        return "bf16", False
    if act in ("bf16", "fp16", "fp32"):
        return {"fp8": "int8_wo", "fp4": "mxfp4_wo", "int8": "int8_wo", "int4": "int4_wo"}.get(w), False
    if w == "fp8" and act == "fp8":
        if bits is not None and bits > 8.0 + 1e-6:
            return "fp8_block", False
        return "fp8", bool(shape.get("checkpoint")) or engine == "trtllm"
    try:
        return K.kernel_dtype(w, act), False
    except ValueError:
        return None, False


def binding_side(kern, t_c, t_m, xp=np, cb=None):
    """(reported t_compute, reported t_memory, compute s, memory s) of a kernel of ``kern`` seconds: the
    seconds go to the binding side (``cb``: compute-bound, default t_c >= t_m; module docstring), whose
    reported time becomes ``kern``; the other side keeps its own. ``xp``: np, or loadattention.SCALAR."""
    cb = t_c >= t_m if cb is None else cb
    return xp.where(cb, kern, t_c), xp.where(cb, t_m, kern), xp.where(cb, kern, 0.0), xp.where(cb, 0.0, kern)


class KernelPricer:
    """Curve pricing of one GPU under one engine profile (module docstring)."""

    def __init__(self, gpu, engine_key: str, calibration=None):
        self.gpu = gpu
        self.engine_key = engine_key
        self.engine = curve_engine(engine_key)
        self.class_engine = vendor_kernels(engine_key, gpu.vendor)  # e.g. SGLang's aiter MLA decode on AMD
        # a what-if GPU (hardware/whatif.py) keeps its base's curves: fractions of its scaled peaks
        self.curves = K.curves_for(gpu.derived_from or gpu.id) if gpu.efficiency.kernel_curves else None
        glob = calibration.kernel_factors if calibration is not None else {}
        mine = (calibration.engines.get(engine_key) or {}) if calibration is not None else {}
        self.factors = {c: float(mine.get(c, glob.get(c, 1.0))) for c in CLASSES}
        step_s, seq_s = host_cost(engine_key, calibration)
        self.host = (step_s * gpu.efficiency.host_factor, seq_s * gpu.efficiency.host_factor)
        self.skew = float(gpu.efficiency.moe_routing_skew)
        self.spread = float(gpu.efficiency.gemm_spread)
        self.bw = float(gpu.hbm_bw)
        self._params: dict = {}
        self._memo: dict = {}

    @property
    def extrapolated(self) -> bool:
        return self.curves is None or bool(self.curves.extrapolated)

    def peak(self, dtype: str) -> float:
        pk = self.gpu.peak_flops
        v = pk.get(dtype) or (pk.get("fp16") if dtype == "bf16" else None) or pk.get("bf16")
        return float(v)

    def params(self, cls: str, dtype: str | None, static: bool = False) -> dict | None:
        """The curve's parameters (None: no curve of that class and dtype for this GPU); memoized."""
        key = (cls, dtype, static)
        if key not in self._params:
            p = None
            if self.curves is not None and dtype is not None:
                try:
                    p = self.curves.curve(cls, dtype, self.class_engine.get(cls, self.engine))
                except ValueError:
                    p = None
            if p is not None and static:
                p = dict(p, quant_bytes=0.0)
            self._params[key] = p
        return self._params[key]

    def moe_params(self, sh: dict, compute_dtype: str) -> dict | None:
        """The fused-MoE curve of the engine's own backend; where that backend's MoE kernels were not
        measured (another backend's fused MoE is a different kernel: Triton against CUTLASS, 4x apart on
        A100), the engine's dense GEMM curve as a grouped GEMM with no routing cost (o_moe = c_slot = 0)."""
        kdt, static = gemm_kernel_dtype(sh, compute_dtype, self.engine)
        if kdt == "mxfp4_wo" and self.gpu.supports("fp4"):  # engines.yaml pricing.mxfp4_moe_activation
            rule = (pricing_data().get("mxfp4_moe_activation") or {}).get(self.engine) or {}
            if rule.get("fp4_gpus") == "fp8" and self.params("moe", "mxfp4_fp8") is not None:
                kdt = "mxfp4_fp8"
        p = self.params("moe", kdt, static)
        if p is not None and p.get("engine") == self.engine:
            return p
        g = self.params("gemm", kdt, static)
        if g is None:
            return p
        key = ("moe-from-gemm", kdt, static)
        if key not in self._params:
            self._params[key] = dict(g, o_moe=0.0, c_slot=0.0)
        return self._params[key]

    def covers(self, ops, compute_dtype: str) -> set:
        """Indices of the GEMM and MoE ops of ``ops`` this pricer prices from curves."""
        out = set()
        for i, op in enumerate(ops):
            sh = op.shape
            if sh is not None and "gemm" in sh:
                kdt, static = gemm_kernel_dtype(sh, compute_dtype, self.engine)
                if self.params("gemm", kdt, static) is not None:
                    out.add(i)
            elif sh is not None and "moe" in sh and self.moe_params(sh, compute_dtype) is not None:
                out.add(i)
        return out

    # -- pricing -----------------------------------------------------------------------------------
    def price(self, ops, compute_dtype: str, att_dtype: str) -> dict:
        """{index in ``ops``: (t_compute, t_memory, compute s, memory s, overhead s)} per instance, for the
        ops this pricer covers (the rest: roofline). GEMMs of one kernel dtype are priced in one call."""
        out: dict = {}
        batches: dict = {}
        for i, op in enumerate(ops):
            sh = op.shape
            if sh is None:
                continue
            if "host" in sh:
                s = np.asarray(sh["host"], dtype=float)
                t = self.host[0] + self.host[1] * s
                out[i] = (0.0, 0.0, 0.0, 0.0, t)
            elif "gemm" in sh:
                kdt, static = gemm_kernel_dtype(sh, compute_dtype, self.engine)
                p = self.params("gemm", kdt, static)
                if p is not None:
                    batches.setdefault((kdt, static), []).append(i)
            elif "moe" in sh:
                p = self.moe_params(sh, compute_dtype)
                if p is not None:
                    out[i] = self._moe(p, sh["moe"])
            elif "attention" in sh:
                r = self._attention(sh, att_dtype)
                if r is not None:
                    out[i] = r
        for (kdt, static), idx in batches.items():
            out.update(self._gemms(self.params("gemm", kdt, static), [ops[i] for i in idx], idx))
        return out

    def _gemm_parts(self, p, m, n, k, groups=1.0):
        t, t_c, t_m = _gemm.gemm_time(p, self.curves.sm_count, self.peak(p.get("peak", "bf16")), self.bw, m, n, k,
                                      groups, self.spread)
        return t, t_c, t_m, p["overhead_s"]

    def _gemms(self, p: dict, ops: list, idx: list) -> dict:
        """One call for every GEMM of one curve; memoized for scalar row counts (a static batch's decode
        steps, a sweep's repeated shapes)."""
        if all(fast_ndim(op.shape["m"]) == 0 for op in ops):
            key = (id(p), tuple((float(op.shape["m"]), op.shape["gemm"]) for op in ops))
            hit = self._memo.get(key)
            if hit is None:
                hit = self._memo[key] = self._gemms_now(p, ops)
                if len(self._memo) > 4096:
                    self._memo.clear()
            return dict(zip(idx, hit))
        return dict(zip(idx, self._gemms_now(p, ops)))

    def _gemms_now(self, p: dict, ops: list) -> list:
        subs = [(j, op.shape["m"], n, k) for j, op in enumerate(ops) for n, k in op.shape["gemm"]]
        shape = np.broadcast_shapes(*(np.shape(m) for _, m, _, _ in subs))
        tail = (1,) * len(shape)
        m = np.array([float(x) for _, x, _, _ in subs]) if not shape else \
            np.stack([np.broadcast_to(np.asarray(x, dtype=float), shape) for _, x, _, _ in subs])
        n = np.array([x for _, _, x, _ in subs]).reshape((-1,) + tail)
        k = np.array([x for _, _, _, x in subs]).reshape((-1,) + tail)
        t, t_c, t_m, o = self._gemm_parts(p, m, n, k)
        f = self.factors["gemm"]
        kern = (t - o) * f
        rep_c, rep_m, comp, mem = binding_side(kern, t_c * f, t_m * f, cb=t_c >= t_m)
        if not shape:  # scalar row counts: sum per op in Python (no small-array reductions)
            cols = [a.tolist() for a in (rep_c, rep_m, comp, mem)]
        out, start = [], 0
        for op in ops:
            end = start + len(op.shape["gemm"])
            if not shape:
                parts = tuple(sum(c[start:end]) for c in cols)
            else:
                sl = slice(start, end)
                parts = tuple(a[sl].sum(axis=0) for a in (rep_c, rep_m, comp, mem))
            out.append(parts + (o * f * (end - start),))
            start = end
        return out

    def _moe(self, p: dict, s: dict):
        """Fused MoE layer (kernels/moe.py) on the busiest GPU: its tokens times the EP imbalance, the
        grouped GEMMs times the routing skew; routing and permutation counted as memory time."""
        tokens = np.asarray(s["tokens"], dtype=float)
        # a served batch routes each token on its own: E·(1 − (1 − k/E)^T) distinct experts (kernels/moe.py),
        # the operator's weight bytes; the curves' parameters were fitted on balanced routing
        active, m, slots = expert_load(tokens * s["imbalance"], s["topk"], s["experts"], s["ep"], "uniform")
        inter = s["inter"] / s["tp"]
        g = 2.0 if s["gated"] else 1.0
        parts = [self._gemm_parts(p, m, g * inter, s["hidden"], active),
                 self._gemm_parts(p, m, s["hidden"], inter, active)]
        f = self.factors["moe"]
        rep_c = rep_m = comp = mem = 0.0
        over = p["o_moe"]
        for t, t_c, t_m, o in parts:
            c1, m1, c2, m2 = binding_side((t - o) * self.skew, t_c, t_m)
            rep_c, rep_m, comp, mem = rep_c + c1, rep_m + m1, comp + c2, mem + m2
            over = over + o
        # routing and permutation of the tokens this GPU holds (operators/layers.py "routed_share": its own
        # T = T_moe/groups under attention data parallel, all T_moe tokens otherwise), and of the slots it receives
        routed = tokens * s.get("routed_share", 1.0)
        route = p.get("c_slot", 0.0) * routed * s["topk"] + (routed * s["hidden"] * 2.0 + slots * s["hidden"] * 4.0) / (
            self.bw * p["e_m"])
        return rep_c * f, (rep_m + route) * f, comp * f, (mem + route) * f, over * f

    def attention_curves(self, sh: dict, att_dtype: str):
        """(decode params, prefill params) of an attention op's shape, or None without both curves."""
        a = sh["attention"]
        kv = "fp8" if a["kv_dtype"] in ("fp8", "fp4", "int8") else "bf16"
        if a["mla"]:
            pd, pp = self.params("mla_decode", kv), self.params("mla_prefill", kv)
        else:
            pd = self.params("attention_decode", kv)
            pp = self.params("attention_prefill", "fp8" if att_dtype == "fp8" else "bf16")
        return None if pd is None or pp is None else (pd, pp)

    def _attention(self, sh: dict, att_dtype: str):
        a = sh["attention"]
        curves = self.attention_curves(sh, att_dtype)
        if curves is None:
            return None
        pd, pp = curves
        load = sh["load"]  # (decode pairs, prefill pairs, cached, tokens, sampled[, verify's extra queries])
        if all(fast_ndim(x) == 0 for x in load):  # one step: plain floats (same formulas, no numpy overhead)
            vals = [float(x) for x in load]
            return attention_time(self, pd, pp, a, *vals[:5], att_dtype, LA.SCALAR, *vals[5:])
        vals = [np.asarray(x, dtype=float) for x in load]
        return attention_time(self, pd, pp, a, *vals[:5], att_dtype, np, *vals[5:])


def attention_time(pr: KernelPricer, pd: dict, pp: dict, a: dict, dec_pairs, pre_pairs, cached, tokens, sampled,
                   att_dtype: str, xp, extra=0.0):
    """(t_compute, t_memory, compute s, memory s, overhead s) of one attention op (loadattention.py), in the
    namespace ``xp`` (np for arrays, loadattention.SCALAR for floats); ``extra``: the decodes' query tokens
    beyond one per sequence (a speculative verify pass: loadattention.verify_part)."""
    return attention_of(attention_consts(pr, pd, pp, a, att_dtype), dec_pairs, pre_pairs, cached, tokens, sampled, xp,
                        extra)


def attention_consts(pr: KernelPricer, pd: dict, pp: dict, a: dict, att_dtype: str) -> tuple:
    """What :func:`attention_of` needs of one attention op besides its load: the decode and prefill kernels'
    constant arguments (curve, peak, bandwidth, heads, head dims, cache bytes) and the calibration factor.
    The simulator binds them once per op (step/table_scalar.ScalarSteps._scalar_tables, attention_scalar.py)."""
    h, hk = a["heads"], a["kv_heads"]
    (dq_d, dv_d), (dq_p, dv_p) = a["d_dec"], a["d_pre"]
    if a["mla"]:  # the measured MLA kernels' geometry; prefill expanded (every head its K and V)
        dq_d, dv_d, dq_p, dv_p, hk_p = (K.MLA_DIMS["d_latent"], K.MLA_DIMS["d_v_latent"], K.MLA_DIMS["d_qk_prefill"],
                                        K.MLA_DIMS["d_v_prefill"], h)
    else:
        hk_p = hk
    kv_elem = 1.0 if a["kv_dtype"] in ("fp8", "int8") else (0.5 if a["kv_dtype"] == "fp4" else 2.0)
    dec = (pd, pr.peak("bf16"), pr.bw, h, hk, dq_d, dv_d, a["token_bytes"], a["mla"])
    pre = (pp, pr.peak("fp8" if att_dtype == "fp8" else "bf16"), pr.bw, pr.curves.sm_count, h, hk_p, dq_p, dv_p,
           a["token_bytes"], kv_elem, pr.spread)
    return dec, pre, pr.factors["attention"], a["window"] == 0.0


_NONE = (0.0, 0.0, 0.0, 0.0)


def attention_of(consts: tuple, dec_pairs, pre_pairs, cached, tokens, sampled, xp, extra=0.0):
    """attention_time of an op whose constants are ``consts`` (attention_consts). ``extra`` > 0: the decodes
    are a verify pass of 1 + extra/D query tokens each, priced by the decode kernel reading each sequence's
    KV once (loadattention.verify_part), D = min(S, T) − extra."""
    (pd, peak_d, bw, h, hk, dq_d, dv_d, tb, mla), (pp, peak_p, bw_p, sms, h_p, hk_p, dq_p, dv_p, tb_p, kv_elem,
                                                   spread), f = consts[:3]
    scalar = xp is LA.SCALAR  # plain floats: a part without work is skipped, not computed and masked
    if (extra > 0) if scalar else bool(np.any(np.asarray(extra) > 0)):
        full = consts[3] if len(consts) > 3 else True
        dec = xp.where(dec_pairs > 0, xp.maximum(xp.minimum(sampled, tokens) - extra, 1e-12), 0.0)
        *d, reads = LA.verify_part(pd, peak_d, bw, h, hk, dq_d, dv_d, tb, dec_pairs, dec, extra, full, mla, xp)
        q = xp.where(pre_pairs > 0, xp.maximum(tokens - dec - extra, 1.0), 0.0)
        past = xp.maximum(cached - reads - q, 0.0)
    else:
        dec, q, past = LA.split_load(dec_pairs, pre_pairs, cached, tokens, sampled, xp)
        d = _NONE if scalar and dec_pairs <= 0 else \
            LA.decode_part(pd, peak_d, bw, h, hk, dq_d, dv_d, tb, dec_pairs, dec, mla, xp)
    p = _NONE if scalar and pre_pairs <= 0 else \
        LA.prefill_part(pp, peak_p, bw_p, sms, h_p, hk_p, dq_p, dv_p, tb_p, kv_elem, pre_pairs, q, past, xp, spread)
    rep_c = rep_m = comp = mem = 0.0
    for part in (d, p):
        if part is _NONE:  # adds nothing
            continue
        c1, m1, c2, m2 = binding_side(part[2], part[0], part[1], xp)
        rep_c, rep_m, comp, mem = rep_c + c1, rep_m + m1, comp + c2, mem + m2
    return rep_c * f, rep_m * f, comp * f, mem * f, (d[3] + p[3]) * f
