"""Shared helpers: the repository root, scripts/gen_fixtures.py loaded as a module, the fxhlo CLI."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "testsuite" / "fixtures"


def _load_gen_fixtures():
    spec = importlib.util.spec_from_file_location("gen_fixtures", ROOT / "scripts" / "gen_fixtures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_fixtures = _load_gen_fixtures()
NAMES = list(gen_fixtures.FIXTURE_BUILDERS)


def bundle_files(bundle: Path) -> dict:
    """file name -> bytes for every file of a bundle folder."""
    return {f.name: f.read_bytes() for f in sorted(bundle.iterdir())}


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
