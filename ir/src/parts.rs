//! The text form of an op: its name and its attributes, written by the printer and read back
//! by the parser. One function each way keeps the two in step; the round-trip tests hold them
//! to it.

use std::collections::BTreeMap;

use crate::attr::{bools, ints, opt_scalar, quote, Attr};
use crate::data::TensorData;
use crate::op::{BinaryOp, CompareOp, FftKind, InputKind, Op, PadMode, ReduceOp, ScatterReduce, UnaryOp};

impl Op {
    /// Attributes as `key = value` text pairs, in a fixed order.
    pub fn attributes(&self) -> Vec<(&'static str, String)> {
        let b = |v: &bool| v.to_string();
        match self {
            Op::Input { kind, weight, layout } => {
                let mut a = vec![("kind", kind.name().to_string())];
                if let Some(w) = weight {
                    a.push(("weight", quote(w)));
                }
                if let Some(perm) = layout {
                    let perm: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
                    a.push(("layout", ints(&perm)));
                }
                a
            }
            Op::Full { value } => vec![("value", value.to_string())],
            Op::Constant { data } => vec![("data", quote(&data.digest_hex()))],
            Op::Arange { start, end, step } => {
                vec![("start", start.to_string()), ("end", end.to_string()), ("step", step.to_string())]
            }
            Op::Clamp { min, max } => vec![("min", opt_scalar(min)), ("max", opt_scalar(max))],
            Op::Convert { dtype } => vec![("dtype", dtype.to_string())],
            Op::Reduce { dims, keepdim, dtype, .. } => {
                let mut a = vec![("dims", ints(dims)), ("keepdim", b(keepdim))];
                a.extend(dtype.map(|d| ("dtype", d.to_string())));
                a
            }
            Op::Softmax { dim, .. } => vec![("dim", dim.to_string())],
            Op::LayerNorm { normalized_shape, eps, has_weight, has_bias } => vec![
                ("normalized_shape", ints(normalized_shape)),
                ("eps", eps.to_string()),
                ("has_weight", b(has_weight)),
                ("has_bias", b(has_bias)),
            ],
            Op::GroupNorm { groups, eps, has_weight, has_bias } => vec![
                ("groups", groups.to_string()),
                ("eps", eps.to_string()),
                ("has_weight", b(has_weight)),
                ("has_bias", b(has_bias)),
            ],
            Op::BatchNorm { eps, has_weight, has_bias } | Op::BatchNormBatchStats { eps, has_weight, has_bias } => {
                vec![("eps", eps.to_string()), ("has_weight", b(has_weight)), ("has_bias", b(has_bias))]
            }
            Op::Convolution { stride, padding, dilation, transposed, output_padding, groups, has_bias, channels_last } => {
                let mut a = vec![
                    ("stride", ints(stride)),
                    ("padding", ints(padding)),
                    ("dilation", ints(dilation)),
                    ("transposed", b(transposed)),
                    ("output_padding", ints(output_padding)),
                    ("groups", groups.to_string()),
                    ("has_bias", b(has_bias)),
                ];
                // Printed only where it differs from the imported form.
                if *channels_last {
                    a.push(("channels_last", b(channels_last)));
                }
                a
            }
            Op::MaxPool { kernel, stride, padding, dilation, ceil_mode, indices, channels_last } => {
                let mut a = vec![
                    ("kernel", ints(kernel)),
                    ("stride", ints(stride)),
                    ("padding", ints(padding)),
                    ("dilation", ints(dilation)),
                    ("ceil_mode", b(ceil_mode)),
                ];
                // Printed only where they differ from the imported form.
                if !indices {
                    a.push(("indices", b(indices)));
                }
                if *channels_last {
                    a.push(("channels_last", b(channels_last)));
                }
                a
            }
            Op::AvgPool { kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, channels_last } => {
                let mut a = vec![
                    ("kernel", ints(kernel)),
                    ("stride", ints(stride)),
                    ("padding", ints(padding)),
                    ("ceil_mode", b(ceil_mode)),
                    ("count_include_pad", b(count_include_pad)),
                    ("divisor_override", divisor_override.map(|d| d.to_string()).unwrap_or_else(|| "none".into())),
                ];
                // Printed only where it differs from the imported form.
                if *channels_last {
                    a.push(("channels_last", b(channels_last)));
                }
                a
            }
            Op::AdaptiveAvgPool { output_size } | Op::UpsampleNearest { output_size } => {
                vec![("output_size", ints(output_size))]
            }
            Op::View { shape } => vec![("shape", ints(shape))],
            Op::Permute { dims } => vec![("dims", ints(dims))],
            Op::Expand { sizes } => vec![("sizes", ints(sizes))],
            Op::BroadcastInDim { shape, dims } => vec![("shape", ints(shape)), ("dims", ints(dims))],
            Op::Slice { dim, start, end, step } => vec![
                ("dim", dim.to_string()),
                ("start", start.to_string()),
                ("end", end.to_string()),
                ("step", step.to_string()),
            ],
            Op::Select { dim, index } => vec![("dim", dim.to_string()), ("index", index.to_string())],
            Op::DynamicSlice { dim, size } => vec![("dim", dim.to_string()), ("size", size.to_string())],
            Op::DynamicUpdateSlice { dim } => vec![("dim", dim.to_string())],
            Op::Unsqueeze { dim } | Op::Cat { dim } => vec![("dim", dim.to_string())],
            Op::Squeeze { dims } => vec![("dims", ints(dims))],
            Op::Split { sizes, dim } => vec![("sizes", ints(sizes)), ("dim", dim.to_string())],
            Op::Index { present } => vec![("present", bools(present))],
            Op::Elu { alpha, scale, input_scale } => vec![
                ("alpha", alpha.to_string()),
                ("scale", scale.to_string()),
                ("input_scale", input_scale.to_string()),
            ],
            Op::LeakyRelu { slope } => vec![("slope", slope.to_string())],
            Op::ClampTensor { has_min, has_max } => vec![("has_min", b(has_min)), ("has_max", b(has_max))],
            Op::ArgReduce { dim, keepdim, .. } => {
                vec![("dim", dim.map(|d| d.to_string()).unwrap_or_else(|| "none".into())), ("keepdim", b(keepdim))]
            }
            Op::MaxMin { dim, keepdim, .. } => vec![("dim", dim.to_string()), ("keepdim", b(keepdim))],
            Op::SoftmaxStats { dim } => vec![("dim", dim.to_string())],
            Op::Var { dims, correction, keepdim } => {
                vec![("dims", ints(dims)), ("correction", correction.to_string()), ("keepdim", b(keepdim))]
            }
            Op::Cumsum { dim, dtype } => {
                let mut a = vec![("dim", dim.to_string())];
                a.extend(dtype.map(|d| ("dtype", d.to_string())));
                a
            }
            Op::Pad { pad, mode } => {
                let mut a = vec![("pad", ints(pad))];
                match mode {
                    PadMode::Constant(v) => {
                        a.push(("mode", "constant".into()));
                        a.push(("value", v.to_string()));
                    }
                    PadMode::Reflect => a.push(("mode", "reflect".into())),
                    PadMode::Replicate => a.push(("mode", "replicate".into())),
                }
                a
            }
            Op::Cdist { p } | Op::Pdist { p } => vec![("p", p.to_string())],
            Op::EmbeddingBag { mode, include_last_offset, padding_idx, has_weights } => vec![
                ("mode", mode.to_string()),
                ("include_last_offset", b(include_last_offset)),
                ("padding_idx", padding_idx.map(|p| p.to_string()).unwrap_or_else(|| "none".into())),
                ("has_weights", b(has_weights)),
            ],
            Op::Repeat { repeats } => vec![("repeats", ints(repeats))],
            Op::Flip { dims } => vec![("dims", ints(dims))],
            Op::Diagonal { offset, dim1, dim2 } => {
                vec![("offset", offset.to_string()), ("dim1", dim1.to_string()), ("dim2", dim2.to_string())]
            }
            Op::AsStrided { size, stride, offset } => {
                vec![("size", ints(size)), ("stride", ints(stride)), ("offset", offset.to_string())]
            }
            Op::Gather { dim } | Op::IndexSelect { dim } => vec![("dim", dim.to_string())],
            Op::Scatter { dim, reduce, include_self } => {
                vec![("dim", dim.to_string()), ("reduce", reduce.name().to_string()), ("include_self", b(include_self))]
            }
            Op::IndexPut { present, accumulate } => vec![("present", bools(present)), ("accumulate", b(accumulate))],
            Op::SelectScatter { dim, index } => vec![("dim", dim.to_string()), ("index", index.to_string())],
            Op::SliceScatter { dim, start, end, step } => vec![
                ("dim", dim.to_string()),
                ("start", start.to_string()),
                ("end", end.to_string()),
                ("step", step.to_string()),
            ],
            Op::Sort { dim, descending } => vec![("dim", dim.to_string()), ("descending", b(descending))],
            Op::Topk { k, dim, largest } => vec![("k", k.to_string()), ("dim", dim.to_string()), ("largest", b(largest))],
            Op::UpsampleBilinear { output_size, align_corners } => {
                vec![("output_size", ints(output_size)), ("align_corners", b(align_corners))]
            }
            Op::GridSample { mode, padding, align_corners } => {
                vec![("mode", mode.to_string()), ("padding", padding.to_string()), ("align_corners", b(align_corners))]
            }
            Op::Cholesky { upper } => vec![("upper", b(upper))],
            Op::Fft { kind, length } => vec![("kind", kind.name().to_string()), ("length", ints(length))],
            Op::RngBitGenerator { shape, dtype } => vec![("shape", ints(shape)), ("dtype", dtype.to_string())],
            Op::Cond { then_region, else_region } => {
                vec![("then_region", then_region.to_string()), ("else_region", else_region.to_string())]
            }
            Op::While { cond, body } => vec![("cond", cond.to_string()), ("body", body.to_string())],
            Op::TriangularSolve { upper, left, unit_diagonal } => {
                vec![("upper", b(upper)), ("left", b(left)), ("unit_diagonal", b(unit_diagonal))]
            }
            Op::Unknown { target, reason } => {
                let mut a = Vec::new();
                if needs_quoting(target) {
                    a.push(("target", quote(target)));
                }
                a.extend(reason.as_deref().map(|r| ("reason", quote(r))));
                a
            }
            Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Where | Op::Copy | Op::Mm | Op::Bmm | Op::Addmm
            | Op::Embedding | Op::CopyInto | Op::MaskedScatter => vec![],
        }
    }

    /// The name the printer writes: the op's name, or `unknown` for an unknown target that
    /// would read back as a known op.
    pub fn text_name(&self) -> &str {
        match self {
            Op::Unknown { target, .. } if needs_quoting(target) => "unknown",
            _ => self.name(),
        }
    }

    /// Rebuilds an op from its text name and attributes; rejects missing, malformed and
    /// unexpected attributes.
    pub fn from_parts(name: &str, values: &BTreeMap<String, String>) -> Result<Op, String> {
        let op = Op::build(name, values)?;
        let expected: Vec<&str> = op.attributes().iter().map(|(k, _)| *k).collect();
        if let Some(extra) = values.keys().find(|k| !expected.contains(&k.as_str())) {
            return Err(format!("{name}: unexpected attribute `{extra}`"));
        }
        Ok(op)
    }

    /// [`Op::from_parts`] without the check for unexpected attributes (which prints the op's
    /// attributes, and so asks [`is_known_name`] about an unknown target: no recursion here).
    fn build(name: &str, values: &BTreeMap<String, String>) -> Result<Op, String> {
        let a = Attr { op: name, values };
        let op = match name {
            "input" => {
                let kind = values.get("kind").map(|s| s.as_str()).unwrap_or("");
                let kind = InputKind::ALL
                    .into_iter()
                    .find(|k| k.name() == kind)
                    .ok_or_else(|| format!("input: unknown kind `{kind}`"))?;
                Op::Input { kind, weight: a.opt_string("weight")?, layout: a.opt_dims("layout")? }
            }
            "unknown" => Op::Unknown {
                target: a.opt_string("target")?.ok_or("unknown needs attribute `target`")?,
                reason: a.opt_string("reason")?,
            },
            "full" => Op::Full { value: a.scalar("value")? },
            "constant" => {
                let hex = a.opt_string("data")?.ok_or("constant needs attribute `data` (a blake3 digest)")?;
                let data = TensorData::from_digest_hex(&hex).ok_or("constant: `data` must be 64 hex digits")?;
                Op::Constant { data }
            }
            "aten.arange" => Op::Arange { start: a.scalar("start")?, end: a.scalar("end")?, step: a.scalar("step")? },
            "aten.where" => Op::Where,
            "aten.clamp" => Op::Clamp { min: a.opt_scalar("min")?, max: a.opt_scalar("max")? },
            "convert" => Op::Convert { dtype: a.dtype("dtype")? },
            "copy" => Op::Copy,
            "aten.softmax" | "aten.log_softmax" => Op::Softmax { dim: a.int("dim")?, log: name == "aten.log_softmax" },
            "aten.layer_norm" => Op::LayerNorm {
                normalized_shape: a.ints("normalized_shape")?,
                eps: a.scalar("eps")?,
                has_weight: a.bool("has_weight")?,
                has_bias: a.bool("has_bias")?,
            },
            "aten.group_norm" => Op::GroupNorm {
                groups: a.int("groups")?,
                eps: a.scalar("eps")?,
                has_weight: a.bool("has_weight")?,
                has_bias: a.bool("has_bias")?,
            },
            "aten.batch_norm" => {
                Op::BatchNorm { eps: a.scalar("eps")?, has_weight: a.bool("has_weight")?, has_bias: a.bool("has_bias")? }
            }
            "aten.batch_norm_batch_stats" => Op::BatchNormBatchStats {
                eps: a.scalar("eps")?,
                has_weight: a.bool("has_weight")?,
                has_bias: a.bool("has_bias")?,
            },
            "aten.masked_scatter" => Op::MaskedScatter,
            "aten.cdist" => Op::Cdist { p: a.scalar("p")? },
            "aten.embedding_bag" => Op::EmbeddingBag {
                mode: a.int("mode")?,
                include_last_offset: a.bool("include_last_offset")?,
                padding_idx: a.opt_int("padding_idx")?,
                has_weights: a.bool("has_weights")?,
            },
            "aten.pdist" => Op::Pdist { p: a.scalar("p")? },
            "aten.mm" => Op::Mm,
            "aten.bmm" => Op::Bmm,
            "aten.addmm" => Op::Addmm,
            "aten.convolution" => Op::Convolution {
                stride: a.ints("stride")?.into(),
                padding: a.ints("padding")?.into(),
                dilation: a.ints("dilation")?.into(),
                transposed: a.bool("transposed")?,
                output_padding: a.ints("output_padding")?.into(),
                groups: a.int("groups")?,
                has_bias: a.bool("has_bias")?,
                channels_last: a.bool_or("channels_last", false)?,
            },
            "aten.max_pool" => Op::MaxPool {
                kernel: a.ints("kernel")?.into(),
                stride: a.ints("stride")?.into(),
                padding: a.ints("padding")?.into(),
                dilation: a.ints("dilation")?.into(),
                ceil_mode: a.bool("ceil_mode")?,
                indices: a.bool_or("indices", true)?,
                channels_last: a.bool_or("channels_last", false)?,
            },
            "aten.avg_pool" => Op::AvgPool {
                kernel: a.ints("kernel")?.into(),
                stride: a.ints("stride")?.into(),
                padding: a.ints("padding")?.into(),
                ceil_mode: a.bool("ceil_mode")?,
                count_include_pad: a.bool("count_include_pad")?,
                divisor_override: a.opt_int("divisor_override")?,
                channels_last: a.bool_or("channels_last", false)?,
            },
            "aten.adaptive_avg_pool" => Op::AdaptiveAvgPool { output_size: a.ints("output_size")? },
            "aten.upsample_nearest" => Op::UpsampleNearest { output_size: a.ints("output_size")? },
            "aten.view" => Op::View { shape: a.ints("shape")?.into() },
            "aten.permute" => Op::Permute { dims: a.ints("dims")?.into() },
            "aten.expand" => Op::Expand { sizes: a.ints("sizes")?.into() },
            "aten.broadcast_in_dim" => Op::BroadcastInDim { shape: a.ints("shape")?.into(), dims: a.ints("dims")?.into() },
            "aten.slice" => {
                Op::Slice { dim: a.int("dim")?, start: a.int("start")?, end: a.int("end")?, step: a.int("step")? }
            }
            "aten.select" => Op::Select { dim: a.int("dim")?, index: a.int("index")? },
            "dynamic_slice" => Op::DynamicSlice { dim: a.int("dim")?, size: a.int("size")? },
            "dynamic_update_slice" => Op::DynamicUpdateSlice { dim: a.int("dim")? },
            "aten.unsqueeze" => Op::Unsqueeze { dim: a.int("dim")? },
            "aten.squeeze" => Op::Squeeze { dims: a.ints("dims")?.into() },
            "aten.cat" => Op::Cat { dim: a.int("dim")? },
            "aten.split" => Op::Split { sizes: a.ints("sizes")?, dim: a.int("dim")? },
            "aten.embedding" => Op::Embedding,
            "aten.index" => Op::Index { present: a.bools("present")? },
            "aten.elu" => Op::Elu { alpha: a.scalar("alpha")?, scale: a.scalar("scale")?, input_scale: a.scalar("input_scale")? },
            "aten.leaky_relu" => Op::LeakyRelu { slope: a.scalar("slope")? },
            "aten.clamp_tensor" => Op::ClampTensor { has_min: a.bool("has_min")?, has_max: a.bool("has_max")? },
            "aten.copy" => Op::CopyInto,
            "aten.argmax" | "aten.argmin" => {
                Op::ArgReduce { max: name == "aten.argmax", dim: a.opt_int("dim")?, keepdim: a.bool("keepdim")? }
            }
            "aten.max" | "aten.min" => Op::MaxMin { max: name == "aten.max", dim: a.int("dim")?, keepdim: a.bool("keepdim")? },
            "fxhlo.softmax_stats" => Op::SoftmaxStats { dim: a.int("dim")? },
            "aten.var" => Op::Var { dims: a.ints("dims")?, correction: a.scalar("correction")?, keepdim: a.bool("keepdim")? },
            "aten.cumsum" => Op::Cumsum { dim: a.int("dim")?, dtype: a.opt_dtype("dtype")? },
            "aten.pad" => {
                let mode = match values.get("mode").map(|s| s.as_str()) {
                    Some("constant") => PadMode::Constant(a.scalar("value")?),
                    Some("reflect") => PadMode::Reflect,
                    Some("replicate") => PadMode::Replicate,
                    other => return Err(format!("aten.pad: unknown mode {other:?}")),
                };
                Op::Pad { pad: a.ints("pad")?, mode }
            }
            "aten.repeat" => Op::Repeat { repeats: a.ints("repeats")?.into() },
            "aten.flip" => Op::Flip { dims: a.ints("dims")?.into() },
            "aten.diagonal" => Op::Diagonal { offset: a.int("offset")?, dim1: a.int("dim1")?, dim2: a.int("dim2")? },
            "aten.as_strided" => Op::AsStrided { size: a.ints("size")?, stride: a.ints("stride")?, offset: a.int("offset")? },
            "aten.gather" => Op::Gather { dim: a.int("dim")? },
            "aten.index_select" => Op::IndexSelect { dim: a.int("dim")? },
            "aten.scatter" => {
                let r = values.get("reduce").map(|s| s.as_str()).unwrap_or("");
                let reduce = ScatterReduce::ALL.into_iter().find(|m| m.name() == r).ok_or_else(|| format!("aten.scatter: unknown reduce `{r}`"))?;
                Op::Scatter { dim: a.int("dim")?, reduce, include_self: a.bool("include_self")? }
            }
            "aten.index_put" => Op::IndexPut { present: a.bools("present")?, accumulate: a.bool("accumulate")? },
            "aten.select_scatter" => Op::SelectScatter { dim: a.int("dim")?, index: a.int("index")? },
            "aten.slice_scatter" => {
                Op::SliceScatter { dim: a.int("dim")?, start: a.int("start")?, end: a.int("end")?, step: a.int("step")? }
            }
            "aten.linalg_cholesky" => Op::Cholesky { upper: a.bool("upper")? },
            "aten.fft" => {
                let k = values.get("kind").map(|s| s.as_str()).unwrap_or("");
                let kind = FftKind::from_name(k).ok_or_else(|| format!("aten.fft: unknown kind `{k}` (fft, ifft, rfft, irfft)"))?;
                Op::Fft { kind, length: a.ints("length")? }
            }
            "higher_order.cond" => Op::Cond { then_region: a.region("then_region")?, else_region: a.region("else_region")? },
            "higher_order.while_loop" => Op::While { cond: a.region("cond")?, body: a.region("body")? },
            "fxhlo.rng_bit_generator" => Op::RngBitGenerator { shape: a.ints("shape")?, dtype: a.dtype("dtype")? },
            "aten.linalg_solve_triangular" => {
                Op::TriangularSolve { upper: a.bool("upper")?, left: a.bool("left")?, unit_diagonal: a.bool("unit_diagonal")? }
            }
            "aten.sort" => Op::Sort { dim: a.int("dim")?, descending: a.bool("descending")? },
            "aten.topk" => Op::Topk { k: a.int("k")?, dim: a.int("dim")?, largest: a.bool("largest")? },
            "aten.grid_sample" => {
                Op::GridSample { mode: a.int("mode")?, padding: a.int("padding")?, align_corners: a.bool("align_corners")? }
            }
            "aten.upsample_bilinear" => {
                Op::UpsampleBilinear { output_size: a.ints("output_size")?, align_corners: a.bool("align_corners")? }
            }
            _ => {
                if let Some(u) = UnaryOp::from_name(name) {
                    Op::Unary(u)
                } else if let Some(b) = BinaryOp::from_name(name) {
                    Op::Binary(b)
                } else if let Some(c) = CompareOp::from_name(name) {
                    Op::Compare(c)
                } else if let Some(r) = ReduceOp::from_name(name) {
                    Op::Reduce { op: r, dims: a.ints("dims")?.into(), keepdim: a.bool("keepdim")?, dtype: a.opt_dtype("dtype")? }
                } else {
                    Op::Unknown { target: name.to_string(), reason: a.opt_string("reason")? }
                }
            }
        };
        Ok(op)
    }
}

/// Whether an unknown target must be written as `unknown {target = "..."}`: it would read back
/// as a known op, or it is not one plain token (empty, spaces, `%`, quotes, ...).
fn needs_quoting(target: &str) -> bool {
    is_known_name(target) || target.is_empty() || !target.chars().all(|c| c.is_ascii_alphanumeric() || "._:".contains(c))
}

/// Whether `name` is the text name of a known op (so an unknown target spelled the same must
/// be written in the `unknown {target = ...}` form).
fn is_known_name(name: &str) -> bool {
    // Derived from the parser itself, so a new op cannot be forgotten here: a name it does not
    // read back as `Op::Unknown` (a known op, with or without its attributes) is known.
    !matches!(Op::build(name, &BTreeMap::new()), Ok(Op::Unknown { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unknown target spelled like a known op is quoted, so it reads back as unknown.
    #[test]
    fn unknown_targets_named_like_known_ops_are_quoted() {
        for name in ["constant", "fxhlo.rng_bit_generator", "higher_order.cond", "aten.fft", "aten.mm", "input", "unknown", "relu"] {
            let known = !matches!(Op::build(name, &BTreeMap::new()), Ok(Op::Unknown { .. }));
            assert_eq!(needs_quoting(name), known, "{name}");
        }
        for name in ["constant", "fxhlo.rng_bit_generator", "higher_order.while_loop", "aten.linalg_cholesky", "aten.broadcast_in_dim"] {
            assert!(needs_quoting(name), "{name} is an op's text name");
        }
        assert!(!needs_quoting("aten.frobnicate.default"));
    }

    /// The reason is an attribute like any other: printed when present, read back, and part of
    /// the op's identity (two calls refused for different reasons are different ops).
    #[test]
    fn an_unknown_reason_is_an_attribute() {
        let with = Op::Unknown { target: "aten.mm".into(), reason: Some("argument `x` is a \"list\"".into()) };
        let attrs: BTreeMap<String, String> = with.attributes().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        assert_eq!(attrs.keys().map(String::as_str).collect::<Vec<_>>(), ["reason", "target"]);
        assert_eq!(Op::from_parts(with.text_name(), &attrs), Ok(with.clone()));
        let without = Op::Unknown { target: "aten.mm".into(), reason: None };
        assert!(without.attributes().iter().all(|(k, _)| *k != "reason"));
        assert_ne!(with, without);
    }
}
