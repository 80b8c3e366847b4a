"""The ahead-of-time worker of the Python backend: ``python _aot_worker.py <extension> <args>``.

Run as a script, not as ``-m fxhlo._aot_worker``: that would import the ``fxhlo`` package and
with it PyTorch (seconds) for each compile. It loads only the extension (``fxhlo._native``, by
path) and runs the same worker as ``fxhlo aot-worker``, so a crash of the TPU compiler ends
this process, not the user's.
"""

import importlib.machinery
import importlib.util
import sys


def main() -> int:
    path = sys.argv[1]
    loader = importlib.machinery.ExtensionFileLoader("fxhlo._native", path)
    spec = importlib.util.spec_from_file_location("fxhlo._native", path, loader=loader)
    native = importlib.util.module_from_spec(spec)
    loader.exec_module(native)
    return native.aot_worker(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
