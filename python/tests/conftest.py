"""Shared helpers: the repository root, scripts/gen_fixtures.py loaded as a module, the fxhlo CLI,
and the one rule for whether a committed fixture is stale (`stale_files`, `reference_problem`)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
TORCH_RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
"""The installed PyTorch's (major, minor): tests of behaviour a release lacks say so with it
(docs/compat.md lists them)."""
COMMITTED = ROOT / "testsuite" / "fixtures"


def load_script(name: str):
    """The project script ``scripts/<name>.py`` as a module (scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    # Registered under its name, as an import would: Dynamo (torch 2.11) imports the module of a
    # global it traces by name, and the fixture builders' forwards read the module's globals.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gen_fixtures = load_script("gen_fixtures")
NAMES = list(gen_fixtures.FIXTURE_BUILDERS)


def bundle_files(bundle: Path) -> dict:
    """file name -> bytes for every file of a bundle folder."""
    return {f.name: f.read_bytes() for f in sorted(bundle.iterdir())}


def first_difference(a: bytes, b: bytes) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"sizes {len(a)} and {len(b)}, first difference at byte {i}: {a[i:i + 60]!r} vs {b[i:i + 60]!r}"


# ---- freshness of committed fixtures -------------------------------------------------------
#
# A committed fixture is fresh when its generator script, run now, writes
#   * the same graphs: graph.json byte-identical;
#   * the same inputs and weights: weights.safetensors (and manifest.json) byte-identical, the
#     `input.*` tensors of reference.safetensors bit-identical;
#   * references that agree with a fresh eager run: the `output.*` tensors of
#     reference.safetensors have the same keys, dtypes and shapes, floating-point ones agree
#     within the tolerance of their dtype (`REFERENCE_TOLERANCE`; NaN equals NaN), integers and
#     bools exactly.
# Eager PyTorch picks its kernels by CPU (AVX-512 or AVX2, AMX, ...): the same script gives
# outputs an ulp or two apart on another machine, so floating-point references are never
# compared bit for bit across machines. Two exports on one machine are (test_fixtures.py checks
# them byte for byte).

REFERENCE = "reference.safetensors"

# dtype -> (rtol, atol) for floating-point reference outputs; other floating dtypes use
# torch.testing.assert_close's defaults (f32: 1.3e-6, 1e-5; f64: 1e-7, 1e-7). The 16-bit floats
# keep assert_close's rtol but take it as atol too (its default atol, 1e-5, is far below their
# resolution): their eager kernels round intermediate results to 16 bits (a convolution's sum
# before its bias is added), so an output that cancels to near zero carries an error of an ulp
# of its terms, not of itself. Seen between two CPUs: 2 ulps of 1 (0.0156 bf16, 0.00098 f16).
REFERENCE_TOLERANCE = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}


def _bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes (NaN payloads and signed zeros included), as a flat uint8 tensor."""
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def reference_problem(where: str, key: str, fresh: torch.Tensor, committed: torch.Tensor):
    """None when the committed reference tensor `key` is still what a fresh run gives; otherwise
    why not, naming `where` (bundle and file), the tensor, and the largest error seen.

    `output.*` tensors of a floating-point (or complex) dtype may differ within the dtype's
    tolerance (`REFERENCE_TOLERANCE`, else torch.testing.assert_close's defaults), NaN matching
    NaN; every other tensor (inputs, integer and bool outputs) must be bit-identical."""
    head = f"{where}: {key}"
    if fresh.dtype != committed.dtype or fresh.shape != committed.shape:
        return (f"{head} is {committed.dtype} {list(committed.shape)} but a fresh run gives "
                f"{fresh.dtype} {list(fresh.shape)}")
    tolerant = key.startswith("output.") and (fresh.dtype.is_floating_point or fresh.dtype.is_complex)
    what = f"{head} ({committed.dtype} {list(committed.shape)})"
    if not tolerant:
        if torch.equal(_bits(fresh), _bits(committed)):
            return None
        return (f"{what} must be bit-identical; {int((_bits(fresh) != _bits(committed)).sum())} bytes "
                f"differ, max abs error {_max_abs_error(fresh, committed):.3g}")
    rtol, atol = REFERENCE_TOLERANCE.get(fresh.dtype, (None, None))
    try:
        torch.testing.assert_close(fresh, committed, rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as e:
        lines = [line.strip() for line in str(e).splitlines()]
        detail = "; ".join(line for line in lines if line and not line.endswith("are not close!"))
        return (f"{what} is not close to a fresh run: max abs error {_max_abs_error(fresh, committed):.3g}; "
                f"{detail}")
    return None


def _max_abs_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """The largest |a - b| over all elements: 0 where both are equal or both NaN, inf where only
    one is NaN (0 for empty tensors)."""
    wide = torch.complex128 if a.dtype.is_complex else torch.float64
    a, b = a.detach().to(wide), b.detach().to(wide)
    error = torch.where(a == b, 0.0, (a - b).abs())
    error = torch.where(a.isnan() & b.isnan(), 0.0, error.nan_to_num(nan=float("inf"), posinf=float("inf")))
    return error.max().item() if error.numel() else 0.0


def _reference_problems(where: str, fresh: Path, committed: Path) -> list:
    from safetensors import safe_open
    from safetensors.torch import load_file

    problems = []
    metadata = []
    for path in (fresh, committed):
        with safe_open(str(path), "pt") as f:
            metadata.append(f.metadata())
    if metadata[0] != metadata[1]:
        problems.append(f"{where}: metadata {metadata[1]} but a fresh run writes {metadata[0]}")
    new, old = load_file(fresh), load_file(committed)
    if sorted(new) != sorted(old):
        problems.append(f"{where}: tensors {sorted(old)} but a fresh run writes {sorted(new)}")
    for key in sorted(set(new) & set(old)):
        problem = reference_problem(where, key, new[key], old[key])
        if problem:
            problems.append(problem)
    return problems


def stale_files(fresh: Path, committed: Path, label: str) -> list:
    """Why the committed folder `committed` (a bundle, or the tree of op bundles) is not what its
    generator just wrote to `fresh`, one line per problem, each naming `label`/file; empty when
    it is fresh by the rule above. reference.safetensors files are compared by
    `reference_problem`; every other file byte for byte."""
    def tree(root):
        return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}

    new, old = tree(fresh), tree(committed)
    problems = [f"not committed: {label}/{f}" for f in sorted(set(new) - set(old))]
    problems += [f"committed but no longer written: {label}/{f}" for f in sorted(set(old) - set(new))]
    for f in sorted(set(new) & set(old)):
        if Path(f).name == REFERENCE:
            problems += _reference_problems(f"{label}/{f}", new[f], old[f])
        else:
            a, b = new[f].read_bytes(), old[f].read_bytes()
            if a != b:
                problems.append(f"{label}/{f} differs: {first_difference(a, b)}")
    return problems


@pytest.fixture(scope="session")
def exports(tmp_path_factory):
    """Every fixture exported three times: twice in this process from the same model object
    (`a`, `b`), and once by `scripts/gen_fixtures.py` in a separate process started from
    another working directory (`c`). The subprocess runs while this process exports."""
    base = tmp_path_factory.mktemp("exports")
    dirs = {k: base / k for k in "abc"}
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "gen_fixtures.py"), "--out", str(dirs["c"])],
        cwd=base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        for name in NAMES:
            model_and_args = gen_fixtures.build(name)
            for k in "ab":
                gen_fixtures.export_fixture(name, dirs[k], model_and_args)
        out, _ = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 0, out
    return dirs


FXHLO_CLI = ROOT / "target" / "debug" / "fxhlo"


@pytest.fixture(scope="session")
def fxhlo_cli() -> Path:
    """The `fxhlo` binary of this checkout (target/debug/fxhlo). Its absence fails the test:
    the model tests are part of the suite, not optional."""
    if not FXHLO_CLI.is_file():
        pytest.fail(f"{FXHLO_CLI.relative_to(ROOT)} is missing: run scripts/setup.sh "
                    "(or `cargo build -p fxhlo-cli`) first", pytrace=False)
    return FXHLO_CLI


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Every test compiles from scratch (Dynamo's cache is per code object, and tests reuse
    module classes)."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compile_(fn, **options):
    """``fn`` through the fxhlo backend, as users write it (``options`` only when given)."""
    return torch.compile(fn, backend="fxhlo", fullgraph=True, dynamic=False, options=options or None)


def raises_options_error(compiled, *args, match: str):
    """Calls ``compiled`` (a ``torch.compile`` region) on ``args`` under ``torch.no_grad()`` and
    returns the :class:`fxhlo.OptionsError` it raised, whose message matches ``match``. Options
    are checked at Dynamo's first call of the backend, and Dynamo hands an exception of a
    backend on wrapped in its own (``BackendCompilerFailed``, ``inner_exception``)."""
    import re

    import fxhlo

    with torch.no_grad(), pytest.raises(Exception) as info:
        compiled(*args)
    error = getattr(info.value, "inner_exception", info.value)
    assert isinstance(error, fxhlo.OptionsError), f"{type(info.value).__name__}: {info.value}"
    assert re.search(match, str(error)), str(error)
    return error


def without_defaults(v):
    """A trace's JSON value without the members that hold the schema's defaults (`"weight":
    null`, `"subgraphs": []`): the dump writes the trace as Rust read it, with its defaults spelt
    out, where the exporter leaves them out."""
    if isinstance(v, dict):
        return {k: without_defaults(x) for k, x in v.items() if x is not None and x != []}
    return [without_defaults(x) for x in v] if isinstance(v, list) else v


class BufferCounter(torch.nn.Module):
    """A module that adds its input to a buffer on every call and returns twice the total: a
    graph that mutates an input (AOT Autograd writes the buffer back after each call)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(3))

    def forward(self, x):
        self.total.add_(x)
        return self.total * 2
