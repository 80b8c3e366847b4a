//! Parameter signatures of executables, checked before each run.
//!
//! The XLA CPU plugin checks only the argument count and byte size at execution: an i32
//! buffer passed for an f32 parameter (or `[3,2]` for `[2,3]`) runs and silently computes
//! garbage. [`crate::Client::compile`] therefore records the parameter types of `@main`, and
//! [`crate::Executable::run`] checks arguments against them. They are given typed by the
//! caller that built the module ([`Signature::of_tensors`]), or, for a module read from a file,
//! read from its custom-form text (`func.func @main(%a: tensor<2x3xf32>, ...)`); a text that
//! cannot be read (generic-form MLIR, exotic types) is simply not checked. Serialized executables carry it in
//! a small envelope (see [`crate::Executable::serialize`]).

use crate::device_buffer::DeviceBuffer;
use crate::element::ElementType;
use crate::error::{Error, Result};

/// One parameter of `@main`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Param {
    /// `tensor<d0 x d1 x ... x elem>`; `None` dims are dynamic (`?`).
    Tensor {
        element: String,
        dims: Vec<Option<i64>>,
    },
    /// Any other type (token, tuple, ...): not checked.
    Other,
}

/// The parameters of an executable's `@main`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    params: Vec<Param>,
}

impl Signature {
    /// The signature of a `@main` taking tensors of these element types and static dims, in
    /// order (what the module's builder knows without reading it back).
    pub fn of_tensors(params: impl IntoIterator<Item = (ElementType, Vec<i64>)>) -> Signature {
        let params = params
            .into_iter()
            .map(|(element, dims)| Param::Tensor { element: element.mlir_name().to_string(), dims: dims.into_iter().map(Some).collect() })
            .collect();
        Signature { params }
    }

    /// Reads `@main`'s parameter types from custom-form MLIR; `None` if there is no
    /// `func.func ... @main(` or its argument list does not parse.
    pub(crate) fn from_mlir(mlir: &str) -> Option<Signature> {
        let at = mlir.match_indices("@main(").find(|(i, _)| {
            let line_start = mlir[..*i].rfind('\n').map_or(0, |p| p + 1);
            mlir[line_start..*i].contains("func.func")
        })?;
        let args = &mlir[at.0 + "@main(".len()..];
        let end = matching_paren(args)?;
        let params = split_top_level(&args[..end], ',')
            .into_iter()
            .filter(|a| !a.trim().is_empty())
            .map(|arg| {
                let (_, ty) = arg.split_once(':')?;
                Some(parse_type(ty))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Signature { params })
    }

    /// Checks count, element types and static dims of `args`.
    pub(crate) fn check(&self, args: &[&DeviceBuffer]) -> Result<()> {
        if args.len() != self.params.len() {
            return Err(Error::Execute {
                message: format!(
                    "{} arguments given, @main takes {}",
                    args.len(),
                    self.params.len()
                ),
            });
        }
        for (i, (arg, param)) in args.iter().zip(&self.params).enumerate() {
            let Param::Tensor { element, dims } = param else {
                continue;
            };
            let got_dims = arg.dims();
            // Either spelling `FromStr` takes, compared without parsing (this runs every call).
            let got = arg.element_type();
            let type_ok = element == got.mlir_name() || element == got.name();
            let dims_ok = got_dims.len() == dims.len()
                && dims
                    .iter()
                    .zip(got_dims)
                    .all(|(want, got)| want.is_none_or(|w| w == *got));
            if !(type_ok && dims_ok) {
                return Err(Error::Execute {
                    message: format!(
                        "argument {i} is {}{got_dims:?} but @main expects {}",
                        arg.element_type(),
                        describe(element, dims)
                    ),
                });
            }
        }
        Ok(())
    }

    /// A one-line text form (`f32[2,3];i1[?];*`), stored with serialized executables.
    pub(crate) fn encode(&self) -> String {
        let parts: Vec<String> = self
            .params
            .iter()
            .map(|p| match p {
                Param::Tensor { element, dims } => format!("{element}[{}]", dims_text(dims)),
                Param::Other => "*".to_string(),
            })
            .collect();
        parts.join(";")
    }

    /// Parses [`Signature::encode`]'s output.
    pub(crate) fn decode(text: &str) -> Option<Signature> {
        if text.is_empty() {
            return Some(Signature { params: Vec::new() });
        }
        let params = text
            .split(';')
            .map(|p| {
                if p == "*" {
                    return Some(Param::Other);
                }
                let (element, rest) = p.split_once('[')?;
                let dims = rest.strip_suffix(']')?;
                let dims = if dims.is_empty() {
                    Vec::new()
                } else {
                    dims.split(',').map(parse_dim).collect::<Option<Vec<_>>>()?
                };
                Some(Param::Tensor {
                    element: element.to_string(),
                    dims,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Signature { params })
    }
}

/// `2,?`.
fn dims_text(dims: &[Option<i64>]) -> String {
    let dims: Vec<String> = dims
        .iter()
        .map(|d| d.map_or("?".to_string(), |d| d.to_string()))
        .collect();
    dims.join(",")
}

/// `f32[2,?]` for messages (the runtime's type names where it has them).
fn describe(element: &str, dims: &[Option<i64>]) -> String {
    let name = element
        .parse::<ElementType>()
        .map_or(element.to_string(), |t| t.to_string());
    format!("{name}[{}]", dims_text(dims))
}

/// `123` or `?` (dynamic).
fn parse_dim(s: &str) -> Option<Option<i64>> {
    if s == "?" {
        Some(None)
    } else {
        s.parse::<i64>().ok().map(Some)
    }
}

/// The type of one argument: ` tensor<2x3xf32> {attrs} loc(...)` -> `Param`.
fn parse_type(text: &str) -> Param {
    let text = text.trim();
    let Some(body) = text.strip_prefix("tensor<") else {
        return Param::Other;
    };
    let Some(close) = matching(body, '<', '>') else {
        return Param::Other;
    };
    // Drop an encoding: `tensor<4xf32, #enc>`.
    let body = split_top_level(&body[..close], ',')
        .into_iter()
        .next()
        .unwrap_or_default();
    let mut rest = body.trim();
    let mut dims = Vec::new();
    while let Some(x) = rest.find('x') {
        match parse_dim(&rest[..x]) {
            Some(d) => dims.push(d),
            None => break,
        }
        rest = &rest[x + 1..];
    }
    Param::Tensor {
        element: rest.to_string(),
        dims,
    }
}

/// Index of the `)` closing an already-opened `(`.
fn matching_paren(s: &str) -> Option<usize> {
    matching(s, '(', ')')
}

/// Index of the `close` that ends an already-opened `open`, skipping strings and `->`.
fn matching(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 1usize;
    let mut in_string = false;
    let mut prev = '\0';
    for (i, c) in s.char_indices() {
        if in_string {
            if c == '"' && prev != '\\' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c == open {
            depth += 1;
        } else if c == close && !(close == '>' && prev == '-') {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        prev = c;
    }
    None
}

/// Splits at `sep` outside brackets, braces, angle brackets and strings.
fn split_top_level(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start, mut in_string, mut prev) = (0i32, 0usize, false, '\0');
    for (i, c) in s.char_indices() {
        if in_string {
            if c == '"' && prev != '\\' {
                in_string = false;
            }
        } else {
            match c {
                '"' => in_string = true,
                '(' | '[' | '{' | '<' => depth += 1,
                '>' if prev == '-' => {}
                ')' | ']' | '}' | '>' => depth -= 1,
                c if c == sep && depth == 0 => {
                    parts.push(&s[start..i]);
                    start = i + c.len_utf8();
                }
                _ => {}
            }
        }
        prev = c;
    }
    parts.push(&s[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(element: &str, dims: &[Option<i64>]) -> Param {
        Param::Tensor {
            element: element.to_string(),
            dims: dims.to_vec(),
        }
    }

    #[test]
    fn reads_main_parameters() {
        let mlir = r#"module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func private @helper(%x: tensor<9xf32>) -> tensor<9xf32> { return %x : tensor<9xf32> }
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.sharding = "{devices=[2,1]<=[2]}"},
      %arg1: tensor<i1> loc("p"), %arg2: tensor<?x4xbf16, #enc>, %arg3: !stablehlo.token,
      %arg4: tensor<4xindex>) -> (tensor<2x3xf32>) {
    return %arg0 : tensor<2x3xf32>
  }
}"#;
        let sig = Signature::from_mlir(mlir).map(|s| s.params);
        assert_eq!(
            sig,
            Some(vec![
                t("f32", &[Some(2), Some(3)]),
                t("i1", &[]),
                t("bf16", &[None, Some(4)]),
                Param::Other,
                t("index", &[Some(4)]),
            ])
        );
    }

    #[test]
    fn no_arguments_and_no_main() {
        let sig = Signature::from_mlir("func.func @main() -> tensor<f32> {}");
        assert_eq!(sig.map(|s| s.params.len()), Some(0));
        assert!(Signature::from_mlir("func.func @other(%a: tensor<f32>)").is_none());
        assert!(Signature::from_mlir("this is not mlir").is_none());
    }

    #[test]
    fn encode_decode_round_trip() {
        let sig = Signature {
            params: vec![
                t("f32", &[Some(2), None]),
                Param::Other,
                t("i1", &[]),
                t("ui8", &[Some(0)]),
            ],
        };
        let text = sig.encode();
        assert_eq!(text, "f32[2,?];*;i1[];ui8[0]");
        let back = Signature::decode(&text).map(|s| s.encode());
        assert_eq!(back.as_deref(), Some(text.as_str()));
        assert_eq!(Signature::decode("").map(|s| s.params.len()), Some(0));
        assert!(Signature::decode("f32[2").is_none());
    }
}
