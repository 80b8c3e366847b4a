//! Shared helpers: a CPU session per thread and a small graph builder.

use fxhlo::runtime::HostTensor;
use fxhlo::{Session, Options};
use fxhlo_ir::{DType, Graph, InputKind, Op, TensorType, ValueRef};

/// A session on the CPU plugin (PJRT clients are not `Send`: one per test).
pub fn cpu() -> Session {
    Session::new(Options::default()).expect("CPU PJRT client (run scripts/setup.sh first)")
}

/// A session on the CPU plugin at optimization level `opt_level`.
pub fn cpu_at(opt_level: u8) -> Session {
    Session::new(Options { opt_level, ..Options::default() }).expect("CPU PJRT client (run scripts/setup.sh first)")
}

/// Builds graphs node by node with inferred result types.
pub struct Builder {
    pub g: Graph,
    next: usize,
}

impl Builder {
    pub fn new(name: &str) -> Self {
        Builder { g: Graph::new(name), next: 0 }
    }

    pub fn input(&mut self, name: &str, dtype: DType, shape: &[i64]) -> ValueRef {
        ValueRef::first(self.g.add_input(name, InputKind::UserInput, None, TensorType::new(dtype, shape.to_vec()), None))
    }

    /// Adds `op(operands)`; the result type comes from shape inference, or `ty` for ops
    /// without inference.
    pub fn op(&mut self, op: Op, operands: &[ValueRef], ty: Option<TensorType>) -> ValueRef {
        self.next += 1;
        let types: Vec<&TensorType> = operands.iter().map(|v| self.g.value_type(*v).unwrap()).collect();
        let results = match fxhlo_ir::infer::infer(&op, &types).unwrap() {
            Some(r) => r,
            None => fxhlo_ir::smallvec::smallvec![ty.expect("type for an op without inference")],
        };
        let name = format!("n{}", self.next);
        ValueRef::first(self.g.add_node(name, op, operands, results, None).unwrap())
    }

    pub fn finish(mut self, outputs: &[ValueRef]) -> Graph {
        self.g.set_outputs(outputs.to_vec()).unwrap();
        fxhlo_ir::verify(&self.g).unwrap();
        self.g
    }
}

/// Compiles and runs `graph` on the CPU plugin.
pub fn run(graph: &Graph, args: &[HostTensor]) -> Vec<HostTensor> {
    let session = cpu();
    let compiled = session.compile(graph, &fxhlo::Frozen::new(), None).unwrap_or_else(|e| panic!("compile {}: {e}", graph.name));
    compiled.run(&session, args).unwrap()
}

/// Max |a - b| over two equally long slices, printed for the record.
pub fn max_abs_diff(what: &str, got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let err = got.iter().zip(want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
    println!("{what}: max abs err {err:e}");
    err
}
