"""Complex dtypes (complex64, complex128) through the whole path: complex inputs, outputs and
arithmetic, the Fourier transforms (``stablehlo.fft``) and the complex views models use
(rotary embeddings written with ``view_as_complex``), each through
``torch.compile(backend="fxhlo")`` against eager PyTorch on the same inputs."""

import pytest
import torch

import fxhlo
from test_op_regressions import compiled


def check(fn, *args, **close):
    """fxhlo's results against eager's; conjugate views are compared by value."""
    want = fn(*args)
    got = compiled(fn)(*args)
    flat_want = want if isinstance(want, (tuple, list)) else [want]
    flat_got = got if isinstance(got, (tuple, list)) else [got]
    for g, w in zip(flat_got, flat_want, strict=True):
        err = (g.resolve_conj() - w.resolve_conj()).abs().max().item() if w.numel() else 0.0
        print(f"{fn.__name__}: {w.dtype} {tuple(w.shape)} max abs err {err:.3e}")
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        torch.testing.assert_close(g, w, equal_nan=True, **close)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_inputs_outputs_and_arithmetic(dtype):
    torch.manual_seed(0)
    z = torch.randn(3, 5, dtype=dtype)
    w = torch.randn(5, dtype=dtype)

    def arithmetic(z, w):
        y = (z * w + 2.0) / (w - 1j) - z.conj()
        return y, y.abs(), y.real * 1.0, y.imag * 1.0, torch.exp(y) * torch.sqrt(z)

    check(arithmetic, z, w)


def test_fourier_transforms_match_eager_in_every_norm_and_layout():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8, 6)

    def transforms(x):
        return (
            torch.fft.fft(x, dim=1),
            torch.fft.ifft(x, norm="ortho"),
            torch.fft.rfft(x, n=10, dim=2, norm="forward"),
            torch.fft.irfft(torch.fft.rfft(x), n=6),
            torch.fft.fftn(x),  # four dims: two passes of at most three
            torch.fft.rfft2(x, dim=(0, 2)),
            torch.fft.hfft(x[..., :4]),
            torch.fft.fftshift(torch.fft.fft2(x)),
        )

    check(transforms, x, atol=1e-4, rtol=1e-4)


def test_rotary_embedding_written_with_view_as_complex():
    # Llama's original rotary form: pairs as complex numbers times a complex phase.
    torch.manual_seed(0)
    q = torch.randn(2, 7, 4, 16)
    angles = torch.outer(torch.arange(7.0), 1.0 / 10000 ** (torch.arange(0, 16, 2) / 16))
    freqs = torch.polar(torch.ones_like(angles), angles)

    def rotate(q, freqs):
        qc = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
        return torch.view_as_real(qc * freqs[None, :, None, :]).flatten(3)

    check(rotate, q, freqs, atol=1e-5, rtol=1e-5)


def test_complex32_is_refused_with_the_supported_types():
    def to_chalf(x):
        return x.to(torch.complex32)

    with pytest.raises(Exception, match="complex32 is not supported by fxhlo.*c64"):
        compiled(to_chalf)(torch.randn(3))
    assert fxhlo  # the backend module is what registered "fxhlo"
