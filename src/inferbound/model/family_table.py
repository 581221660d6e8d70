"""Every family builder the loader dispatches on: ``families.py``'s (Traits rows and their own layouts), the
readers built on top of ``families.decoder`` (``moe_more.py``, ``decoders_more.py``; registering them inside
families.py would be an import cycle), the decoders with layouts of their own of ``decoders_own.py``, LFM2's (``lfm2.py``) and the Gated-DeltaNet hybrids of
``linear_attn_more.py``, LongCat-Flash's (``longcat.py``), RecurrentGemma's (``griffin.py``), JetMoE's (``jetmoe.py``). ``SUPPORTED`` is every model_type the loader reads.
"""
from __future__ import annotations

from typing import Callable

from .families import ALIASES, SUPPORTED as _FAMILIES
from .families import builders as _family_builders
from .decoders_more import DECODERS_MORE
from .decoders_own import DECODERS_OWN
from .gemma4 import GEMMA4
from .griffin import GRIFFIN
from .jetmoe import JETMOE
from .lfm2 import LFM2
from .longcat import LONGCAT
from .mimo import MIMO
from .linear_attn_more import LINEAR_ATTENTION_MORE
from .moe_more import MOE_MORE
from .validate import Reader

__all__ = ["ALIASES", "SUPPORTED", "builders"]

SUPPORTED: tuple[str, ...] = tuple(sorted({*_FAMILIES, *MOE_MORE, *DECODERS_MORE, *LFM2, *LINEAR_ATTENTION_MORE, *DECODERS_OWN,
                                    *GEMMA4, *MIMO, *LONGCAT, *GRIFFIN, *JETMOE}))


def builders() -> dict[str, Callable[[Reader, str, dict, dict], dict]]:
    return {**_family_builders(), **MOE_MORE, **DECODERS_MORE, **LFM2, **LINEAR_ATTENTION_MORE, **DECODERS_OWN, **GEMMA4, **MIMO, **LONGCAT, **GRIFFIN, **JETMOE}
