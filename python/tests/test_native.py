"""The native bridge's own edges: a trace handed over as Python objects that does not fit the
schema is a CompileError naming the trace and what did not fit, never a crash."""

import pytest

import fxhlo
from fxhlo import _native


@pytest.mark.parametrize("trace, needle", [
    ({"format": "fxhlo-trace"}, "missing field"),
    ([1, 2, 3], "invalid type"),
    ({"format": "fxhlo-trace", "version": 1, "name": "g", "inputs": [{"name": "x", "kind": "weird"}]}, "unknown variant"),
    ({"format": "fxhlo-trace", "version": object()}, "not object"),
])
def test_a_trace_that_does_not_fit_the_schema_is_a_compile_error(trace, needle):
    with pytest.raises(fxhlo.CompileError) as info:
        _native.compile(trace, "<bad>", '{"device": "cpu"}')
    message = str(info.value)
    print(message)
    assert "<bad>" in message and needle in message, message
