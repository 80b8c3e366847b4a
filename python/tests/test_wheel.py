"""The wheel a framework author installs: ``maturin build`` makes it, ``pip install`` puts it in a
new virtual environment with PyTorch and nothing of this checkout, and there
``torch.compile(model, backend="fxhlo")``, without ``import fxhlo``, finds the backend through
the package's entry point and runs on the PJRT CPU plugin that pip installed as the wheel's
dependency, from a folder with no checkout and no ``.venv`` above it.

Offline, and without installing PyTorch a second time:

* PyTorch, numpy and safetensors come from this project's environment through a ``.pth`` file in
  the new environment naming a folder of links to just those distributions and the ones they
  require (their files and ``.dist-info``). pip therefore sees them as installed and leaves them
  alone, as it would in a user's environment that already has PyTorch.
* The plugin is not made visible that way: ``xla-cpu-pjrt`` reaches the new environment only as
  the wheel's declared dependency, installed by pip (``--no-index --find-links``) from a wheel
  repacked from the files pip installed into this project's environment (the same files, with a
  RECORD of their hashes). A missing or misspelt dependency fails the install; a plugin found
  anywhere but in the new environment fails the test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import time
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from conftest import ROOT

PYTHON_DIR = ROOT / "python"
MATURIN = Path(sys.executable).parent / "maturin"
# What pip must find already installed in the new environment: the wheel's dependencies except
# the plugin, which it installs itself.
PROVIDED = ("torch", "numpy", "safetensors")
PLUGIN_DIST = "xla-cpu-pjrt"
PLUGIN_FILE = "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"

# Run by the new environment's interpreter from an empty folder. Prints one JSON line.
SCRIPT = r"""
import json, os, sys
import torch

assert "fxhlo" not in sys.modules
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).eval()
x = torch.randn(4, 16)
with torch.no_grad():
    expected = model(x)
    got = torch.compile(model, backend="fxhlo", fullgraph=True, dynamic=False)(x)
# Imported by Dynamo through the entry point, not by this script.
entry_point_import = "fxhlo" in sys.modules
import fxhlo, fxhlo._native, fxhlo._plugin
from fxhlo._plugin import find

graphs = fxhlo.compiled_graphs()
with open("/proc/self/maps") as maps:
    loaded = sorted({line.split(None, 5)[5].strip() for line in maps
                     if line.rstrip().endswith("/xla_cpu_pjrt.so")})
print("RESULT " + json.dumps({
    "entry_point_import": entry_point_import,
    "prefix": sys.prefix,
    "fxhlo": fxhlo.__file__,
    "native": fxhlo._native.__file__,
    "found": find([%(plugin)r]),
    "loaded": loaded,
    "graphs": [g.executable.device for g in graphs],
    "max_abs_diff": (got - expected).abs().max().item(),
    "close": torch.allclose(got, expected, rtol=1e-5, atol=1e-5),
}))
""" % {"plugin": PLUGIN_FILE}


def _run(cmd, timeout, **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def _clean_env() -> dict:
    """The environment without anything that points at this checkout or its venv: no
    VIRTUAL_ENV, FXHLO_*, PYTHON* or PIP_* variables, no PATH entry inside the checkout."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX") and not k.startswith(("FXHLO_", "PYTHON", "PIP_"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and not Path(p).resolve().is_relative_to(ROOT))
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """``maturin build --release`` into a temporary folder. It shares target/ with the editable
    install scripts/setup.sh made (same profile, same interpreter), so after that build it only
    repackages: seconds."""
    out = tmp_path_factory.mktemp("dist")
    start = time.perf_counter()
    proc = _run([MATURIN, "build", "--release", "-m", PYTHON_DIR / "Cargo.toml", "--out", out,
                 "--interpreter", sys.executable], timeout=1800, cwd=ROOT)
    print(f"maturin build: {time.perf_counter() - start:.1f} s")
    wheels = list(out.glob("fxhlo-*.whl"))
    assert len(wheels) == 1, proc.stderr
    return wheels[0]


@pytest.mark.slow
def test_wheel_holds_the_package_and_nothing_else(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    sources = sorted(f"fxhlo/{p.relative_to(PYTHON_DIR / 'fxhlo').as_posix()}"
                     for p in (PYTHON_DIR / "fxhlo").rglob("*.py"))
    native = [n for n in names if re.fullmatch(r"fxhlo/_native\.cpython-[^/]+\.so", n)]
    info = f"fxhlo-{metadata.version('fxhlo')}.dist-info"
    expected_info = [f"{info}/{n}" for n in ("METADATA", "RECORD", "WHEEL", "entry_points.txt")]
    assert len(native) == 1, names
    assert sorted(names) == sorted(sources + native + expected_info), names

    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"{info}/METADATA").decode()
        entry_points = zf.read(f"{info}/entry_points.txt").decode()
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)", meta, re.M)
    assert set(requires) >= {*PROVIDED, PLUGIN_DIST}, meta
    assert re.search(r"^\[torch_dynamo_backends\]\s*\nfxhlo\s*=\s*fxhlo\.backend:fxhlo_backend$",
                     entry_points, re.M), entry_points


@pytest.mark.slow
def test_installed_wheel_compiles_through_the_entry_point(wheel, tmp_path):
    env_dir, work = tmp_path / "env", tmp_path / "work"
    work.mkdir()
    # The point of the test: nothing above the working folder or the environment is a checkout
    # or a `.venv` the runtime's own plugin search would walk up to.
    for d in (work, env_dir):
        assert not any((p / ".venv").exists() or (p / ".git").exists() for p in d.parents), d

    # pip comes from this project's environment (`pip --python` installs into the new one);
    # `python -m venv` with its own pip would spend ~10 s on ensurepip for the same install.
    _run([sys.executable, "-m", "venv", "--without-pip", env_dir], timeout=300)
    py = env_dir / "bin" / "python"
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], timeout=60,
                     env=_clean_env()).stdout.strip())
    (site / "_provided.pth").write_text(f"{_link_provided(tmp_path / 'provided')}\n")

    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    _repack(metadata.distribution(PLUGIN_DIST), wheelhouse)
    pip = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-index", "--no-cache-dir",
                "--disable-pip-version-check", "--find-links", wheelhouse, wheel],
               timeout=600, cwd=work, env=_clean_env())
    for name in PROVIDED:
        assert re.search(rf"Requirement already satisfied: {name}\b", pip.stdout), pip.stdout
    plugin = site / PLUGIN_FILE
    assert plugin.is_file() and not plugin.is_symlink(), pip.stdout

    run = _run([py, "-c", SCRIPT], timeout=600, cwd=work, env=_clean_env())
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, run.stdout + run.stderr
    result = json.loads(lines[-1][len("RESULT "):])

    assert result["entry_point_import"], result
    assert Path(result["prefix"]) == env_dir, result
    for module in ("fxhlo", "native"):
        path = Path(result[module]).resolve()
        assert path.is_relative_to(site.resolve()) and not path.is_relative_to(ROOT), result
    # The plugin pip installed into the new environment is the one found and loaded.
    assert Path(result["found"]) == plugin, result
    assert result["loaded"] == [str(plugin.resolve())], result
    assert result["graphs"] == ["cpu"], result
    assert result["close"], result


def test_plugin_is_found_through_the_import_system(tmp_path):
    """``fxhlo._plugin.find`` returns the plugin the interpreter would import, wherever it is: here
    one reachable only through ``PYTHONPATH`` (as after ``pip install --target``), in a process
    without site-packages, so no virtual environment can supply it."""
    plugin = tmp_path / PLUGIN_FILE
    plugin.parent.mkdir(parents=True)
    plugin.write_bytes(b"")
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('_plugin', {str(PYTHON_DIR / 'fxhlo' / '_plugin.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(m.find(['jax_plugins/xla_cuda13/xla_cuda_plugin.so', sys.argv[1]]))\n"
        "print(m.find(['libtpu/libtpu.so', 'no_slash.so']))\n"
    )
    env = {**_clean_env(), "PYTHONPATH": str(tmp_path)}
    out = _run([sys.executable, "-S", "-c", code, PLUGIN_FILE], timeout=60, env=env).stdout.split()
    assert out == [str(plugin), "None"]


def _link_provided(folder: Path) -> Path:
    """A folder of links to the distributions in :data:`PROVIDED` and everything they require
    (extras included), taken from this project's environment: their top-level packages and
    modules and their ``.dist-info``. Requirements whose distribution is not installed here are
    the ones whose markers exclude this platform."""
    folder.mkdir()
    todo = [(name, frozenset()) for name in PROVIDED]
    seen = set()
    while todo:
        name, extras = todo.pop()
        key = (re.sub(r"[-_.]+", "-", name).lower(), extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        site = Path(dist.locate_file(""))
        for f in dist.files or []:
            top = f.parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth") or (folder / top).exists():
                continue
            (folder / top).symlink_to(site / top)
        for req in dist.requires or []:
            m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[([^\]]*)\])?", req)
            wanted = re.search(r"""extra\s*==\s*["']([^"']+)["']""", req)
            if wanted and wanted.group(1) not in extras:
                continue
            sub_extras = frozenset(e.strip() for e in (m.group(2) or "").split(",") if e.strip())
            todo.append((m.group(1), sub_extras))
    return folder


def _repack(dist: metadata.Distribution, out: Path) -> Path:
    """A wheel of an installed distribution from the files its RECORD lists (bytecode and
    install-time files left out; a new RECORD with their hashes), as pip downloaded it."""
    site = Path(dist.locate_file(""))
    tag = re.search(r"^Tag:\s*(\S+)", dist.read_text("WHEEL"), re.M).group(1)
    stem = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}"
    info = f"{stem}.dist-info"
    path = out / f"{stem}-{tag}.whl"
    record = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for f in dist.files:
            if f.parts[0] == ".." or "__pycache__" in f.parts or (
                    f.parts[0] == info and f.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")):
                continue
            src = site / f
            entry = zipfile.ZipInfo(f.as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = (src.stat().st_mode & 0xFFFF) << 16
            digest, size = hashlib.sha256(), 0
            with src.open("rb") as fin, zf.open(entry, "w", force_zip64=True) as fout:
                while chunk := fin.read(1 << 22):
                    digest.update(chunk)
                    fout.write(chunk)
                    size += len(chunk)
            b64 = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
            record.append(f"{f.as_posix()},sha256={b64},{size}")
        record.append(f"{info}/RECORD,,")
        zf.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path
