//! Reductions: `stablehlo.reduce` and `stablehlo.reduce_window` with a one-op body region
//! (add, multiply, maximum, minimum, and, or).

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Attribute, Block, Location, Region, RegionLike, Value};

use crate::attr::{self, ComparisonDirection as Dir};
use crate::emit::Emitter;
use crate::Result;

/// The combining op of a reduction.
#[derive(Clone, Copy, Debug)]
pub enum Combiner {
    Add,
    Mul,
    Max,
    Min,
    And,
    Or,
}

/// What a float max/min reduction does with NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nan {
    /// NaN if any reduced element is NaN (PyTorch's `amax`, `max`).
    Propagate,
    /// Whatever the plugin's `maximum` gives: for callers whose result is NaN anyway where the
    /// input has one (the max that stabilizes a softmax).
    Ignore,
}

impl Combiner {
    fn is_max_min(self) -> bool {
        matches!(self, Combiner::Max | Combiner::Min)
    }

    fn op(self) -> &'static str {
        match self {
            Combiner::Add => "stablehlo.add",
            Combiner::Mul => "stablehlo.multiply",
            Combiner::Max => "stablehlo.maximum",
            Combiner::Min => "stablehlo.minimum",
            Combiner::And => "stablehlo.and",
            Combiner::Or => "stablehlo.or",
        }
    }

    /// The identity of the combiner for `dtype` (the reduction's init value).
    pub fn identity(self, dtype: DType) -> Scalar {
        let (lo, hi) = match dtype {
            DType::I64 => (Scalar::Int(i64::MIN), Scalar::Int(i64::MAX)),
            DType::I32 => (Scalar::Int(i32::MIN as i64), Scalar::Int(i32::MAX as i64)),
            DType::I16 => (Scalar::Int(i16::MIN as i64), Scalar::Int(i16::MAX as i64)),
            DType::I8 => (Scalar::Int(i8::MIN as i64), Scalar::Int(i8::MAX as i64)),
            DType::U8 => (Scalar::Int(0), Scalar::Int(255)),
            DType::Bool => (Scalar::Bool(false), Scalar::Bool(true)),
            _ => (Scalar::float(f64::NEG_INFINITY), Scalar::float(f64::INFINITY)),
        };
        match self {
            Combiner::Add => Scalar::Int(0),
            Combiner::Mul => Scalar::Int(1),
            Combiner::Max => lo,
            Combiner::Min => hi,
            Combiner::And => Scalar::Bool(true),
            Combiner::Or => Scalar::Bool(false),
        }
    }
}

/// A region holding `block`.
fn region_of(block: Block<'_>) -> Region<'_> {
    let region = Region::new();
    region.append_block(block);
    region
}

impl<'c, 'a> Emitter<'c, 'a> {
    /// Ends a region's block with `stablehlo.return values`.
    pub(crate) fn append_return(&self, block: &Block<'c>, values: &[Value<'c, '_>], loc: Location<'c>) -> Result<()> {
        let ret = OperationBuilder::new("stablehlo.return", loc)
            .add_operands(values)
            .build()
            .map_err(|e| self.internal(e.to_string()))?;
        block.append_operation(ret);
        Ok(())
    }

    /// The body region `(a, b) -> c(a, b)` over 0-d tensors of `dtype`. With `nan_wins`, for
    /// float max/min NaN wins explicitly: XLA's CPU `reduce_window` does not propagate NaN
    /// through `maximum`, PyTorch does.
    fn body(&self, c: Combiner, dtype: DType, nan_wins: bool, loc: Location<'c>) -> Result<Region<'c>> {
        let st = TensorType::new(dtype, Vec::new());
        let scalar = self.tensor_type(&st);
        let block = Block::new(&[(scalar, loc), (scalar, loc)]);
        {
            let inner = Emitter::new(self.ctx, &block);
            let arg = |i| block.argument(i).map(Value::from).map_err(|e| self.internal(e.to_string()));
            let (a, b) = (arg(0)?, arg(1)?);
            let mut value = inner.op(c.op(), loc, &[a, b], &st, &[])?;
            if nan_wins && c.is_max_min() && dtype.is_float() {
                for x in [a, b] {
                    let nan = inner.compare(Dir::Ne, x, x, &[], loc)?;
                    value = inner.op("stablehlo.select", loc, &[nan, x, value], &st, &[])?;
                }
            }
            self.append_return(&block, &[value], loc)?;
        }
        Ok(region_of(block))
    }

    /// Reduces `x` over `dims` (dropped from the shape) with `c`. A float max/min is NaN where
    /// any reduced element is, as in PyTorch.
    pub fn reduce(&self, x: Value<'c, 'a>, ty: &TensorType, dims: &[usize], c: Combiner, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        self.reduce_nan(x, ty, dims, c, Nan::Propagate, loc)
    }

    /// [`Emitter::reduce`] with the NaN rule of a float max/min chosen by the caller.
    ///
    /// The NaN check is a second reduction (`or` of `x != x`) and a `select` after it, never a
    /// `select` inside the reduction body: XLA's CPU `maximum` drops a NaN second operand, and
    /// the TPU compiler (libtpu 0.0.52) crashes in its fusion pass on a max-reduction whose body
    /// selects when a softmax follows it.
    pub fn reduce_nan(&self, x: Value<'c, 'a>, ty: &TensorType, dims: &[usize], c: Combiner, nan: Nan, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let raw = |x, dtype: DType, c: Combiner| -> Result<(Value<'c, 'a>, TensorType)> {
            let init = self.splat(c.identity(dtype), &TensorType::new(dtype, Vec::new()), loc)?;
            let shape: Vec<i64> = (0..ty.rank()).filter(|i| !dims.contains(i)).map(|i| ty.shape[i]).collect();
            let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
            let out = TensorType::new(dtype, shape);
            let region = self.body(c, dtype, false, loc)?;
            let v = self.op_n("stablehlo.reduce", loc, &[x, init], std::slice::from_ref(&out), &[("dimensions", attr::i64s(self.ctx, &dims))], vec![region])?;
            Ok((v.into_iter().next().ok_or_else(|| self.internal("reduce has no result"))?, out))
        };
        let (v, out) = raw(x, ty.dtype, c)?;
        if nan == Nan::Ignore || !c.is_max_min() || !ty.dtype.is_float() {
            return Ok(v);
        }
        let is_nan = self.compare(Dir::Ne, x, x, &ty.shape, loc)?;
        let (any_nan, _) = raw(is_nan, DType::Bool, Combiner::Or)?;
        let nan_value = self.splat(Scalar::float(f64::NAN), &out, loc)?;
        self.op("stablehlo.select", loc, &[any_nan, nan_value, v], &out, &[])
    }

    /// The window attributes of a `reduce_window`.
    fn window_attrs(&self, window: &[i64], strides: &[i64], dilations: &[i64], padding: &[(i64, i64)]) -> [(&'static str, Attribute<'c>); 4] {
        [
            ("window_dimensions", attr::i64s(self.ctx, window)),
            ("window_strides", attr::i64s(self.ctx, strides)),
            ("window_dilations", attr::i64s(self.ctx, dilations)),
            ("padding", attr::padding(self.ctx, padding)),
        ]
    }

    /// Sliding-window reduction (pooling) of `x` to type `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_window(
        &self,
        x: Value<'c, 'a>,
        ty: &TensorType,
        out: &TensorType,
        window: &[i64],
        strides: &[i64],
        dilations: &[i64],
        padding: &[(i64, i64)],
        c: Combiner,
        init: Scalar,
        loc: Location<'c>,
    ) -> Result<Value<'c, 'a>> {
        let init = self.splat(init, &TensorType::new(ty.dtype, Vec::new()), loc)?;
        let region = self.body(c, ty.dtype, true, loc)?;
        let attrs = self.window_attrs(window, strides, dilations, padding);
        let v = self.op_n("stablehlo.reduce_window", loc, &[x, init], std::slice::from_ref(out), &attrs, vec![region])?;
        v.into_iter().next().ok_or_else(|| self.internal("reduce_window has no result"))
    }
}

/// The arg-reduction body `(av, ai, bv, bi) -> (v, i)`: keeps the larger (`max`) or smaller
/// value; NaN wins (as in `torch.argmax`/`max`); ties keep the smaller index.
impl<'c, 'a> Emitter<'c, 'a> {
    fn arg_body(&self, max: bool, vdtype: DType, loc: Location<'c>) -> Result<Region<'c>> {
        let vt = TensorType::new(vdtype, Vec::new());
        let it = TensorType::new(DType::I64, Vec::new());
        let (vty, ity) = (self.tensor_type(&vt), self.tensor_type(&it));
        let block = Block::new(&[(vty, loc), (ity, loc), (vty, loc), (ity, loc)]);
        {
            let inner = Emitter::new(self.ctx, &block);
            let arg = |i| block.argument(i).map(Value::from).map_err(|e| self.internal(e.to_string()));
            let (av, ai, bv, bi) = (arg(0)?, arg(1)?, arg(2)?, arg(3)?);
            let bt = TensorType::new(DType::Bool, Vec::new());
            let cmp = |dir, x, y| inner.compare(dir, x, y, &[], loc);
            let better = cmp(if max { Dir::Gt } else { Dir::Lt }, av, bv)?;
            let eq = cmp(Dir::Eq, av, bv)?;
            let a_nan = cmp(Dir::Ne, av, av)?;
            let b_nan = cmp(Dir::Ne, bv, bv)?;
            let lt_i = cmp(Dir::Lt, ai, bi)?;
            let and = |x, y| inner.op("stablehlo.and", loc, &[x, y], &bt, &[]);
            let or = |x, y| inner.op("stablehlo.or", loc, &[x, y], &bt, &[]);
            let not_b_nan = inner.op("stablehlo.not", loc, &[b_nan], &bt, &[])?;
            let both_nan = and(a_nan, b_nan)?;
            let tie = or(eq, both_nan)?;
            let pick_a = or(or(and(a_nan, not_b_nan)?, and(tie, lt_i)?)?, better)?;
            let v = inner.op("stablehlo.select", loc, &[pick_a, av, bv], &vt, &[])?;
            let i = inner.op("stablehlo.select", loc, &[pick_a, ai, bi], &it, &[])?;
            self.append_return(&block, &[v, i], loc)?;
        }
        Ok(region_of(block))
    }

    /// Values and i64 indices of the max (or min) over `dims` of `x`, whose candidate indices
    /// are `idx` (same shape, i64).
    pub fn arg_reduce(&self, x: Value<'c, 'a>, idx: Value<'c, 'a>, ty: &TensorType, dims: &[usize], max: bool, loc: Location<'c>) -> Result<(Value<'c, 'a>, Value<'c, 'a>)> {
        let c = if max { Combiner::Max } else { Combiner::Min };
        let init_v = self.splat(c.identity(ty.dtype), &TensorType::new(ty.dtype, Vec::new()), loc)?;
        let init_i = self.splat(Scalar::Int(0), &TensorType::new(DType::I64, Vec::new()), loc)?;
        let shape: Vec<i64> = (0..ty.rank()).filter(|i| !dims.contains(i)).map(|i| ty.shape[i]).collect();
        let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let outs = [TensorType::new(ty.dtype, shape.clone()), TensorType::new(DType::I64, shape)];
        let region = self.arg_body(max, ty.dtype, loc)?;
        let v = self.op_n("stablehlo.reduce", loc, &[x, idx, init_v, init_i], &outs, &[("dimensions", attr::i64s(self.ctx, &dims))], vec![region])?;
        Ok((v[0], v[1]))
    }

    /// A softmax's statistics of `x` over `dims` in one reduction: the max and the sum of
    /// `exp(x - max)`, the sum rescaled each time the running max grows (an online softmax).
    /// A factor is 1 where a max equals the new one (so -inf rows sum their count, which the
    /// caller zeroes). One pass over `x` where a max then a sum are two.
    pub fn softmax_stats(&self, x: Value<'c, 'a>, ty: &TensorType, dims: &[usize], loc: Location<'c>) -> Result<(Value<'c, 'a>, Value<'c, 'a>)> {
        let st = TensorType::new(ty.dtype, Vec::new());
        let init_m = self.splat(Combiner::Max.identity(ty.dtype), &st, loc)?;
        let init_s = self.splat(Scalar::Int(0), &st, loc)?;
        let ones = self.splat(Scalar::Int(1), ty, loc)?;
        let shape: Vec<i64> = (0..ty.rank()).filter(|i| !dims.contains(i)).map(|i| ty.shape[i]).collect();
        let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let outs = [TensorType::new(ty.dtype, shape.clone()), TensorType::new(ty.dtype, shape)];
        let region = self.softmax_stats_body(&st, loc)?;
        let attrs = [("dimensions", attr::i64s(self.ctx, &dims))];
        let v = self.op_n("stablehlo.reduce", loc, &[x, ones, init_m, init_s], &outs, &attrs, vec![region])?;
        Ok((v[0], v[1]))
    }

    /// The reducer of [`Emitter::softmax_stats`]: `(m1, s1, m2, s2) -> (m, s1 * f1 + s2 * f2)`
    /// with `m = max(m1, m2)` and `fi = exp(mi - m)`, or 1 where `mi == m`.
    fn softmax_stats_body(&self, st: &TensorType, loc: Location<'c>) -> Result<Region<'c>> {
        let scalar = self.tensor_type(st);
        let block = Block::new(&[(scalar, loc), (scalar, loc), (scalar, loc), (scalar, loc)]);
        {
            let inner = Emitter::new(self.ctx, &block);
            let arg = |i| block.argument(i).map(Value::from).map_err(|e| self.internal(e.to_string()));
            let (m1, s1, m2, s2) = (arg(0)?, arg(1)?, arg(2)?, arg(3)?);
            let m = inner.op("stablehlo.maximum", loc, &[m1, m2], st, &[])?;
            let one = inner.splat(Scalar::Int(1), st, loc)?;
            let mut terms = Vec::with_capacity(2);
            for (mi, si) in [(m1, s1), (m2, s2)] {
                let same = inner.compare(Dir::Eq, mi, m, &[], loc)?;
                let d = inner.op("stablehlo.subtract", loc, &[mi, m], st, &[])?;
                let f = inner.op("stablehlo.exponential", loc, &[d], st, &[])?;
                let f = inner.op("stablehlo.select", loc, &[same, one, f], st, &[])?;
                terms.push(inner.op("stablehlo.multiply", loc, &[si, f], st, &[])?);
            }
            let s = inner.op("stablehlo.add", loc, &[terms[0], terms[1]], st, &[])?;
            self.append_return(&block, &[m, s], loc)?;
        }
        Ok(region_of(block))
    }

    /// Windowed max with the index of the winner (max pool with indices).
    #[allow(clippy::too_many_arguments)]
    pub fn arg_reduce_window(
        &self,
        x: Value<'c, 'a>,
        idx: Value<'c, 'a>,
        out: &TensorType,
        window: &[i64],
        strides: &[i64],
        dilations: &[i64],
        padding: &[(i64, i64)],
        loc: Location<'c>,
    ) -> Result<(Value<'c, 'a>, Value<'c, 'a>)> {
        let init_v = self.splat(Combiner::Max.identity(out.dtype), &TensorType::new(out.dtype, Vec::new()), loc)?;
        let init_i = self.splat(Scalar::Int(-1), &TensorType::new(DType::I64, Vec::new()), loc)?;
        let region = self.arg_body(true, out.dtype, loc)?;
        let attrs = self.window_attrs(window, strides, dilations, padding);
        let outs = [out.clone(), TensorType::new(DType::I64, out.shape.clone())];
        let v = self.op_n("stablehlo.reduce_window", loc, &[x, idx, init_v, init_i], &outs, &attrs, vec![region])?;
        Ok((v[0], v[1]))
    }

    /// A comparator region `(a0, b0, a1, b1, ...) -> bool` for `stablehlo.sort` ordering by
    /// the first operand: ascending with NaN last, or descending with NaN first (PyTorch).
    pub fn sort_comparator(&self, vdtype: DType, extra: &[DType], descending: bool, loc: Location<'c>) -> Result<Region<'c>> {
        let scalar = |d: DType| self.tensor_type(&TensorType::new(d, Vec::new()));
        let mut args = vec![(scalar(vdtype), loc), (scalar(vdtype), loc)];
        for &d in extra {
            args.push((scalar(d), loc));
            args.push((scalar(d), loc));
        }
        let block = Block::new(&args);
        {
            let inner = Emitter::new(self.ctx, &block);
            let arg = |i| block.argument(i).map(Value::from).map_err(|e| self.internal(e.to_string()));
            let (a, b) = (arg(0)?, arg(1)?);
            let bt = TensorType::new(DType::Bool, Vec::new());
            let result = if vdtype.is_float() {
                let (x, y) = if descending { (b, a) } else { (a, b) };
                // x < y, or y is NaN and x is not: NaN sorts as the largest value.
                let lt = inner.compare(Dir::Lt, x, y, &[], loc)?;
                let x_nan = inner.compare(Dir::Ne, x, x, &[], loc)?;
                let y_nan = inner.compare(Dir::Ne, y, y, &[], loc)?;
                let x_num = inner.op("stablehlo.not", loc, &[x_nan], &bt, &[])?;
                let nan_order = inner.op("stablehlo.and", loc, &[x_num, y_nan], &bt, &[])?;
                inner.op("stablehlo.or", loc, &[lt, nan_order], &bt, &[])?
            } else {
                inner.compare(if descending { Dir::Gt } else { Dir::Lt }, a, b, &[], loc)?
            };
            self.append_return(&block, &[result], loc)?;
        }
        Ok(region_of(block))
    }

    /// The scatter update region `(old, new) -> combined` over 0-d tensors of `dtype`;
    /// `None` returns `new` (plain replacement).
    pub fn scatter_body(&self, c: Option<Combiner>, dtype: DType, loc: Location<'c>) -> Result<Region<'c>> {
        match c {
            Some(c) => self.body(c, dtype, true, loc),
            None => {
                let scalar = self.tensor_type(&TensorType::new(dtype, Vec::new()));
                let block = Block::new(&[(scalar, loc), (scalar, loc)]);
                let new: Value = block.argument(1).map_err(|e| self.internal(e.to_string()))?.into();
                self.append_return(&block, &[new], loc)?;
                Ok(region_of(block))
            }
        }
    }
}
