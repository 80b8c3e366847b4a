//! Reductions: `stablehlo.reduce` and `stablehlo.reduce_window` with a one-op body region
//! (add, multiply, maximum, minimum, and, or).

use fxhlo_ir::{DType, Scalar, TensorType};
use melior::ir::block::BlockLike;
use melior::ir::operation::OperationBuilder;
use melior::ir::{Block, Location, Region, RegionLike, Value};

use crate::emit::{i64s, padding_attr, Emitter};
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

impl Combiner {
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

impl<'c, 'a> Emitter<'c, 'a> {
    /// The body region `(a, b) -> combiner(a, b)` over 0-d tensors of `dtype`.
    fn body(&self, c: Combiner, dtype: DType, loc: Location<'c>) -> Result<Region<'c>> {
        let scalar = self.tensor_type(&TensorType::new(dtype, Vec::new()));
        let block = Block::new(&[(scalar, loc), (scalar, loc)]);
        let arg = |i| block.argument(i).map(Value::from).map_err(|e| self.internal(e.to_string()));
        let combined = OperationBuilder::new(c.op(), loc)
            .add_operands(&[arg(0)?, arg(1)?])
            .add_results(&[scalar])
            .build()
            .map_err(|e| self.internal(e.to_string()))?;
        let combined = block.append_operation(combined);
        let value: Value = combined.result(0).map_err(|e| self.internal(e.to_string()))?.into();
        let ret = OperationBuilder::new("stablehlo.return", loc)
            .add_operands(&[value])
            .build()
            .map_err(|e| self.internal(e.to_string()))?;
        block.append_operation(ret);
        let region = Region::new();
        region.append_block(block);
        Ok(region)
    }

    /// Reduces `x` over `dims` (dropped from the shape) with `c`.
    pub fn reduce(&self, x: Value<'c, 'a>, ty: &TensorType, dims: &[usize], c: Combiner, loc: Location<'c>) -> Result<Value<'c, 'a>> {
        let init = self.splat(c.identity(ty.dtype), &TensorType::new(ty.dtype, Vec::new()), loc)?;
        let shape: Vec<i64> = (0..ty.rank()).filter(|i| !dims.contains(i)).map(|i| ty.shape[i]).collect();
        let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let out = TensorType::new(ty.dtype, shape);
        let region = self.body(c, ty.dtype, loc)?;
        let v = self.op_n("stablehlo.reduce", loc, &[x, init], &[out], &[("dimensions", i64s(&dims))], vec![region])?;
        v.into_iter().next().ok_or_else(|| self.internal("reduce has no result"))
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
        let region = self.body(c, ty.dtype, loc)?;
        let attrs = [
            ("window_dimensions", i64s(window)),
            ("window_strides", i64s(strides)),
            ("window_dilations", i64s(dilations)),
            ("padding", padding_attr(padding)),
        ];
        let v = self.op_n("stablehlo.reduce_window", loc, &[x, init], &[out.clone()], &attrs, vec![region])?;
        v.into_iter().next().ok_or_else(|| self.internal("reduce_window has no result"))
    }
}
