"""Finds the PJRT plugin of a device through this interpreter's import system.

``fxhlo._native`` calls :func:`find` when it creates a device's client, with the plugin files the
runtime knows for that device (``runtime/src/plugin.rs``, ``plugin_files``), unless
``FXHLO_PJRT_PLUGIN`` or ``FXHLO_VENV`` chooses for it. The plugins are Python packages
(``xla-cpu-pjrt`` installs ``xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so``), so the one this
interpreter would import is the one pip installed next to fxhlo, wherever that is: a virtual
environment of any name, activated or not, ``pip install --user``, ``--target`` plus
``PYTHONPATH``. The runtime's own search (``VIRTUAL_ENV``, ``.venv`` folders above the current
directory, the interpreter's prefix) remains the fallback when nothing is found here.

Only the plugin's parent package is imported (``xla_plugins``, a namespace package), never the
plugin package itself, so nothing of the plugin runs before the runtime loads it.
"""

from __future__ import annotations

import importlib.util
import os


def find(plugin_files) -> str | None:
    """The first of ``plugin_files`` (paths relative to a site-packages folder, in preference
    order, e.g. ``"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"``) that exists in the package this
    interpreter imports under that name, or ``None``."""
    for rel in plugin_files:
        package, _, filename = rel.rpartition("/")
        if not package:
            continue
        try:
            spec = importlib.util.find_spec(package.replace("/", "."))
        except (ImportError, ValueError):
            # The parent package is missing (ModuleNotFoundError) or broken: not installed here.
            continue
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            candidate = os.path.join(folder, filename)
            if os.path.isfile(candidate):
                return candidate
    return None
