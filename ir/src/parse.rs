//! The parser of the IR text format (the inverse of [`crate::print()`]). Golden tests and
//! hand-written test graphs depend on it; `parse(print(g))` prints back byte-identically.
//!
//! Grammar, one statement per line (`//` starts a comment line):
//! ```text
//! graph @NAME {
//!   %NAME = OP [%V, ...] [{KEY = VALUE, ...}] : TYPE | (TYPE, ...) [loc("FILE":LINE)]
//!   return %V, ...
//!   region N {          (the graph's regions, numbered from 0, each a graph of this grammar)
//!     ...
//!   }
//! }
//! ```
//! where a value `%V` is `%name` or `%name#k` for result `k` of a multi-result node.

use std::collections::{BTreeMap, HashMap};

use crate::graph::{Graph, SourceLoc, ValueRef};
use crate::op::Op;
use crate::types::{DType, TensorType};
use crate::{Error, Result};

/// Parses one graph from IR text and verifies it.
pub fn parse(text: &str) -> Result<Graph> {
    let mut p = Parser { open: Vec::new(), graph: None };
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        p.statement(line).map_err(|message| Error::Parse { line: i + 1, message })?;
    }
    let graph = match (p.graph, p.open.is_empty()) {
        (Some(g), true) => g,
        (None, true) => return Err(Error::Parse { line: 1, message: "no `graph @name {` header".into() }),
        (_, false) => return Err(Error::Parse { line: text.lines().count(), message: "missing closing `}`".into() }),
    };
    crate::verify(&graph)?;
    Ok(graph)
}

/// A graph being parsed (the top one or a region) and the values defined in it so far.
struct Open {
    graph: Graph,
    values: HashMap<String, ValueRef>,
}

struct Parser {
    /// The graphs whose `}` is still to come, outermost first.
    open: Vec<Open>,
    /// The top graph, once closed.
    graph: Option<Graph>,
}

type R<T> = std::result::Result<T, String>;

impl Parser {
    fn statement(&mut self, line: &str) -> R<()> {
        if self.graph.is_some() {
            return Err("text after the closing `}`".into());
        }
        if self.open.is_empty() {
            let name = line
                .strip_prefix("graph @")
                .and_then(|s| s.strip_suffix('{'))
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .ok_or("expected `graph @name {`")?;
            self.open.push(Open { graph: Graph::new(name), values: HashMap::new() });
            return Ok(());
        }
        if line == "}" {
            let closed = self.open.pop().ok_or("unbalanced `}`")?.graph;
            match self.open.last_mut() {
                Some(parent) => {
                    parent.graph.add_region(closed);
                }
                None => self.graph = Some(closed),
            }
            return Ok(());
        }
        if let Some(index) = line.strip_prefix("region ").and_then(|s| s.strip_suffix('{')) {
            let parent = &self.open.last().ok_or("a region outside a graph")?.graph;
            let want = parent.regions().len();
            if index.trim().parse::<usize>().ok() != Some(want) {
                return Err(format!("expected `region {want} {{` (regions are numbered in order)"));
            }
            self.open.push(Open { graph: Graph::new(format!("region{want}")), values: HashMap::new() });
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("return") {
            let outputs = rest.split(',').map(|v| self.value(v.trim())).collect::<R<Vec<_>>>()?;
            return self.current()?.graph.set_outputs(outputs).map_err(|e| e.to_string());
        }
        self.node(line)
    }

    fn current(&mut self) -> R<&mut Open> {
        self.open.last_mut().ok_or_else(|| "statement before the `graph` header".to_string())
    }

    fn value(&self, text: &str) -> R<ValueRef> {
        let text = text.strip_prefix('%').ok_or_else(|| format!("expected a value `%name`, found `{text}`"))?;
        let (name, result) = match text.split_once('#') {
            Some((n, k)) => (n, k.parse::<u32>().map_err(|_| format!("bad result index in `%{text}`"))?),
            None => (text, 0),
        };
        let values = &self.open.last().ok_or("a value outside a graph")?.values;
        let v = values.get(name).ok_or_else(|| format!("`%{name}` is not defined above"))?;
        Ok(ValueRef { node: v.node, result })
    }

    fn node(&mut self, line: &str) -> R<()> {
        let mut s = Scanner(line);
        s.expect("%")?;
        let name = s.take_while(|c| !c.is_whitespace() && c != '=').to_string();
        s.expect("=")?;
        let op_name = s.take_while(|c| !c.is_whitespace()).to_string();
        let mut operands = Vec::new();
        while s.peek() == Some('%') {
            let v = s.take_while(|c| c != ',' && !c.is_whitespace());
            operands.push(self.value(v)?);
            if s.peek() == Some(',') {
                s.expect(",")?;
            }
        }
        let mut attrs = BTreeMap::new();
        if s.peek() == Some('{') {
            for (k, v) in split_top(s.balanced('{', '}')?)? {
                if attrs.insert(k.clone(), v).is_some() {
                    return Err(format!("attribute `{k}` given twice"));
                }
            }
        }
        s.expect(":")?;
        let (types_text, loc_text) = match s.rest().find("loc(") {
            Some(i) => (&s.rest()[..i], Some(&s.rest()[i..])),
            None => (s.rest(), None),
        };
        let results = parse_types(types_text.trim())?;
        let source = loc_text.map(parse_loc).transpose()?;
        // An input's bound value (`value = "<digest>"`) is the graph's, not the op's.
        let value = match op_name.as_str() {
            "input" => attrs.remove("value").map(|v| unquote_digest(&v)).transpose()?,
            _ => None,
        };
        let op = Op::from_parts(&op_name, &attrs)?;
        let open = self.current()?;
        let graph = &mut open.graph;
        let id = match op {
            Op::Input { kind, weight, layout } => {
                let [ty] = <[TensorType; 1]>::try_from(results).map_err(|_| "an input has exactly one type")?;
                if !operands.is_empty() {
                    return Err("an input takes no operands".into());
                }
                let id = graph.add_input(&name, kind, weight, ty, source);
                if let Op::Input { layout: slot, .. } = &mut graph.node_mut(id).op {
                    *slot = layout;
                }
                if let Some(data) = value {
                    graph.bind_input(id, data);
                }
                id
            }
            op => graph.add_node(&name, op, &operands, results, source).map_err(|e| e.to_string())?,
        };
        if open.values.insert(name.clone(), ValueRef::first(id)).is_some() {
            return Err(format!("`%{name}` is defined twice"));
        }
        Ok(())
    }
}

/// Data named by a quoted digest (`"<64 hex digits>"`), bytes missing.
fn unquote_digest(text: &str) -> R<crate::TensorData> {
    text.trim()
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .and_then(crate::TensorData::from_digest_hex)
        .ok_or_else(|| format!("expected a quoted blake3 digest (64 hex digits), found `{text}`"))
}

/// A cursor over one line.
struct Scanner<'a>(&'a str);

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        self.0 = self.0.trim_start();
    }
    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.0.chars().next()
    }
    fn expect(&mut self, tok: &str) -> R<()> {
        self.skip_ws();
        self.0 = self.0.strip_prefix(tok).ok_or_else(|| format!("expected `{tok}` at `{}`", self.0))?;
        Ok(())
    }
    fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        self.skip_ws();
        let end = self.0.find(|c| !f(c)).unwrap_or(self.0.len());
        let (head, tail) = self.0.split_at(end);
        self.0 = tail;
        head
    }
    /// The text between a balanced `open`/`close` pair (strings may hold either).
    fn balanced(&mut self, open: char, close: char) -> R<&'a str> {
        self.expect(&open.to_string())?;
        let (mut depth, mut in_str, mut escaped) = (1, false, false);
        for (i, c) in self.0.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_str => escaped = true,
                '"' => in_str = !in_str,
                c if c == open && !in_str => depth += 1,
                c if c == close && !in_str => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = &self.0[..i];
                        self.0 = &self.0[i + 1..];
                        return Ok(inner);
                    }
                }
                _ => {}
            }
        }
        Err(format!("unbalanced `{open}`"))
    }
    fn rest(&self) -> &'a str {
        self.0
    }
}

/// Splits `k = v, k = [a, b], k = "x,y"` at top-level commas.
fn split_top(text: &str) -> R<Vec<(String, String)>> {
    let (mut parts, mut depth, mut in_str, mut escaped, mut start) = (Vec::new(), 0, false, false, 0);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' => in_str = !in_str,
            '[' | '(' if !in_str => depth += 1,
            ']' | ')' if !in_str => depth -= 1,
            ',' if !in_str && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').ok_or_else(|| format!("attribute `{}` has no `=`", p.trim()))?;
            Ok((k.trim().to_string(), v.trim().to_string()))
        })
        .collect()
}

/// `f32[2,3]` or `(f32[2], i64[2])`.
fn parse_types(text: &str) -> R<Vec<TensorType>> {
    let inner = match text.strip_prefix('(') {
        Some(t) => t.strip_suffix(')').ok_or("unbalanced `(` in result types")?,
        None => text,
    };
    let mut out = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let open = rest.find('[').ok_or_else(|| format!("expected a type like f32[2,3], found `{rest}`"))?;
        let close = rest[open..].find(']').map(|c| open + c).ok_or_else(|| format!("unclosed `[` in `{rest}`"))?;
        let dtype: DType = rest[..open].trim().parse().map_err(|e: crate::UnknownDType| e.to_string())?;
        let dims = &rest[open + 1..close];
        let shape = if dims.trim().is_empty() {
            Vec::new()
        } else {
            dims.split(',').map(|d| d.trim().parse::<i64>().map_err(|_| format!("bad dimension `{d}`"))).collect::<R<_>>()?
        };
        out.push(TensorType::new(dtype, shape));
        rest = rest[close + 1..].trim_start().trim_start_matches(',').trim_start();
    }
    if out.is_empty() {
        return Err("a node needs at least one result type".into());
    }
    Ok(out)
}

/// `loc("file":12)`.
fn parse_loc(text: &str) -> R<SourceLoc> {
    let inner = text.trim().strip_prefix("loc(").and_then(|t| t.strip_suffix(')')).ok_or("malformed loc(...)")?;
    let (file, line) = inner.rsplit_once(':').ok_or("loc needs \"file\":line")?;
    let file = crate::attr::unquote(file.trim()).ok_or("loc file must be quoted")?;
    let line = line.trim().parse().map_err(|_| format!("bad loc line `{line}`"))?;
    Ok(SourceLoc { file: file.into(), line })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"graph @sample {
  %x = input {kind = user_input} : f32[2,3,8,8]
  %w = input {kind = parameter, weight = "conv.weight"} : f32[4,3,3,3]
  %b = input {kind = parameter, weight = "conv.bias"} : f32[4]
  %ids = input {kind = user_input} : i64[2,5]
  %emb = input {kind = parameter, weight = "emb"} : f32[10,6]
  %c = aten.convolution %x, %w, %b {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1, has_bias = true} : f32[2,4,8,8]  loc("model.py":12)
  %p = aten.max_pool %c {kernel = [2, 2], stride = [2, 2], padding = [0, 0], dilation = [1, 1], ceil_mode = false} : (f32[2,4,4,4], i64[2,4,4,4])
  %r = aten.relu %p#0 : f32[2,4,4,4]
  %s = aten.sum %r {dims = [2, 3], keepdim = false} : f32[2,4]
  %half = full {value = 0.5} : f32[]
  %m = aten.mul %s, %half : f32[2,4]
  %e = aten.embedding %emb, %ids : f32[2,5,6]
  %lt = aten.lt %m, %half : bool[2,4]
  %odd = aten.sin.default %m : f32[2,4]
  %u = unknown %m {target = "aten.add"} : f32[2,4]
  %why = aten.frobnicate.default %m {reason = "argument `dim` is a tensor, but fxhlo needs an int known when the graph is captured"} : f32[2,4]
  %odd2 = unknown %m {target = "aten.mul", reason = "tricky: {a = [1, 2]}, \"quoted\", loc(\"f.py\":3)\nnext line"} : f32[2,4]  loc("model.py":7)
  %seed = input {kind = user_input} : i64[2]
  %rng = fxhlo.rng_bit_generator %seed {shape = [2, 4], dtype = i32} : (i64[2], i32[2,4])
  return %m, %p#1, %e, %lt, %odd, %u, %rng#1, %why, %odd2
}
"#;

    #[test]
    fn print_parse_print_is_byte_identical() {
        let g = parse(SAMPLE).unwrap();
        let printed = crate::print(&g);
        assert_eq!(printed, SAMPLE);
        assert_eq!(crate::print(&parse(&printed).unwrap()), printed);
    }

    /// Shared with the codegen end-to-end test, which runs it on the CPU plugin.
    const CONTROL_FLOW: &str = include_str!("../../testsuite/filetests/ir/control_flow.gir");

    #[test]
    fn regions_print_and_parse_back() {
        let g = parse(CONTROL_FLOW).unwrap();
        assert_eq!(g.regions().len(), 4);
        let body: String = CONTROL_FLOW.lines().filter(|l| !l.starts_with("//")).map(|l| format!("{l}\n")).collect();
        assert_eq!(crate::print(&g), body);
        // The canonical text (cache keys) includes the regions.
        let canonical = crate::print_canonical(&g);
        assert!(canonical.contains("region 1 {") && canonical.contains("aten.sin"), "{canonical}");
    }

    #[test]
    fn region_signatures_are_verified() {
        let bad = CONTROL_FLOW.replace("    %r = aten.sin %a : f32[3]\n    return %r", "    %r = aten.sum %a {dims = [], keepdim = false} : f32[]\n    return %r");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("node `c`") && err.contains("region 2 is (f32[3]) -> (f32[])"), "{err}");
        let bad = CONTROL_FLOW.replace("return %lt", "return %i");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("condition region 0"), "{err}");
        let bad = CONTROL_FLOW.replace("region 3 {", "region 4 {");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("expected `region 3 {`"), "{err}");
    }

    /// An unknown op keeps the importer's reason through print and parse, whether its target is
    /// a plain token or quoted; one without a reason prints no attribute.
    #[test]
    fn unknown_reasons_round_trip() {
        let g = parse(SAMPLE).unwrap();
        let reason = |name: &str| match &g.node_ids().map(|id| g.node(id)).find(|n| *n.name == *name).unwrap().op {
            Op::Unknown { target, reason } => (target.clone(), reason.clone()),
            other => panic!("{name} is {other:?}"),
        };
        assert_eq!(reason("u"), ("aten.add".to_string(), None));
        let (target, why) = reason("why");
        assert_eq!(target, "aten.frobnicate.default");
        assert_eq!(why.as_deref(), Some("argument `dim` is a tensor, but fxhlo needs an int known when the graph is captured"));
        let (target, why) = reason("odd2");
        assert_eq!(target, "aten.mul");
        assert_eq!(why.as_deref(), Some("tricky: {a = [1, 2]}, \"quoted\", loc(\"f.py\":3)\nnext line"));
        let bad = SAMPLE.replace("{reason = \"argument `dim` is a tensor, but fxhlo needs an int known when the graph is captured\"}", "{reason = 42}");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("attribute `reason` must be a quoted string"), "{err}");
    }

    #[test]
    fn errors_name_the_line() {
        let bad = SAMPLE.replace("%s = aten.sum %r", "%s = aten.sum %nope");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("line 10") && err.contains("`%nope` is not defined"), "{err}");
        let bad = SAMPLE.replace("keepdim = false", "keepdim = maybe");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("attribute `keepdim` must be true or false"), "{err}");
        let bad = SAMPLE.replace("%half = full {value = 0.5}", "%half = full {value = 0.5, colour = 1}");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("unexpected attribute `colour`"), "{err}");
        let bad = SAMPLE.replace(": f32[2,4]\n  %e", ": f32[2,5]\n  %e");
        let err = parse(&bad).unwrap_err().to_string();
        assert!(err.contains("verifier") && err.contains("`m`"), "{err}");
    }
}
