//! `fxhlo compile --target tpu:<topology>` and `fxhlo cost`: ahead-of-time compiles for a
//! target this machine does not have, through the compile cache, and XLA's cost analysis of
//! them with a roofline estimate from the chip's published peaks.

use std::path::Path;
use std::time::{Duration, Instant};

use fxhlo::aot::{AotCompiled, Worker};
use fxhlo::runtime::{CostAnalysis, EnvConfig, TargetName};
use fxhlo::{Dump, Frozen, Lowered, Options, TensorParallel};

/// Lowers `graph` for the ahead-of-time `target` and compiles it through the process's
/// compile cache (with `fresh`, not read from it: the cost analysis comes only from a compile).
/// Returns the lowered module too (for `--emit`).
pub(crate) fn compile(
    graph: &fxhlo::ir::Graph,
    frozen: &Frozen,
    options: &Options,
    dump: Option<&Dump>,
    fresh: bool,
) -> anyhow::Result<(Lowered, AotCompiled)> {
    let env = EnvConfig::from_env();
    Ok(fxhlo::aot::compile(graph, frozen, dump, options.clone(), &env, &Worker::from_env(), fresh)?)
}

/// A StableHLO file compiled as it is (no cache): its name (the file stem), the executable, its
/// cost analysis and the time the compile took.
fn compile_mlir(path: &Path, target: &TargetName) -> anyhow::Result<(String, Vec<u8>, CostAnalysis, Duration)> {
    let mlir = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let start = Instant::now();
    let (bytes, cost) = fxhlo::aot::compile_module(&name, &mlir, target, &EnvConfig::from_env(), &Worker::from_env())?;
    Ok((name, bytes, cost, start.elapsed()))
}

/// Writes an executable to `path` (atomically), when given.
fn write_executable(path: Option<&Path>, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(path) = path {
        fxhlo::frontend::write_atomic(path, bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

/// `fxhlo compile <module.mlir> --target tpu:...`: the module as it is, no cache.
pub(crate) fn compile_mlir_file(path: &Path, target: &TargetName, output: Option<&Path>) -> anyhow::Result<std::process::ExitCode> {
    if !target.is_ahead_of_time() {
        anyhow::bail!("{}: a StableHLO file compiles for an ahead-of-time target only (--target tpu:v6e:2x2)", path.display());
    }
    let (name, bytes, _, took) = compile_mlir(path, target)?;
    write_executable(output, &bytes)?;
    println!("`{name}` for {target}: compiled in {:.2} s; TPU executable {} bytes", took.as_secs_f64(), bytes.len());
    Ok(std::process::ExitCode::SUCCESS)
}

/// `compile --target tpu:...`'s report line, after writing the executable to `output`.
pub(crate) fn report(compiled: &AotCompiled, target: &TargetName, output: Option<&Path>) -> anyhow::Result<String> {
    write_executable(output, &compiled.bytes)?;
    let how = match compiled.cached {
        None => format!("compiled in {:.2} s", compiled.compile_time.as_secs_f64()),
        Some(tier) => format!("already cached ({} tier, {:.1} ms)", tier.name(), compiled.compile_time.as_secs_f64() * 1e3),
    };
    let written = output.map(|p| format!(", written to {}", p.display())).unwrap_or_default();
    Ok(format!(
        "`{}` for {target}: {how}; TPU executable {} bytes{written}; cache key {}",
        compiled.graph,
        compiled.bytes.len(),
        compiled.key.hex()
    ))
}

// TPU chips' published peaks (the e-graph's cost model's table), for the roofline estimate.
use fxhlo::passes::eqsat::cost::{tpu_chip, Roofline};

/// The roofline time of one chip: the larger of compute time at peak and memory time at full
/// bandwidth, and whether compute is the larger.
pub(crate) fn roofline(cost: &CostAnalysis, chip: &Roofline) -> Option<(f64, bool)> {
    let compute = cost.flops()? / chip.peak_flops;
    let memory = cost.bytes_accessed()? / chip.bytes_per_s;
    Some((compute.max(memory), compute >= memory))
}

/// `fxhlo cost <bundle, graph.gir or module.mlir> --target tpu:...`: compiles (never from the
/// cache: the cost analysis comes from a compile) and prints the report.
pub(crate) fn cost(
    path: &Path,
    target: &TargetName,
    pass_args: crate::PassArgs,
    tensor_parallel: Option<TensorParallel>,
) -> anyhow::Result<String> {
    if !target.is_ahead_of_time() {
        anyhow::bail!("fxhlo cost compiles for a TPU topology: --target tpu:v6e:2x2 (or v5e:2x2, v5p:2x2x1, ...), not {target}");
    }
    if path.extension().is_some_and(|e| e == "mlir") {
        let (name, _, cost, took) = compile_mlir(path, target)?;
        return Ok(cost_report(&name, &cost, took, target));
    }
    let (graph, frozen) = if crate::is_ir_file(path) {
        (crate::read_ir_file(path, pass_args.freeze)?, Frozen::new())
    } else {
        let bundle = crate::open(path)?;
        let frozen = pass_args.frozen(&bundle);
        (bundle.graph, frozen)
    };
    let options = pass_args.apply(Options {
        device: target.clone(),
        tensor_parallel,
        ..Options::default()
    });
    options.check()?;
    let (_, compiled) = compile(&graph, &frozen, &options, None, true)?;
    Ok(cost_report(
        &compiled.graph,
        &compiled.cost.unwrap_or_default(),
        compiled.compile_time,
        target,
    ))
}

/// The cost report: XLA's figures, then the roofline from the chip's peaks.
pub(crate) fn cost_report(graph: &str, cost: &CostAnalysis, compile_time: Duration, target: &TargetName) -> String {
    let mut out = String::new();
    let fmt = |v: Option<f64>| {
        v.map(|v| format!("{v:.6e}"))
            .unwrap_or_else(|| "n/a".into())
    };
    out.push_str(&format!("graph: {graph}\ntarget: {target}\n"));
    out.push_str(&format!("compile time: {:.2} s\n", compile_time.as_secs_f64()));
    out.push_str("XLA cost analysis (the TPU compiler's estimates, not measurements):\n");
    out.push_str(&format!("  flops:            {}\n", fmt(cost.flops())));
    out.push_str(&format!("  transcendentals:  {}\n", fmt(cost.transcendentals())));
    out.push_str(&format!("  bytes accessed:   {}\n", fmt(cost.bytes_accessed())));
    match cost.optimal_seconds() {
        Some(s) => out.push_str(&format!("  optimal seconds:  {s:.6e}\n")),
        None => out.push_str("  optimal seconds:  unknown (the cost model gave none; see the roofline)\n"),
    }
    let topology = target.topology.as_deref().unwrap_or_default();
    match tpu_chip(topology) {
        Some(chip) => {
            out.push_str(&format!(
                "roofline on one {} ({:.0} TFLOP/s bf16, {:.0} GB/s HBM): ",
                chip.name,
                chip.peak_flops / 1e12,
                chip.bytes_per_s / 1e9
            ));
            match roofline(cost, chip) {
                Some((s, compute_bound)) => {
                    let bound = if compute_bound { "compute-bound" } else { "memory-bound" };
                    out.push_str(&format!("{s:.6e} s ({bound})\n"));
                }
                None => out.push_str("n/a (no flops or bytes in the cost analysis)\n"),
            }
        }
        None => out.push_str(&format!("roofline: no peak figures for topology `{topology}`\n")),
    }
    out
}
