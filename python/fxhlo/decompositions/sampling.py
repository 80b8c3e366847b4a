"""Resampling ops written in ATen ops fxhlo lowers (``_upsample_bilinear2d_aa``,
``grid_sampler_3d``)."""

from __future__ import annotations

import torch


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
}
