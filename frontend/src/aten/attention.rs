//! The fused attention kernels PyTorch picks per device (`_scaled_dot_product_flash_attention`,
//! `_efficient_attention`, `_cudnn_attention`, `_fused_attention_overrideable` and the CPU's
//! `_flash_attention_for_cpu`) as their math form in IR ops, so that a graph traced on any
//! device imports to the same computation:
//!
//! ```text
//! s = (q @ k^T) * scale            in f32 for 16-bit inputs, as the kernels accumulate
//! s = s + bias  |  where(j > i, -inf, s) (is_causal, top-left aligned)
//! m = max(s), m = 0 where the row is all -inf; p = exp(s - m); l = sum(p), 1 where 0
//! out = (p @ v) * (1 / l)          p rounded to the input's dtype first for 16-bit inputs
//! logsumexp = m + log(l)           (a row with every key masked gives 0 and 0, not NaN)
//! ```
//!
//! Key and value heads that divide the query heads serve a group of query heads each
//! (grouped-query attention). The auxiliary results (logsumexp, in whichever layout the kernel
//! returns it, the RNG seed and offset, the debug mask, the empty sequence-length tensors) are
//! produced in the type the node's meta gives them: the logsumexp computed, the others zeros
//! (with no dropout, nothing reads them). A result that is not a tensor (the `max_q`/`max_k`
//! ints, results PyTorch gives as `None`) has no meta and no value; `getitem` of one fails.
//! Dropout other than 0 is refused: a trace must be deterministic.

use fxhlo_ir::smallvec::{smallvec, SmallVec};
use fxhlo_ir::infer::accumulate;
use fxhlo_ir::{BinaryOp, CompareOp, DType, Op, PadMode, ReduceOp, Scalar, Shape, TensorType, UnaryOp};

use super::args::Got;
use super::{Call, Mapped, Mapping, Operand, Unsupported};

/// A call the IR has no single op for, as a few IR ops in order (a fused kernel's math form).
#[derive(Debug)]
pub struct Expansion<'a> {
    /// The ops, each over the call's tensors or earlier steps.
    pub steps: Vec<Step<'a>>,
    /// Per result of the node: the step whose (first) result it is; `None` for a result that
    /// is not a tensor.
    pub results: Vec<Option<usize>>,
}

/// One op of an [`Expansion`].
#[derive(Debug)]
pub struct Step<'a> {
    /// Appended to the node's name (`<node>.<name>`); unique within the expansion.
    pub name: &'static str,
    pub op: Op,
    pub operands: SmallVec<[Src<'a>; 3]>,
    /// The result type of an op whose type is not inferred (`full`, `arange`).
    pub ty: Option<TensorType>,
}

/// An operand of a [`Step`].
#[derive(Debug, Clone, Copy)]
pub enum Src<'a> {
    /// A value of the trace, by name.
    Value(&'a str),
    /// The first result of an earlier step.
    Step(usize),
}

/// The argument positions of one kernel's schema (`usize::MAX`: the kernel has no such
/// argument, or only as a keyword).
struct Schema {
    bias: usize,
    bias_name: &'static str,
    dropout: usize,
    causal: usize,
}

const NONE: usize = usize::MAX;

/// The step names of the zero-filled auxiliary results, by result position.
const AUX: [&str; 9] = ["aux0", "aux1", "aux2", "aux3", "aux4", "aux5", "aux6", "aux7", "aux8"];

/// Maps an attention kernel; [`Unsupported::NoLowering`] for any other target.
pub(super) fn map<'a>(c: &Call<'a, '_>) -> Mapping<'a> {
    let schema = match c.name {
        "_scaled_dot_product_flash_attention" if c.overload == "default" => Schema { bias: NONE, bias_name: "", dropout: 3, causal: 4 },
        "_scaled_dot_product_efficient_attention" | "_scaled_dot_product_cudnn_attention" => {
            Schema { bias: 3, bias_name: "attn_bias", dropout: 5, causal: 6 }
        }
        "_scaled_dot_product_fused_attention_overrideable" => Schema { bias: 3, bias_name: "attn_bias", dropout: 4, causal: 5 },
        "_scaled_dot_product_flash_attention_for_cpu" => Schema { bias: NONE, bias_name: "attn_mask", dropout: 3, causal: 4 },
        _ => return Err(Unsupported::NoLowering),
    };
    if c.prims() {
        return Err(Unsupported::NoLowering);
    }
    let a = &c.a;
    let dropout = a.opt_scalar(schema.dropout, "dropout_p")?.unwrap_or(Scalar::Int(0));
    if dropout.as_f64() != 0.0 {
        return Err(Unsupported::value("dropout_p", dropout, "0 (a trace must be deterministic: export in eval mode)"));
    }
    let causal = a.bool(schema.causal, "is_causal", false)?;
    let scale = a.opt_scalar(NONE, "scale")?.map(|s| s.as_f64());
    let bias = if !schema.bias_name.is_empty() && a.has(schema.bias, schema.bias_name) {
        Some(tensor_name(a.tensor(schema.bias, schema.bias_name), schema.bias_name)?)
    } else {
        None
    };
    let (q, k, v) = (tensor_name(a.tensor(0, "query"), "query")?, tensor_name(a.tensor(1, "key"), "key")?, tensor_name(a.tensor(2, "value"), "value")?);
    let ty = |name: &'static str, v: &str| (c.operand_type)(v).ok_or(Unsupported::Missing { arg: name });
    let (qt, kt, vt) = (ty("query", q)?, ty("key", k)?, ty("value", v)?);
    let bt = bias.map(|b| ty("attn_bias", b)).transpose()?;
    let mut b = Builder { steps: Vec::new() };
    let out = b.attention(Inputs { q: (q, &qt), k: (k, &kt), v: (v, &vt), bias: bias.zip(bt.as_ref()) }, scale, causal)?;
    let mut results = Vec::with_capacity(c.result_count());
    for i in 0..c.result_count() {
        results.push(match (i, c.meta(i)) {
            (_, None) => None,
            (0, Some(t)) => {
                if *t != out.ty {
                    return Err(Unsupported::results(format!("the output is {t} in the meta, but the attention of these operands gives {}", out.ty)));
                }
                Some(out.out)
            }
            (1, Some(t)) => Some(b.logsumexp(&out, t)?),
            (_, Some(t)) => {
                let name = AUX.get(i).copied().ok_or_else(|| Unsupported::results(format!("the node has {} results; the kernels have at most {}", c.result_count(), AUX.len())))?;
                Some(b.push(name, Op::Full { value: Scalar::Int(0) }, smallvec![], Some(t.clone())))
            }
        });
    }
    if results.first().copied().flatten().is_none() {
        return Err(Unsupported::results("the node has no output meta"));
    }
    Ok(Mapped::Expanded(Expansion { steps: b.steps, results }))
}

/// The trace name of a tensor argument (attention takes no scalars in tensor positions).
fn tensor_name<'a>(o: Got<Operand<'a>>, arg: &'static str) -> Got<&'a str> {
    match o? {
        Operand::Tensor(n) => Ok(n),
        _ => Err(Unsupported::Kind { arg, expected: "a tensor", found: "a number" }),
    }
}

/// The step a [`Src`] names (the builder's ops always give steps; a trace value here would be
/// a bug, reported as a refused call rather than a panic).
fn step(s: Src<'_>) -> Got<usize> {
    match s {
        Src::Step(i) => Ok(i),
        Src::Value(v) => Err(Unsupported::results(format!("internal: attention result `{v}` is not a computed value"))),
    }
}

/// A value (a trace name or a step) and its type.
type Val<'a, 't> = (&'a str, &'t TensorType);

struct Inputs<'a, 't> {
    q: Val<'a, 't>,
    k: Val<'a, 't>,
    v: Val<'a, 't>,
    bias: Option<Val<'a, 't>>,
}

/// What [`Builder::attention`] computed: the output (step and type) and the steps that give the
/// logsumexp's parts, `m` and `l` as `[*batch, H, L, 1]` in the accumulation dtype.
struct Attention {
    out: usize,
    ty: TensorType,
    row_max: usize,
    row_sum: usize,
    stat: TensorType,
}

/// Collects steps; each step's type is tracked alongside so that shapes can be computed.
struct Builder<'a> {
    steps: Vec<Step<'a>>,
}

impl<'a> Builder<'a> {
    fn push(&mut self, name: &'static str, op: Op, operands: SmallVec<[Src<'a>; 3]>, ty: Option<TensorType>) -> usize {
        self.steps.push(Step { name, op, operands, ty });
        self.steps.len() - 1
    }

    /// A 0-d constant.
    fn scalar(&mut self, name: &'static str, value: Scalar, dtype: DType) -> Src<'a> {
        Src::Step(self.push(name, Op::Full { value }, smallvec![], Some(TensorType::new(dtype, Shape::new()))))
    }

    fn convert(&mut self, name: &'static str, x: Src<'a>, from: DType, to: DType) -> Src<'a> {
        if from == to {
            return x;
        }
        Src::Step(self.push(name, Op::Convert { dtype: to }, smallvec![x], None))
    }

    fn op(&mut self, name: &'static str, op: Op, operands: SmallVec<[Src<'a>; 3]>) -> Src<'a> {
        Src::Step(self.push(name, op, operands, None))
    }

    fn attention(&mut self, i: Inputs<'a, '_>, scale: Option<f64>, causal: bool) -> Got<Attention> {
        let (qt, kt, vt) = (i.q.1, i.k.1, i.v.1);
        let r = qt.rank();
        let bad = || Unsupported::results(format!("attention of query {qt}, key {kt} and value {vt}: fxhlo takes [..., heads, length, dim] operands of one floating-point dtype whose key/value heads divide the query heads"));
        if r < 3 || kt.rank() != r || vt.rank() != r || !qt.dtype.is_float() || kt.dtype != qt.dtype || vt.dtype != qt.dtype {
            return Err(bad());
        }
        let (batch, heads, length, dim) = (&qt.shape[..r - 3], qt.shape[r - 3], qt.shape[r - 2], qt.shape[r - 1]);
        let (kv_heads, keys, vdim) = (kt.shape[r - 3], kt.shape[r - 2], vt.shape[r - 1]);
        if kt.shape[..r - 3] != *batch
            || vt.shape[..r - 3] != *batch
            || kt.shape[r - 1] != dim
            || vt.shape[r - 3] != kv_heads
            || vt.shape[r - 2] != keys
            || kv_heads <= 0
            || heads % kv_heads != 0
        {
            return Err(bad());
        }
        let (dtype, acc) = (qt.dtype, accumulate(qt.dtype));
        let n: i64 = batch.iter().product::<i64>() * heads;
        let with = |tail: &[i64]| -> Shape { batch.iter().copied().chain(tail.iter().copied()).collect() };
        let q = self.convert("q", Src::Value(i.q.0), dtype, acc);
        let k = self.heads(Src::Value(i.k.0), dtype, acc, batch, (kv_heads, heads), (keys, dim), "k")?;
        let v = self.heads(Src::Value(i.v.0), dtype, acc, batch, (kv_heads, heads), (keys, vdim), "v")?;
        // Scores: [N, L, E] @ [N, E, S].
        let q3 = self.op("q3", Op::View { shape: Shape::from(&[n, length, dim][..]) }, smallvec![q]);
        let k3 = self.op("k3", Op::View { shape: Shape::from(&[n, keys, dim][..]) }, smallvec![k]);
        let kt3 = self.op("kt", Op::Permute { dims: Shape::from(&[0, 2, 1][..]) }, smallvec![k3]);
        let s3 = self.op("qk", Op::Bmm, smallvec![q3, kt3]);
        let scale = scale.unwrap_or_else(|| 1.0 / (dim as f64).sqrt());
        let scale = self.scalar("scale", Scalar::float(scale), acc);
        let s3 = self.op("scaled", Op::Binary(BinaryOp::Mul), smallvec![s3, scale]);
        let scores = with(&[heads, length, keys]);
        let mut s = self.op("scores", Op::View { shape: scores.clone() }, smallvec![s3]);
        let neg_inf = self.scalar("neg_inf", Scalar::float(f64::NEG_INFINITY), acc);
        if causal {
            // Key j is hidden from query i when j > i (top-left aligned, as PyTorch's is_causal).
            let rows = self.push("rows", Op::Arange { start: Scalar::Int(0), end: Scalar::Int(length), step: Scalar::Int(1) }, smallvec![], Some(TensorType::new(DType::I64, vec![length])));
            let rows = self.op("rows2", Op::View { shape: Shape::from(&[length, 1][..]) }, smallvec![Src::Step(rows)]);
            let cols = self.push("cols", Op::Arange { start: Scalar::Int(0), end: Scalar::Int(keys), step: Scalar::Int(1) }, smallvec![], Some(TensorType::new(DType::I64, vec![keys])));
            let hidden = self.op("hidden", Op::Compare(CompareOp::Gt), smallvec![Src::Step(cols), rows]);
            s = self.op("causal", Op::Where, smallvec![hidden, neg_inf, s]);
        }
        if let Some((name, bt)) = i.bias {
            let bias = Src::Value(name);
            s = if bt.dtype == DType::Bool {
                // A boolean mask keeps the keys where it is true.
                self.op("masked", Op::Where, smallvec![bias, s, neg_inf])
            } else {
                let bias = self.convert("bias", bias, bt.dtype, acc);
                self.op("biased", Op::Binary(BinaryOp::Add), smallvec![s, bias])
            };
            // The sum broadcasts; a bias of more dims than the scores is refused.
            if fxhlo_ir::infer::broadcast_shapes(&bt.shape, &scores).ok().as_ref() != Some(&scores) {
                return Err(Unsupported::results(format!("attention bias {bt} does not broadcast to the scores {}", TensorType::new(acc, scores))));
            }
        }
        let last = Shape::from(&[scores.len() as i64 - 1][..]);
        let reduce = |op| Op::Reduce { op, dims: last.clone(), keepdim: true, dtype: None };
        let m = self.op("row_max", reduce(ReduceOp::Amax), smallvec![s]);
        let zero = self.scalar("zero", Scalar::float(0.0), acc);
        let dead = self.op("dead", Op::Compare(CompareOp::Eq), smallvec![m, neg_inf]);
        let m = self.op("row_max0", Op::Where, smallvec![dead, zero, m]);
        let centered = self.op("centered", Op::Binary(BinaryOp::Sub), smallvec![s, m]);
        let p = self.op("p", Op::Unary(UnaryOp::Exp), smallvec![centered]);
        let l = self.op("row_sum", reduce(ReduceOp::Sum), smallvec![p]);
        let one = self.scalar("one", Scalar::float(1.0), acc);
        let empty = self.op("empty_row", Op::Compare(CompareOp::Eq), smallvec![l, zero]);
        let l = self.op("row_sum1", Op::Where, smallvec![empty, one, l]);
        // The kernels multiply 16-bit P into V: round P as they store it.
        let p = if acc != dtype {
            let rounded = self.convert("p_rounded", p, acc, dtype);
            self.convert("p_acc", rounded, dtype, acc)
        } else {
            p
        };
        let p3 = self.op("p3", Op::View { shape: Shape::from(&[n, length, keys][..]) }, smallvec![p]);
        let v3 = self.op("v3", Op::View { shape: Shape::from(&[n, keys, vdim][..]) }, smallvec![v]);
        let pv = self.op("pv", Op::Bmm, smallvec![p3, v3]);
        let pv = self.op("pv4", Op::View { shape: with(&[heads, length, vdim]) }, smallvec![pv]);
        let inv = self.op("inv_sum", Op::Binary(BinaryOp::Div), smallvec![one, l]);
        let out = self.op("weighted", Op::Binary(BinaryOp::Mul), smallvec![pv, inv]);
        let out = self.convert("out", out, acc, dtype);
        Ok(Attention {
            out: step(out)?,
            ty: TensorType::new(dtype, with(&[heads, length, vdim])),
            row_max: step(m)?,
            row_sum: step(l)?,
            stat: TensorType::new(acc, with(&[heads, length, 1])),
        })
    }

    /// Key or value `[*batch, Hk, S, D]` in the accumulation dtype, each of its heads repeated
    /// for the `heads / Hk` query heads it serves (`repeat_interleave` on the head dim).
    #[allow(clippy::too_many_arguments)]
    fn heads(&mut self, x: Src<'a>, dtype: DType, acc: DType, batch: &[i64], (kv, heads): (i64, i64), (s, d): (i64, i64), which: &'static str) -> Got<Src<'a>> {
        let x = self.convert(if which == "k" { "k" } else { "v" }, x, dtype, acc);
        if kv == heads {
            return Ok(x);
        }
        let group = heads / kv;
        let shape = |tail: &[i64]| -> Shape { batch.iter().copied().chain(tail.iter().copied()).collect() };
        let (n1, n2, n3) = if which == "k" { ("k_groups", "k_expanded", "k_heads") } else { ("v_groups", "v_expanded", "v_heads") };
        let x = self.op(n1, Op::View { shape: shape(&[kv, 1, s, d]) }, smallvec![x]);
        let x = self.op(n2, Op::Expand { sizes: shape(&[kv, group, s, d]) }, smallvec![x]);
        Ok(self.op(n3, Op::View { shape: shape(&[heads, s, d]) }, smallvec![x]))
    }

    /// The logsumexp `m + log(l)` in the layout of the meta `t`: `[*batch, H, L]`, with a
    /// trailing 1 (cuDNN), padded along L (the efficient kernel pads to a multiple of 32), or
    /// empty when the kernel was asked not to compute it.
    fn logsumexp(&mut self, a: &Attention, t: &TensorType) -> Got<usize> {
        if t.num_elements() == 0 || !t.dtype.is_float() {
            return Ok(self.push("lse_empty", Op::Full { value: Scalar::Int(0) }, smallvec![], Some(t.clone())));
        }
        let r = a.stat.rank();
        let (lead, length) = (&a.stat.shape[..r - 1], a.stat.shape[r - 2]);
        let log_l = self.op("log_sum", Op::Unary(UnaryOp::Log), smallvec![Src::Step(a.row_sum)]);
        let lse = self.op("lse", Op::Binary(BinaryOp::Add), smallvec![Src::Step(a.row_max), log_l]);
        let lse = self.convert("lse_dtype", lse, a.stat.dtype, t.dtype);
        if t.shape == a.stat.shape {
            return step(lse);
        }
        let flat = self.op("lse_flat", Op::View { shape: Shape::from(lead) }, smallvec![lse]);
        if t.shape[..] == *lead {
            return step(flat);
        }
        let padded = t.rank() == r - 1 && t.shape[..r - 2] == lead[..r - 2] && t.shape[r - 2] > length;
        if !padded {
            return Err(Unsupported::results(format!("the logsumexp meta {t} is none of the kernels' layouts of {}", a.stat)));
        }
        let pad = vec![0, t.shape[r - 2] - length];
        Ok(self.push("lse_padded", Op::Pad { pad, mode: PadMode::Constant(Scalar::float(0.0)) }, smallvec![flat], None))
    }
}
