"""The operators of a multimodal checkpoint's towers (model/towers.py) for the images of one prefill step,
per GPU of a TP group of t, in the order the engine runs them (the encoder before the language model's
prefill, in the same step):

- ``vision_linear`` (gemm): FLOPs I·(F − F_att)/t, with F the tower's ``flops_per_image`` (patch
  embedding, the encoder's linear layers, the projector: 2·params·rows) and F_att its attention part;
  weights read once, ``tower_bytes_per_gpu``; activations I·N·L·(8d + 2ff)·b/t (each layer's qkv, out,
  fc1 and fc2 GEMMs read their input and write their output: d + 3d, d + d, d + ff, ff + d values per
  position);
- ``vision_attention`` (attention): FLOPs I·F_att/t, activations I·N·L·4D·b/t (q, k, v read, the output
  written);
- ``vision_all_reduce``: 2 per encoder layer (after the out and fc2 row-parallel GEMMs) of I·N·d·b bytes
  over the TP group, where the tower is TP-sharded (data/towers.yaml).

I images of N encoder positions each; b the 16-bit bytes per value (the towers run at the checkpoint's
16-bit format whatever the language model's compute format).
"""
from __future__ import annotations

import numpy as np

from ..base.dtypes import bytes_per_element
from ..base.datafiles import data_yaml
from ..deploy.config import Dtypes, Parallelism
from ..model.spec import ModelSpec
from ..model.towers import tower_bytes_per_gpu
from .op import Op, _collective


def tower_ops(m: ModelSpec, dt: Dtypes, par: Parallelism, images: float) -> list[Op]:
    """The towers' operators for ``images`` images in one step (module docstring; an array of image counts
    prices one step per entry, each entry > 0); [] without towers or images."""
    if not m.towers or np.all(np.asarray(images) <= 0):
        return []
    b = bytes_per_element(dt.high_precision)
    ways = par.tp if data_yaml("towers.yaml").get("tp_sharded") else 1
    ops: list[Op] = []
    for t in m.towers:
        rows = images * t.positions
        linear = images * (t.flops_per_image - t.attention_flops_per_image) / ways
        ops.append(Op("vision_linear", "gemm", 1, flops=linear, weight_bytes=tower_bytes_per_gpu((t,), b, par.tp),
                      act_bytes=rows * t.layers * (8 * t.width + 2 * t.mlp) * b / ways, group="vision"))
        ops.append(Op("vision_attention", "attention", 1, flops=images * t.attention_flops_per_image / ways,
                      act_bytes=rows * t.layers * 4 * t.attention_width * b / ways, group="vision"))
        if ways > 1:
            ops.append(_collective("vision_all_reduce", "all_reduce", 2 * t.layers, rows * t.width * b, "tp",
                                   par.tp, "vision"))
    return ops
