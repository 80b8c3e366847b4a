//! Sampling at arbitrary points: `grid_sampler_2d`.
//!
//! PyTorch semantics (CPU): the input is `[N, C, H, W]`, the grid `[N, Ho, Wo, 2]` with `x`
//! (last index 0) addressing W and `y` addressing H, in `[-1, 1]`. A grid value `g` maps to
//! pixel coordinate `((g + 1) / 2) * (size - 1)` with `align_corners`, else
//! `((g + 1) * size - 1) / 2`. Padding modes act on coordinates: `border` clips them to
//! `[0, size - 1]`; `reflection` reflects them about `0` and `size - 1` (`align_corners`) or
//! about `-0.5` and `size - 0.5`, then clips; `zeros` leaves them, and every tap outside the
//! input reads 0. Nearest rounds half to even; bilinear weights its four taps from the floor;
//! bicubic uses the cubic convolution with `A = -0.75` on the 4x4 taps around the floor, its
//! weights taken from the unpadded coordinate and the padding applied to each tap's coordinates.
//! 16-bit floats compute in f32.
//!
//! Every tap is one `stablehlo.gather` from the input laid out as `[N, H*W, C]` at batch
//! coordinates `(n, iy * W + ix)` (coordinates clamped into range; out-of-range taps are
//! selected away), weighted and summed, then laid out as `[N, C, Ho, Wo]`.

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::{Location, Value};

use super::indexing::gather;
use super::reduction::compute_dtype;
use super::{arg, Operand};
use crate::attr::{self, ComparisonDirection as Dir, GatherDimensions};
use crate::emit::Emitter;
use crate::Result;

type V<'c, 'a> = Value<'c, 'a>;

/// The cubic convolution constant PyTorch uses.
const A: f64 = -0.75;

/// Elementwise helpers over the `[N, Ho, Wo]` point tensors in the work dtype.
struct Points<'e, 'c, 'a> {
    e: &'e Emitter<'c, 'a>,
    t: TensorType,
    loc: Location<'c>,
}

impl<'c, 'a> Points<'_, 'c, 'a> {
    fn k(&self, v: f64) -> Result<V<'c, 'a>> {
        self.e.splat(Scalar::float(v), &self.t, self.loc)
    }
    fn bin(&self, name: &str, a: V<'c, 'a>, b: V<'c, 'a>) -> Result<V<'c, 'a>> {
        self.e.op(name, self.loc, &[a, b], &self.t, &[])
    }
    fn add(&self, a: V<'c, 'a>, b: V<'c, 'a>) -> Result<V<'c, 'a>> {
        self.bin("stablehlo.add", a, b)
    }
    fn sub(&self, a: V<'c, 'a>, b: V<'c, 'a>) -> Result<V<'c, 'a>> {
        self.bin("stablehlo.subtract", a, b)
    }
    fn mul(&self, a: V<'c, 'a>, b: V<'c, 'a>) -> Result<V<'c, 'a>> {
        self.bin("stablehlo.multiply", a, b)
    }
    fn addk(&self, a: V<'c, 'a>, v: f64) -> Result<V<'c, 'a>> {
        self.add(a, self.k(v)?)
    }
    fn mulk(&self, a: V<'c, 'a>, v: f64) -> Result<V<'c, 'a>> {
        self.mul(a, self.k(v)?)
    }
    fn un(&self, name: &str, a: V<'c, 'a>) -> Result<V<'c, 'a>> {
        self.e.op(name, self.loc, &[a], &self.t, &[])
    }
    fn clip(&self, a: V<'c, 'a>, lo: f64, hi: f64) -> Result<V<'c, 'a>> {
        self.e.op("stablehlo.clamp", self.loc, &[self.k(lo)?, a, self.k(hi)?], &self.t, &[])
    }

    /// Grid value to pixel coordinate.
    fn unnormalize(&self, g: V<'c, 'a>, size: i64, align_corners: bool) -> Result<V<'c, 'a>> {
        let s = size as f64;
        if align_corners {
            self.mulk(self.mulk(self.addk(g, 1.0)?, 0.5)?, s - 1.0)
        } else {
            self.mulk(self.addk(self.mulk(self.addk(g, 1.0)?, s)?, -1.0)?, 0.5)
        }
    }

    /// PyTorch's `reflect_coordinates(c, twice_low, twice_high)`.
    fn reflect(&self, c: V<'c, 'a>, twice_low: i64, twice_high: i64) -> Result<V<'c, 'a>> {
        if twice_low == twice_high {
            return self.k(0.0);
        }
        let min = twice_low as f64 / 2.0;
        let span = (twice_high - twice_low) as f64 / 2.0;
        let c = self.un("stablehlo.abs", self.addk(c, -min)?)?;
        let extra = self.bin("stablehlo.remainder", c, self.k(span)?)?;
        let flips = self.un("stablehlo.floor", self.mulk(c, 1.0 / span)?)?;
        let parity = self.bin("stablehlo.remainder", flips, self.k(2.0)?)?;
        let even = self.e.compare(Dir::Eq, parity, self.k(0.0)?, &self.t.shape, self.loc)?;
        let a = self.addk(extra, min)?;
        let b = self.addk(self.sub(self.k(span)?, extra)?, min)?;
        self.e.op("stablehlo.select", self.loc, &[even, a, b], &self.t, &[])
    }

    /// The padding mode applied to a coordinate along a dim of `size`.
    fn pad(&self, c: V<'c, 'a>, size: i64, padding: i64, align_corners: bool) -> Result<V<'c, 'a>> {
        let hi = (size - 1) as f64;
        match padding {
            1 => self.clip(c, 0.0, hi),
            2 => {
                let r = if align_corners { self.reflect(c, 0, 2 * (size - 1))? } else { self.reflect(c, -1, 2 * size - 1)? };
                self.clip(r, 0.0, hi)
            }
            _ => Ok(c),
        }
    }
}

/// Lowers `grid_sampler_2d(input, grid)`.
pub fn grid_sample<'c, 'a>(
    e: &Emitter<'c, 'a>,
    mode: i64,
    padding: i64,
    align_corners: bool,
    operands: &[Operand<'c, 'a, '_>],
    out: &TensorType,
    loc: Location<'c>,
) -> Result<V<'c, 'a>> {
    let (x, g) = (arg(e, operands, 0)?, arg(e, operands, 1)?);
    let work = compute_dtype(x.1.dtype);
    let (n, c, h, w) = (x.1.shape[0], x.1.shape[1], x.1.shape[2], x.1.shape[3]);
    let (ho, wo) = (g.1.shape[1], g.1.shape[2]);
    let np = ho * wo;

    // The input as [N, H*W, C].
    let xv = e.convert(x.0, x.1, work, loc)?;
    let xt = TensorType::new(work, vec![n, h, w, c]);
    let xv = e.op("stablehlo.transpose", loc, &[xv], &xt, &[("permutation", attr::i64s(e.ctx, &[0, 2, 3, 1]))])?;
    let flat_t = TensorType::new(work, vec![n, h * w, c]);
    let xv = e.reshape(xv, &xt, &flat_t, loc)?;

    // The grid's x and y as [N, Ho, Wo].
    let p = Points { e, t: TensorType::new(work, vec![n, ho, wo]), loc };
    let gv = e.convert(g.0, g.1, work, loc)?;
    let component = |i: i64| -> Result<V<'c, 'a>> {
        let st = TensorType::new(work, vec![n, ho, wo, 1]);
        let s = e.slice(gv, &[0, 0, 0, i], &[n, ho, wo, i + 1], &[1, 1, 1, 1], &st, loc)?;
        e.reshape(s, &st, &p.t, loc)
    };
    let gx = component(0)?;
    let gy = component(1)?;

    // Batch coordinates of every point, [N, P, 1].
    let it1 = TensorType::new(DType::I64, vec![n, np, 1]);
    let batch = e.iota(&it1, 0, loc)?;
    let acc_t = TensorType::new(work, vec![n, np, c]);
    let bool_t = TensorType::new(DType::Bool, p.t.shape.clone());
    // Each point reads the channel row at its batch coordinates (n, flat pixel).
    let taps = GatherDimensions { offset_dims: vec![2], collapsed_slice_dims: vec![0, 1], start_index_map: vec![0, 1], index_vector_dim: 2 };

    // One tap at integral coordinates (ix, iy) with weight wgt: its weighted, masked values.
    let tap = |ix: V<'c, 'a>, iy: V<'c, 'a>, wgt: V<'c, 'a>| -> Result<V<'c, 'a>> {
        let and = |a, b| e.op("stablehlo.and", loc, &[a, b], &bool_t, &[]);
        let ge0x = e.compare(Dir::Ge, ix, p.k(0.0)?, &p.t.shape, loc)?;
        let lex = e.compare(Dir::Le, ix, p.k((w - 1) as f64)?, &p.t.shape, loc)?;
        let ge0y = e.compare(Dir::Ge, iy, p.k(0.0)?, &p.t.shape, loc)?;
        let ley = e.compare(Dir::Le, iy, p.k((h - 1) as f64)?, &p.t.shape, loc)?;
        let valid = and(and(ge0x, lex)?, and(ge0y, ley)?)?;
        let cx = e.convert(p.clip(ix, 0.0, (w - 1) as f64)?, &p.t, DType::I64, loc)?;
        let cy = e.convert(p.clip(iy, 0.0, (h - 1) as f64)?, &p.t, DType::I64, loc)?;
        let pi = TensorType::new(DType::I64, p.t.shape.clone());
        let flat = e.op("stablehlo.multiply", loc, &[cy, e.splat(Scalar::Int(w), &pi, loc)?], &pi, &[])?;
        let flat = e.op("stablehlo.add", loc, &[flat, cx], &pi, &[])?;
        let flat = e.reshape(flat, &pi, &it1, loc)?;
        let it2 = TensorType::new(DType::I64, vec![n, np, 2]);
        let idx = e.concatenate(&[batch, flat], 2, &it2, loc)?;
        let vals = gather(e, xv, idx, &acc_t, &taps, &[1, 1, c], loc)?;
        let b1 = TensorType::new(DType::Bool, vec![n, np, 1]);
        let valid = e.reshape(valid, &bool_t, &b1, loc)?;
        let valid = e.broadcast(valid, &b1, &TensorType::new(DType::Bool, acc_t.shape.clone()), loc)?;
        let vals = e.op("stablehlo.select", loc, &[valid, vals, e.splat(Scalar::float(0.0), &acc_t, loc)?], &acc_t, &[])?;
        let w1 = TensorType::new(work, vec![n, np, 1]);
        let wgt = e.reshape(wgt, &p.t, &w1, loc)?;
        let wgt = e.broadcast(wgt, &w1, &acc_t, loc)?;
        e.op("stablehlo.multiply", loc, &[vals, wgt], &acc_t, &[])
    };

    let mut terms = Vec::new();
    match mode {
        1 => {
            let ix = p.pad(p.unnormalize(gx, w, align_corners)?, w, padding, align_corners)?;
            let iy = p.pad(p.unnormalize(gy, h, align_corners)?, h, padding, align_corners)?;
            let ix = p.un("stablehlo.round_nearest_even", ix)?;
            let iy = p.un("stablehlo.round_nearest_even", iy)?;
            terms.push(tap(ix, iy, p.k(1.0)?)?);
        }
        2 => {
            let ix = p.unnormalize(gx, w, align_corners)?;
            let iy = p.unnormalize(gy, h, align_corners)?;
            let (x0, y0) = (p.un("stablehlo.floor", ix)?, p.un("stablehlo.floor", iy)?);
            let wx = cubic_weights(&p, p.sub(ix, x0)?)?;
            let wy = cubic_weights(&p, p.sub(iy, y0)?)?;
            for (j, wyj) in wy.iter().enumerate() {
                let ty = p.pad(p.addk(y0, j as f64 - 1.0)?, h, padding, align_corners)?;
                for (i, wxi) in wx.iter().enumerate() {
                    let tx = p.pad(p.addk(x0, i as f64 - 1.0)?, w, padding, align_corners)?;
                    terms.push(tap(tx, ty, p.mul(*wxi, *wyj)?)?);
                }
            }
        }
        _ => {
            let ix = p.pad(p.unnormalize(gx, w, align_corners)?, w, padding, align_corners)?;
            let iy = p.pad(p.unnormalize(gy, h, align_corners)?, h, padding, align_corners)?;
            let (x0, y0) = (p.un("stablehlo.floor", ix)?, p.un("stablehlo.floor", iy)?);
            let (x1, y1) = (p.addk(x0, 1.0)?, p.addk(y0, 1.0)?);
            // PyTorch: nw = (x1 - x) * (y1 - y), ne = (x - x0) * (y1 - y), ...
            let (wx0, wx1) = (p.sub(x1, ix)?, p.sub(ix, x0)?);
            let (wy0, wy1) = (p.sub(y1, iy)?, p.sub(iy, y0)?);
            terms.push(tap(x0, y0, p.mul(wx0, wy0)?)?);
            terms.push(tap(x1, y0, p.mul(wx1, wy0)?)?);
            terms.push(tap(x0, y1, p.mul(wx0, wy1)?)?);
            terms.push(tap(x1, y1, p.mul(wx1, wy1)?)?);
        }
    }
    let mut acc = terms[0];
    for t in &terms[1..] {
        acc = e.op("stablehlo.add", loc, &[acc, *t], &acc_t, &[])?;
    }
    let ht = TensorType::new(work, vec![n, ho, wo, c]);
    let acc = e.reshape(acc, &acc_t, &ht, loc)?;
    let rt = TensorType::new(work, vec![n, c, ho, wo]);
    let r = e.op("stablehlo.transpose", loc, &[acc], &rt, &[("permutation", attr::i64s(e.ctx, &[0, 3, 1, 2]))])?;
    e.convert(r, &rt, out.dtype, loc)
}

/// PyTorch's `get_cubic_upsample_coefficients(t)`: the four tap weights at offsets -1..=2.
fn cubic_weights<'c, 'a>(p: &Points<'_, 'c, 'a>, t: V<'c, 'a>) -> Result<[V<'c, 'a>; 4]> {
    // |x| <= 1: ((A + 2) x - (A + 3)) x x + 1
    let conv1 = |x: V<'c, 'a>| -> Result<V<'c, 'a>> {
        let a = p.addk(p.mulk(x, A + 2.0)?, -(A + 3.0))?;
        p.addk(p.mul(p.mul(a, x)?, x)?, 1.0)
    };
    // 1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A
    let conv2 = |x: V<'c, 'a>| -> Result<V<'c, 'a>> {
        let a = p.addk(p.mulk(x, A)?, -5.0 * A)?;
        let b = p.addk(p.mul(a, x)?, 8.0 * A)?;
        p.addk(p.mul(b, x)?, -4.0 * A)
    };
    let x2 = p.sub(p.k(1.0)?, t)?;
    Ok([conv2(p.addk(t, 1.0)?)?, conv1(t)?, conv1(x2)?, conv2(p.addk(x2, 1.0)?)?])
}
