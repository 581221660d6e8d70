"""The autoscaler: every ``interval`` seconds, each pool's replica count from one metric, as the Kubernetes
Horizontal Pod Autoscaler computes it (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/,
"Algorithm details"; defaults in data/fleet.yaml ``autoscale``, each cited there):

    desired = ceil(current · metric / target)      unchanged while |metric / target − 1| <= tolerance

``current`` counts the pool's replicas that are ready or starting (not draining). Metrics, over the pool's
ready replicas:

- ``concurrency`` = mean requests in flight per replica (running + waiting, the engine's
  ``vllm:num_requests_running + vllm:num_requests_waiting``): what the autoscalers of LLM serving scale on.
  KServe/Knative ``scaleMetric: concurrency`` with ``scaleTarget`` = in-flight requests per replica
  (https://kserve.github.io/website/0.15/modelserving/autoscaling/autoscaling/; Knative's KPA: "setting
  the target annotation to 50 will configure the autoscaler to scale the application so that each instance
  of it will handle 50 requests at a time",
  https://docs.redhat.com/en/documentation/openshift_container_platform/4.1/html/serverless_applications/configuring-knative-serving-autoscaling),
  llm-d's HPA guide on the gateway's running requests and queue size
  (https://llm-d.ai/docs/guide/Installation/workload-autoscaling/hpa-igw). It does not read 0 while
  requests are served, so a pool that is big enough is held near L / target replicas (Little's law:
  L = arrival rate x time in system), not sent to ``min``;
- ``queue`` = mean waiting requests per replica. It reads 0 whenever capacity suffices, so under the
  proportional rule desired = ceil(current · 0 / target) -> ``min`` after the stabilization window, and the
  queue rebuilds: a scale-up signal only (docs/fleet.md shows the flapping it causes);
- ``kv`` = mean KV-cache use (0..1); ``ttft`` = p99 TTFT (ms) of the first tokens of the last interval (no
  first token: no change).

A pool of 0 replicas with any metric above 0 goes to 1 (the ratio has no current to scale).

Behaviour (autoscaling/v2 HPAScalingRules defaults): scale-up takes effect at once, at most
max(scale_up_max_factor · current, current + scale_up_max_pods) replicas; scale-down applies the highest
recommendation of the last scale_down_stabilization_s seconds. The result is kept within [min, max] of the
fleet file (the bounds the user sets, as HPA's minReplicas/maxReplicas).

Scale-up pays the startup: a new replica is provisioned (and billed) at the decision and routable
``startup`` seconds later (the fleet file's, else fleet/startup.py from the weights' size and a cited
bandwidth). Scale-down drains: the replica leaves the router at once and finishes what it holds; it is
billed until its last request finishes. The replicas removed are those starting first, then the most
recently ready (the order of Kubernetes' ReplicaSet downscale: not-ready pods first, then the newest).
"""
from __future__ import annotations

import math
from collections import deque

import numpy as np

from ..base.datafiles import data_yaml
from .spec import Autoscale


def defaults() -> dict:
    return data_yaml("fleet.yaml")["autoscale"]


def metric_value(metric: str, states: list[tuple]) -> float | None:
    """The pool's metric from its ready replicas' (outstanding, waiting, kv, [TTFT s]) states (module docstring)."""
    if not states:
        return None
    if metric == "concurrency":
        return float(np.mean([s[0] for s in states]))
    if metric == "queue":
        return float(np.mean([s[1] for s in states]))
    if metric == "kv":
        return float(np.mean([s[2] for s in states]))
    ttft = [x for s in states for x in s[3]]
    return float(np.percentile(np.asarray(ttft) * 1e3, 99)) if ttft else None


class Scaler:
    """One pool's autoscaler state: its recommendations of the stabilization window."""

    def __init__(self, conf: Autoscale):
        d = defaults()
        self.conf = conf
        self.interval = float(conf.interval if conf.interval is not None else d["interval_s"])
        self.tolerance = float(d["tolerance"])
        self.up_factor, self.up_pods = float(d["scale_up_max_factor"]), int(d["scale_up_max_pods"])
        self.down_window = float(d["scale_down_stabilization_s"])
        self.history: deque[tuple[float, int]] = deque()

    def desired(self, t: float, current: int, value: float | None) -> int:
        """The replica count to have after the decision at ``t`` (module docstring)."""
        c = self.conf
        if value is None:
            raw = current
        elif current == 0:
            raw = 1 if value > 0 else 0
        else:
            ratio = value / c.target
            raw = current if abs(ratio - 1.0) <= self.tolerance else math.ceil(current * ratio)
        self.history.append((t, raw))
        while self.history and self.history[0][0] < t - self.down_window:
            self.history.popleft()
        if raw > current:
            new = min(raw, max(math.ceil(current * self.up_factor), current + self.up_pods))
        else:
            new = min(current, max(h for _, h in self.history))
        return int(min(max(new, c.min), c.max))
