//! A decoder of the bincode trace body straight into a [`TraceView`], written by hand for the
//! fixed schema: no serde visitors, no per-node allocation, strings borrowed from the input.
//!
//! It reads exactly the layout `bincode::serde` writes for [`super::Trace`] with the standard
//! configuration (`docs/trace-format.md`), and accepts exactly what that decoder accepts (the
//! fuzz tests compare the two on every case):
//!
//! - unsigned integers are varints: a byte up to 250 is the value, 251/252/253 announce a
//!   little-endian u16/u32/u64 (a u32 field refuses 253), anything else is an error; lengths
//!   and enum variant indices are such varints (u64 and u32), signed integers zigzag-encoded;
//! - `f64` is 8 little-endian bytes; `bool` and `Option` tags are one byte, 0 or 1;
//! - a string is a length and UTF-8 bytes; a list or map a length and its items; a struct
//!   its fields in order.
//!
//! A length is never trusted for an allocation: items are pushed one by one onto the pools,
//! each taking at least one input byte, so a corrupt length fails at the end of the input; the
//! input and node lists reserve their length only up to what the bytes left could hold.
//!
//! A failure says what was wrong, where, and what was being read, from the innermost part out:
//! `unexpected end of input reading the target of node 3 `add_1``, at the byte where decoding
//! stopped. A decode tracks no context: after a failure the body is decoded once more by the
//! same code with `Reader<_, true>`, whose [`Reader::within`] records the parts on the way out
//! (tracking in the first pass made a successful decode nearly twice as slow).

use super::view::{span, ArgView, DimView, InputView, MetaView, NodeView, SourceView, Span, SubgraphView, TraceView};
use super::InputKindSpec;

/// A decoding failure. What was wrong is kept by the reader ([`Reader::why`], [`Reader::trail`])
/// and where is its position, which stops there: so every `Result` of the decoder is a register
/// or two wide (a `String` error made each returned `&str` or integer a trip through memory).
struct Fail;

/// Why [`decode_view`] failed: what was wrong and what was being read (`message`), at which
/// byte of the body (`offset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub offset: usize,
    pub message: String,
}

type DecodeResult<T> = Result<T, Fail>;

/// `TRACK`: whether [`Reader::within`] records what was being read. The decoder runs without
/// (so a successful decode carries no context at all) and, after a failure, once more with, to
/// say where it failed.
struct Reader<'a, const TRACK: bool> {
    buf: &'a [u8],
    pos: usize,
    /// Set by [`Reader::fail`].
    why: &'static str,
    /// What was being read when it failed, innermost first (filled by [`Reader::within`]).
    trail: Vec<String>,
}

impl<'a, const TRACK: bool> Reader<'a, TRACK> {
    #[cold]
    fn fail<T>(&mut self, what: &'static str) -> DecodeResult<T> {
        self.why = what;
        Err(Fail)
    }

    /// Runs `part`; if it fails and the reader tracks, records that `what()` was being read.
    #[inline(always)]
    fn within<T>(&mut self, what: impl FnOnce() -> String, part: impl FnOnce(&mut Self) -> DecodeResult<T>) -> DecodeResult<T> {
        if !TRACK {
            return part(self);
        }
        match part(self) {
            Ok(x) => Ok(x),
            Err(Fail) => self.note(what),
        }
    }

    /// Out of line, with the formatting of `what`, so that the success path stays small.
    #[cold]
    #[inline(never)]
    fn note<T>(&mut self, what: impl FnOnce() -> String) -> DecodeResult<T> {
        self.trail.push(what());
        Err(Fail)
    }

    #[inline]
    fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        match self.buf.get(self.pos..self.pos.saturating_add(n)) {
            Some(b) if self.pos.checked_add(n).is_some() => {
                self.pos += n;
                Ok(b)
            }
            _ => self.fail("unexpected end of input"),
        }
    }

    fn byte(&mut self) -> DecodeResult<u8> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> DecodeResult<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// A varint of at most `max_tag` (252 for u32, 253 for u64).
    #[inline(always)]
    fn varint(&mut self, max_tag: u8) -> DecodeResult<u64> {
        // Almost every varint of a trace (lengths, tags, small sizes) is one byte: inline that
        // case at every call site, leave the rest to a call.
        match self.buf.get(self.pos) {
            Some(&b) if b <= 250 => {
                self.pos += 1;
                Ok(b as u64)
            }
            _ => self.varint_long(max_tag),
        }
    }

    #[inline(never)]
    fn varint_long(&mut self, max_tag: u8) -> DecodeResult<u64> {
        match self.byte()? {
            b @ 0..=250 => Ok(b as u64),
            251 => Ok(u16::from_le_bytes(self.array()?) as u64),
            252 => Ok(u32::from_le_bytes(self.array()?) as u64),
            253 if max_tag >= 253 => Ok(u64::from_le_bytes(self.array()?)),
            _ => self.fail("invalid integer encoding"),
        }
    }

    fn u32(&mut self) -> DecodeResult<u32> {
        Ok(self.varint(252)? as u32)
    }

    fn len(&mut self) -> DecodeResult<usize> {
        let n = self.varint(253)?;
        usize::try_from(n).or_else(|_| self.fail("length out of range"))
    }

    fn i64(&mut self) -> DecodeResult<i64> {
        let n = self.varint(253)?;
        Ok(if n % 2 == 0 { (n / 2) as i64 } else { !(n / 2) as i64 })
    }

    fn f64(&mut self) -> DecodeResult<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    fn bool(&mut self) -> DecodeResult<bool> {
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => self.fail("invalid bool"),
        }
    }

    fn str(&mut self) -> DecodeResult<&'a str> {
        let n = self.len()?;
        let bytes = self.take(n)?;
        // Names, targets and dtypes are short and ASCII: `ascii` checks them in a fraction of
        // `from_utf8`'s fixed cost, which still validates the others.
        if ascii(bytes) {
            // SAFETY: every byte is ASCII, so the bytes are valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        std::str::from_utf8(bytes).or_else(|_| self.fail("invalid UTF-8 in a string"))
    }

    fn option<T>(&mut self, mut f: impl FnMut(&mut Self) -> DecodeResult<T>) -> DecodeResult<Option<T>> {
        match self.byte()? {
            0 => Ok(None),
            1 => f(self).map(Some),
            _ => self.fail("invalid option tag"),
        }
    }

    /// Reads a length, then that many items with `item` (given each item's index).
    fn each(&mut self, item: impl FnMut(&mut Self, usize) -> DecodeResult<()>) -> DecodeResult<()> {
        let n = self.len()?;
        self.items(n, item)
    }

    /// Reads `n` items with `item` (given each item's index).
    fn items(&mut self, n: usize, mut item: impl FnMut(&mut Self, usize) -> DecodeResult<()>) -> DecodeResult<()> {
        for i in 0..n {
            item(self, i)?;
        }
        Ok(())
    }

    /// A list's length `n` as a number of items worth reserving room for: `n`, but no more than
    /// the input left could hold at `min_bytes` per item (a corrupt length allocates nothing
    /// the input could not back).
    fn room(&self, n: usize, min_bytes: usize) -> usize {
        n.min((self.buf.len() - self.pos) / min_bytes)
    }
}

/// `b.is_ascii()`, in a few instructions for the short strings of a trace (names, targets,
/// dtypes): the high bits of two overlapping words cover 4 to 16 bytes.
#[inline(always)]
fn ascii(b: &[u8]) -> bool {
    let n = b.len();
    if (8..=16).contains(&n) {
        let w = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0xff; 8]));
        (w(&b[..8]) | w(&b[n - 8..])) & 0x8080_8080_8080_8080 == 0
    } else if (4..8).contains(&n) {
        let w = |s: &[u8]| u32::from_le_bytes(s.try_into().unwrap_or([0xff; 4]));
        (w(&b[..4]) | w(&b[n - 4..])) & 0x8080_8080 == 0
    } else {
        b.is_ascii()
    }
}

/// Decodes a bincode trace body (after the header); returns the view and the bytes read, or
/// what was wrong, what was being read and at which byte of the body.
pub(crate) fn decode_view(body: &[u8]) -> Result<(TraceView<'_>, usize), Failure> {
    if body.len() >= u32::MAX as usize {
        return Err(Failure { offset: 0, message: "a trace body of 4 GiB or more is not supported".into() });
    }
    let fast = &mut Reader::<false> { buf: body, pos: 0, why: "", trail: Vec::new() };
    match decode(fast) {
        Ok(decoded) => Ok(decoded),
        Err(Fail) => {
            // Again, tracking the context: the same bytes fail at the same place.
            let r = &mut Reader::<true> { buf: body, pos: 0, why: "", trail: Vec::new() };
            let _ = decode(r);
            debug_assert_eq!((r.pos, r.why), (fast.pos, fast.why));
            let mut message = r.why.to_string();
            if !r.trail.is_empty() {
                message.push_str(" reading ");
                message.push_str(&r.trail.join(" of "));
            }
            Err(Failure { offset: r.pos, message })
        }
    }
}

/// `|| text.to_string()`: a context that needs no formatting.
fn ctx(text: &'static str) -> impl FnOnce() -> String {
    move || text.to_string()
}

fn decode<'a, const TR: bool>(r: &mut Reader<'a, TR>) -> DecodeResult<(TraceView<'a>, usize)> {
    let body = r.buf;
    let format = r.within(ctx("the format string"), Reader::str)?;
    let version = r.within(ctx("the schema version"), Reader::u32)?;
    let name = r.within(ctx("the graph name"), Reader::str)?;
    let mut v = TraceView { format, version, name, ..Default::default() };
    // Room for a typical trace (per node some 80 bytes: 2 arguments, a meta of 2 or 3 sizes,
    // a few ints), so that the pools rarely grow; a single reservation is under the body's
    // size, all of them under three times it. The inputs and nodes get what their lengths say.
    let b = body.len();
    v.pools.args.reserve(b / 32);
    v.pools.metas.reserve(b / 64);
    v.pools.dims.reserve(b / 24);
    v.pools.ints.reserve(b / 48);
    v.decomposition_table = r.within(ctx("the decomposition table"), |r| r.option(Reader::str))?;
    v.inputs = input_list(r, &mut v)?;
    v.nodes = node_list(r, &mut v)?;
    v.outputs = args(r, &mut v, "graph output")?;
    let n = r.within(ctx("the number of subgraphs"), Reader::len)?;
    r.items(n, |r, i| {
        let name = r.within(|| format!("the name of subgraph {i}"), Reader::str)?;
        let g = r.within(
            || format!("subgraph {i} `{name}`"),
            |r| {
                let inputs = input_list(r, &mut v)?;
                let nodes = node_list(r, &mut v)?;
                let outputs = args(r, &mut v, "output")?;
                Ok(SubgraphView { name, inputs, nodes, outputs })
            },
        )?;
        v.subgraphs.push(g);
        Ok(())
    })?;
    Ok((v, r.pos))
}

/// A list of inputs (of the trace or of a subgraph).
fn input_list<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>) -> DecodeResult<Vec<InputView<'a>>> {
    // Reserved at an input per 24 bytes left at most: real ones take more (a name, a meta),
    // and a corrupt length reserves under three times the body.
    let n = r.within(ctx("the number of inputs"), Reader::len)?;
    let mut inputs = Vec::with_capacity(r.room(n, 24));
    r.items(n, |r, i| {
        let name = r.within(|| format!("the name of input {i}"), Reader::str)?;
        let input = r.within(
            || format!("input {i} `{name}`"),
            |r| {
                let kind = r.within(ctx("the kind"), input_kind)?;
                let weight = r.within(ctx("the weight name"), |r| r.option(Reader::str))?;
                let meta = r.within(ctx("the meta"), |r| meta(r, v))?;
                Ok(InputView { name, kind, weight, meta })
            },
        )?;
        inputs.push(input);
        Ok(())
    })?;
    Ok(inputs)
}

/// A list of nodes (of the trace or of a subgraph), reserved at a node per 32 bytes left at most.
fn node_list<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>) -> DecodeResult<Vec<NodeView<'a>>> {
    let n = r.within(ctx("the number of nodes"), Reader::len)?;
    let mut nodes = Vec::with_capacity(r.room(n, 32));
    r.items(n, |r, i| {
        let node = node(r, v, i)?;
        nodes.push(node);
        Ok(())
    })?;
    Ok(nodes)
}

fn input_kind<const TR: bool>(r: &mut Reader<'_, TR>) -> DecodeResult<InputKindSpec> {
    Ok(match r.u32()? {
        0 => InputKindSpec::UserInput,
        1 => InputKindSpec::Parameter,
        2 => InputKindSpec::Buffer,
        3 => InputKindSpec::Constant,
        _ => return r.fail("invalid input kind"),
    })
}

fn meta<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>) -> DecodeResult<MetaView<'a>> {
    let dtype = r.within(ctx("the dtype"), Reader::str)?;
    let start = v.pools.dims.len();
    let n = r.within(ctx("the number of sizes"), Reader::len)?;
    r.items(n, |r, k| {
        let d = r.within(
            || format!("size {k}"),
            |r| match r.u32()? {
                0 => Ok(DimView::Static(r.i64()?)),
                1 => Ok(DimView::Symbolic(r.str()?)),
                _ => r.fail("invalid size variant"),
            },
        )?;
        v.pools.dims.push(d);
        Ok(())
    })?;
    let sizes = span(start, v.pools.dims.len());
    r.within(ctx("the strides"), |r| r.each(|r, _| r.i64().map(drop)))?;
    let storage_offset = r.within(ctx("the storage offset"), Reader::i64)?;
    Ok(MetaView { dtype, sizes, storage_offset })
}

/// Node `i`: its name, then the rest within "node `i` `name`".
fn node<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>, i: usize) -> DecodeResult<NodeView<'a>> {
    let name = r.within(|| format!("the name of node {i}"), Reader::str)?;
    r.within(|| format!("node {i} `{name}`"), |r| node_body(r, v, name))
}

fn node_body<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>, name: &'a str) -> DecodeResult<NodeView<'a>> {
    let target = r.within(ctx("the target"), Reader::str)?;
    let args = args(r, v, "argument")?;
    let start = v.pools.kwargs.len();
    let n = r.within(ctx("the number of keyword arguments"), Reader::len)?;
    r.items(n, |r, k| {
        let key = r.within(|| format!("the name of keyword argument {k}"), Reader::str)?;
        let a = r.within(|| format!("keyword argument `{key}`"), |r| arg(r, v))?;
        v.pools.kwargs.push((key, a));
        Ok(())
    })?;
    let kwargs = sorted_unique(&mut v.pools.kwargs, start);
    let start = v.pools.metas.len();
    let n = r.within(ctx("the number of result metas"), Reader::len)?;
    r.items(n, |r, k| {
        let m = r.within(|| format!("result meta {k}"), |r| r.option(|r| meta(r, v)))?;
        v.pools.metas.push(m);
        Ok(())
    })?;
    let meta = span(start, v.pools.metas.len());
    let source = r.within(ctx("the source location"), |r| r.option(|r| Ok(SourceView { file: r.str()?, line: r.u32()? })))?;
    Ok(NodeView { name, target, args, kwargs, meta, source })
}

/// Sorts `kwargs[start..]` by name and keeps the last of equal names, as a `BTreeMap` does.
fn sorted_unique(kwargs: &mut Vec<(&str, ArgView)>, start: usize) -> Span {
    let tail = &mut kwargs[start..];
    tail.sort_by(|a, b| a.0.cmp(b.0)); // stable: equal names stay in input order
    let mut kept = start;
    for i in start..kwargs.len() {
        if i + 1 < kwargs.len() && kwargs[i + 1].0 == kwargs[i].0 {
            continue;
        }
        kwargs[kept] = kwargs[i];
        kept += 1;
    }
    kwargs.truncate(kept);
    span(start, kept)
}

/// A list of arguments, each called `what <index>` in errors. An argument's own list goes to
/// another pool (names, ints, ...), never to the argument pool, so a node's arguments are
/// contiguous there.
fn args<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>, what: &'static str) -> DecodeResult<Span> {
    let start = v.pools.args.len();
    let n = r.within(|| format!("the number of {what}s"), Reader::len)?;
    r.items(n, |r, k| {
        let a = r.within(|| format!("{what} {k}"), |r| arg(r, v))?;
        v.pools.args.push(a);
        Ok(())
    })?;
    Ok(span(start, v.pools.args.len()))
}

fn arg<'a, const TR: bool>(r: &mut Reader<'a, TR>, v: &mut TraceView<'a>) -> DecodeResult<ArgView<'a>> {
    let p = &mut v.pools;
    macro_rules! list {
        ($pool:ident, $item:expr) => {{
            let start = p.$pool.len();
            r.each(|r, _| {
                let x = $item(r)?;
                p.$pool.push(x);
                Ok(())
            })?;
            span(start, p.$pool.len())
        }};
    }
    Ok(match r.u32()? {
        0 => ArgView::Tensor(r.str()?),
        1 => ArgView::Tensors(list!(names, |r: &mut Reader<'a, TR>| r.str().map(Some))),
        2 => ArgView::OptionalTensors(list!(names, |r: &mut Reader<'a, TR>| r.option(Reader::str))),
        3 => ArgView::Int(r.i64()?),
        4 => ArgView::Ints(list!(ints, Reader::i64)),
        5 => ArgView::Float(r.f64()?),
        6 => ArgView::Floats(list!(floats, Reader::f64)),
        7 => ArgView::Bool(r.bool()?),
        8 => ArgView::Bools(list!(bools, Reader::bool)),
        9 => ArgView::String(r.str()?),
        10 => ArgView::Dtype(r.str()?),
        11 => ArgView::Device(r.str()?),
        12 => ArgView::MemoryFormat(r.str()?),
        13 => ArgView::None,
        14 => ArgView::Graph(r.str()?),
        _ => return r.fail("invalid argument variant"),
    })
}

#[cfg(test)]
mod tests {
    use super::{ascii, decode_view};

    #[test]
    fn ascii_agrees_with_std() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        for n in 0..=text.len() {
            for i in 0..n {
                let mut b = text.as_bytes()[..n].to_vec();
                assert!(ascii(&b));
                b[i] = 0xc3;
                assert!(!ascii(&b), "non-ASCII byte {i} of {n}");
            }
        }
    }

    #[test]
    fn errors_say_what_and_where() {
        let err = |body: &[u8]| decode_view(body).err().map(|f| (f.offset, f.message));
        let at = |offset: usize, message: &str| Some((offset, message.to_string()));
        // A format string of 5 bytes announced, 2 present.
        assert_eq!(err(&[5, b'f', b'x']), at(1, "unexpected end of input reading the format string"));
        // Format "x", version 0, name "", no decomposition table, then an invalid length tag.
        assert_eq!(err(&[1, b'x', 0, 0, 0, 255]), at(6, "invalid integer encoding reading the number of inputs"));
        assert_eq!(err(&[1, 0xff]), at(2, "invalid UTF-8 in a string reading the format string"));
        // One input `a` (a parameter named `w`, dtype "f32", one size: Static, then the end).
        let input = [1, b'x', 0, 0, 0, 1, 1, b'a', 1, 1, 1, b'w', 3, b'f', b'3', b'2', 1, 0];
        assert_eq!(err(&input), at(18, "unexpected end of input reading size 0 of the meta of input 0 `a`"));
        // No inputs, one node `n` whose target is cut short.
        let node = [1, b'x', 0, 0, 0, 0, 1, 1, b'n', 9, b'a'];
        assert_eq!(err(&node), at(10, "unexpected end of input reading the target of node 0 `n`"));
        // Node `n`, target "t", one argument of an unknown variant.
        let arg = [1, b'x', 0, 0, 0, 0, 1, 1, b'n', 1, b't', 1, 99];
        assert_eq!(err(&arg), at(13, "invalid argument variant reading argument 0 of node 0 `n`"));
    }
}
