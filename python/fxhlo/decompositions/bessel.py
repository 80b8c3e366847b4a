"""Bessel functions (``special_bessel_*``, ``special_modified_bessel_*``, their scaled forms,
``i0``/``special_i0e``, ``special_spherical_bessel_j0``, ``special_airy_ai``) written in ATen ops
fxhlo lowers: the Cephes series and Chebyshev expansions eager PyTorch evaluates."""

from __future__ import annotations

import torch


# Keyed like `_OWN_DECOMPOSITIONS` in the package: "<packet>.<overload>".
RULES = {
}
