//! The `fxhlo` command-line tool: run, inspect and check trace bundles without Python.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use fxhlo::frontend::Bundle;
use fxhlo::runtime::{DeviceKind, HostTensor};
use fxhlo::{Compiler, Options};

/// Environment variable with a `tracing` filter for fxhlo's logs (e.g. `info`, `fxhlo=debug`).
const FXHLO_LOG: &str = "FXHLO_LOG";

#[derive(Parser)]
#[command(name = "fxhlo", version, about = "fxhlo: FX graphs to StableHLO on PJRT devices")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile and run a trace bundle on a device, with the bundle's reference inputs.
    Run {
        /// The bundle folder (`<model>.fxt`; it reads the newer of graph.json and graph.bin),
        /// or a trace file in it (graph.json or graph.bin), which is read as named.
        bundle: PathBuf,
        #[arg(long, value_enum, default_value_t = Device::Cpu)]
        device: Device,
        /// Compare the outputs with the bundle's PyTorch reference; exit 1 on a mismatch.
        #[arg(long)]
        check: bool,
        /// Fail when an index of `embedding`, `index`, `gather`, ... is out of range (the
        /// device clamps it otherwise, as XLA does).
        #[arg(long)]
        check_indices: bool,
    },
    /// Import a bundle (validating everything) and print its IR or Graphviz DOT.
    Import {
        bundle: PathBuf,
        /// Print the IR text.
        #[arg(long)]
        print: bool,
        /// Print the graph in Graphviz DOT.
        #[arg(long)]
        dot: bool,
        /// Also write the trace in the bincode encoding to this file (a bundle folder reads
        /// `graph.bin` unless `graph.json` was modified after it). Written to a temporary file
        /// and renamed, so a concurrent reader never sees a partial file.
        #[arg(long, value_name = "PATH")]
        write_bin: Option<PathBuf>,
    },
    /// Measure a bundle: import, codegen and PJRT compile times (median of `--compiles` cold
    /// compiles) and steady-state run latency (median of `--runs`).
    Bench {
        bundle: PathBuf,
        #[arg(long, value_enum, default_value_t = Device::Cpu)]
        device: Device,
        #[arg(long, default_value_t = 3)]
        compiles: usize,
        #[arg(long, default_value_t = 20)]
        runs: usize,
    },
    /// Import a bundle and print one stage of it (no device needed).
    Compile {
        bundle: PathBuf,
        /// What to print: the imported IR or the StableHLO module (as the device gets it).
        #[arg(long, value_enum, default_value_t = Emit::Mlir)]
        emit: Emit,
        /// Also write every stage under this folder: `<graph>-<hash8>/NN-<stage>.*`.
        #[arg(long)]
        dump: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Device {
    Cpu,
    Cuda,
    Tpu,
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    Ir,
    Mlir,
}

fn main() -> ExitCode {
    // The XLA plugins log at INFO level to stderr (the CPU plugin logs the device count fxhlo
    // asks for on every client); keep warnings and errors unless the user chose a level. Set
    // before any thread or plugin exists.
    if std::env::var_os("TF_CPP_MIN_LOG_LEVEL").is_none() {
        std::env::set_var("TF_CPP_MIN_LOG_LEVEL", "1");
    }
    let filter = tracing_subscriber::EnvFilter::try_from_env(FXHLO_LOG)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            // The chain, leaving out causes whose text an outer message already includes
            // (fxhlo's errors print their source themselves).
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                let c = cause.to_string();
                if !msg.contains(&c) {
                    msg = format!("{msg}: {c}");
                }
            }
            eprintln!("error: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run { bundle, device, check, check_indices } => {
            let bundle = open(&bundle)?;
            let device = device_kind(device);
            let compiler = Compiler::new(Options { device, check_indices })?;
            let compiled = compiler.compile(&bundle.graph)?;
            println!(
                "compiled `{}` for {} ({}): codegen {:.1} ms, PJRT compile {:.1} ms",
                bundle.graph.name,
                device,
                compiler.client().platform_name(),
                compiled.codegen_time.as_secs_f64() * 1e3,
                compiled.compile_time.as_secs_f64() * 1e3
            );
            let outputs = compiled.run_bundle(&compiler, &bundle)?;
            for (i, out) in outputs.iter().enumerate() {
                println!("output {i}: {}", describe(out));
            }
            if check {
                let report = fxhlo::check(&outputs, &bundle)?;
                let passed = report.passed();
                for output in &report.outputs {
                    println!("check: {output}");
                }
                // The last line carries the errors, whatever the outcome.
                println!("{report}");
                return Ok(if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE });
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Import { bundle, print, dot, write_bin } => {
            let bundle = open(&bundle)?;
            if print {
                print!("{}", fxhlo::ir::print(&bundle.graph));
            }
            if dot {
                print!("{}", fxhlo::ir::to_dot(&bundle.graph));
            }
            if let Some(path) = write_bin {
                fxhlo::frontend::write_atomic(&path, &fxhlo::frontend::to_bin(&bundle.trace))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            if !print && !dot {
                let g = &bundle.graph;
                eprintln!("imported `{}`: {} nodes, {} inputs, {} outputs", g.name, g.node_count(), g.inputs().len(), g.outputs().len());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { bundle, device, compiles, runs } => {
            let start = std::time::Instant::now();
            let b = open(&bundle)?;
            let import = start.elapsed();
            let compiler = Compiler::new(Options { device: device_kind(device), ..Options::default() })?;
            let (mut codegen, mut compile) = (Vec::new(), Vec::new());
            let mut compiled = None;
            for _ in 0..compiles.max(1) {
                let c = compiler.compile(&b.graph)?;
                codegen.push(c.codegen_time.as_secs_f64());
                compile.push(c.compile_time.as_secs_f64());
                compiled = Some(c);
            }
            let compiled = compiled.context("no compile ran")?;
            let mut latency = Vec::new();
            for _ in 0..runs.max(1) + 1 {
                let t = std::time::Instant::now();
                compiled.run_bundle(&compiler, &b)?;
                latency.push(t.elapsed().as_secs_f64());
            }
            latency.remove(0); // the first run includes one-time allocations
            let (cg, cp, lat) = (median(&mut codegen), median(&mut compile), median(&mut latency));
            println!("bundle: {} ({} nodes)", b.graph.name, b.graph.node_count());
            println!("import:       {:>9.2} ms", import.as_secs_f64() * 1e3);
            println!("codegen:      {:>9.2} ms  (median of {})", cg * 1e3, codegen.len());
            println!("PJRT compile: {:>9.2} ms  (median of {})", cp * 1e3, compile.len());
            println!("codegen share of compile: {:.1} %", 100.0 * cg / (cg + cp));
            println!("run (upload + execute + download): {:.3} ms  (median of {})", lat * 1e3, latency.len());
            Ok(ExitCode::SUCCESS)
        }
        Command::Compile { bundle, emit, dump } => {
            let bundle = open(&bundle)?;
            let dump = match &dump {
                Some(root) => {
                    let d = fxhlo::Dump::create(root, &bundle.graph.name, &fxhlo::ir::print(&bundle.graph))?;
                    // The trace that was read: its own bytes when it was JSON, else its JSON.
                    let json = match std::fs::read(&bundle.graph_file) {
                        Ok(bytes) if !bytes.starts_with(fxhlo::frontend::encoding::MAGIC) => bytes,
                        _ => fxhlo::frontend::to_json(&bundle.trace).into_bytes(),
                    };
                    d.write(0, "trace", "json", &json)?;
                    eprintln!("dumping to {}", d.dir().display());
                    Some(d)
                }
                None => None,
            };
            let lowered = if matches!(emit, Emit::Mlir) || dump.is_some() {
                Some(fxhlo::lower(&bundle.graph, dump.as_ref(), &fxhlo::Frozen::new(), &Options::default()).context("lowering to StableHLO")?)
            } else {
                None
            };
            match (emit, lowered) {
                (Emit::Mlir, Some(lowered)) => println!("{}", lowered.mlir),
                _ => print!("{}", fxhlo::ir::print(&bundle.graph)),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Opens a bundle; when its folder holds both graph.json and graph.bin, says on stderr which
/// one was read and why.
fn open(path: &std::path::Path) -> anyhow::Result<Bundle> {
    let bundle = Bundle::open(path)?;
    if let Some(why) = &bundle.choice {
        eprintln!("note: {why}");
    }
    Ok(bundle)
}

fn device_kind(d: Device) -> DeviceKind {
    match d {
        Device::Cpu => DeviceKind::Cpu,
        Device::Cuda => DeviceKind::Cuda,
        Device::Tpu => DeviceKind::Tpu,
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// `f32[2,4] = [0.1, ...]`, at most 8 values.
fn describe(t: &HostTensor) -> String {
    format!("{}{:?} = {}", t.element_type.name(), t.dims, fxhlo::Values::of(t).preview(8))
}
