"""Special functions of the error and gamma families (``special_erfcx``, ``special_log_ndtr``,
``special_ndtri``, ``igamma``/``igammac``, ``polygamma``) written in ATen ops fxhlo lowers: the
Cephes algorithms eager PyTorch evaluates."""

from __future__ import annotations

import torch


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
}
