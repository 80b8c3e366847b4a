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

use super::view::{span, ArgView, DimView, InputView, MetaView, NodeView, SourceView, Span, TraceView};
use super::InputKindSpec;

/// A decoding failure. What was wrong is kept by the reader ([`Reader::why`]) and where is its
/// position, which stops there: so every `Result` of the decoder is a register or two wide
/// (a `String` error made each returned `&str` or integer a trip through memory).
struct Fail;

type DecodeResult<T> = Result<T, Fail>;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Set by [`Reader::fail`].
    why: &'static str,
}

impl<'a> Reader<'a> {
    #[cold]
    fn fail<T>(&mut self, what: &'static str) -> DecodeResult<T> {
        self.why = what;
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

    /// Reads a length, then that many items with `item`.
    fn each(&mut self, item: impl FnMut(&mut Self) -> DecodeResult<()>) -> DecodeResult<()> {
        let n = self.len()?;
        self.items(n, item)
    }

    /// Reads `n` items with `item`.
    fn items(&mut self, n: usize, mut item: impl FnMut(&mut Self) -> DecodeResult<()>) -> DecodeResult<()> {
        for _ in 0..n {
            item(self)?;
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
/// what was wrong and at which byte of the body.
pub(crate) fn decode_view(body: &[u8]) -> Result<(TraceView<'_>, usize), String> {
    if body.len() >= u32::MAX as usize {
        return Err("a trace body of 4 GiB or more is not supported".into());
    }
    let r = &mut Reader { buf: body, pos: 0, why: "" };
    decode(r).map_err(|Fail| format!("{} at byte {}", r.why, r.pos))
}

fn decode<'a>(r: &mut Reader<'a>) -> DecodeResult<(TraceView<'a>, usize)> {
    let body = r.buf;
    let mut v = TraceView { format: r.str()?, version: r.u32()?, name: r.str()?, ..Default::default() };
    // Room for a typical trace (per node some 80 bytes: 2 arguments, a meta of 2 or 3 sizes,
    // a few ints), so that the pools rarely grow; a single reservation is under the body's
    // size, all of them under three times it. The inputs and nodes get what their lengths say.
    let b = body.len();
    v.pools.args.reserve(b / 32);
    v.pools.metas.reserve(b / 64);
    v.pools.dims.reserve(b / 24);
    v.pools.ints.reserve(b / 48);
    v.decomposition_table = r.option(Reader::str)?;
    // Reserved at an input per 24 bytes left and a node per 32 at most: real ones take more
    // (a name, a target, a meta), and a corrupt length reserves under three times the body.
    let n = r.len()?;
    v.inputs.reserve(r.room(n, 24));
    r.items(n, |r| {
        let (name, kind) = (r.str()?, input_kind(r)?);
        let weight = r.option(Reader::str)?;
        let meta = meta(r, &mut v)?;
        v.inputs.push(InputView { name, kind, weight, meta });
        Ok(())
    })?;
    let n = r.len()?;
    v.nodes.reserve(r.room(n, 32));
    r.items(n, |r| {
        let node = node(r, &mut v)?;
        v.nodes.push(node);
        Ok(())
    })?;
    v.outputs = args(r, &mut v)?;
    Ok((v, r.pos))
}

fn input_kind(r: &mut Reader) -> DecodeResult<InputKindSpec> {
    Ok(match r.u32()? {
        0 => InputKindSpec::UserInput,
        1 => InputKindSpec::Parameter,
        2 => InputKindSpec::Buffer,
        3 => InputKindSpec::Constant,
        _ => return r.fail("invalid input kind"),
    })
}

fn meta<'a>(r: &mut Reader<'a>, v: &mut TraceView<'a>) -> DecodeResult<MetaView<'a>> {
    let dtype = r.str()?;
    let start = v.pools.dims.len();
    r.each(|r| {
        let d = match r.u32()? {
            0 => DimView::Static(r.i64()?),
            1 => DimView::Symbolic(r.str()?),
            _ => return r.fail("invalid size variant"),
        };
        v.pools.dims.push(d);
        Ok(())
    })?;
    let sizes = span(start, v.pools.dims.len());
    r.each(|r| r.i64().map(drop))?; // strides
    Ok(MetaView { dtype, sizes, storage_offset: r.i64()? })
}

fn node<'a>(r: &mut Reader<'a>, v: &mut TraceView<'a>) -> DecodeResult<NodeView<'a>> {
    let (name, target) = (r.str()?, r.str()?);
    let args = args(r, v)?;
    let start = v.pools.kwargs.len();
    r.each(|r| {
        let key = r.str()?;
        let a = arg(r, v)?;
        v.pools.kwargs.push((key, a));
        Ok(())
    })?;
    let kwargs = sorted_unique(&mut v.pools.kwargs, start);
    let start = v.pools.metas.len();
    r.each(|r| {
        let m = r.option(|r| meta(r, v))?;
        v.pools.metas.push(m);
        Ok(())
    })?;
    let meta = span(start, v.pools.metas.len());
    let source = r.option(|r| Ok(SourceView { file: r.str()?, line: r.u32()? }))?;
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

/// A list of arguments. An argument's own list goes to another pool (names, ints, ...), never
/// to the argument pool, so a node's arguments are contiguous there.
fn args<'a>(r: &mut Reader<'a>, v: &mut TraceView<'a>) -> DecodeResult<Span> {
    let start = v.pools.args.len();
    r.each(|r| {
        let a = arg(r, v)?;
        v.pools.args.push(a);
        Ok(())
    })?;
    Ok(span(start, v.pools.args.len()))
}

fn arg<'a>(r: &mut Reader<'a>, v: &mut TraceView<'a>) -> DecodeResult<ArgView<'a>> {
    let p = &mut v.pools;
    macro_rules! list {
        ($pool:ident, $item:expr) => {{
            let start = p.$pool.len();
            r.each(|r| {
                let x = $item(r)?;
                p.$pool.push(x);
                Ok(())
            })?;
            span(start, p.$pool.len())
        }};
    }
    Ok(match r.u32()? {
        0 => ArgView::Tensor(r.str()?),
        1 => ArgView::Tensors(list!(names, |r: &mut Reader<'a>| r.str().map(Some))),
        2 => ArgView::OptionalTensors(list!(names, |r: &mut Reader<'a>| r.option(Reader::str))),
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
        // A format string of 5 bytes announced, 2 present.
        assert_eq!(decode_view(&[5, b'f', b'x']).err().as_deref(), Some("unexpected end of input at byte 1"));
        // Format "x", version 0, name "", no decomposition table, then an invalid length tag.
        assert_eq!(decode_view(&[1, b'x', 0, 0, 0, 255]).err().as_deref(), Some("invalid integer encoding at byte 6"));
        assert_eq!(decode_view(&[1, 0xff]).err().as_deref(), Some("invalid UTF-8 in a string at byte 2"));
    }
}
