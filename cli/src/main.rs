//! The `fxhlo` command-line tool: run, inspect and check trace bundles without Python, and
//! manage the compile cache.

mod aot;
mod cache;
mod explain;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, Subcommand, ValueEnum};
use fxhlo::frontend::Bundle;
use fxhlo::runtime::{DeviceKind, EnvConfig, HostTensor, TargetName};
use fxhlo::{
    CacheConfig, CacheMode, CompileCache, Compiled, Dump, DumpConfig, Frozen, Options, Session, TensorParallel,
};

/// Environment variable with a `tracing` filter for fxhlo's logs (e.g. `info`, `fxhlo=debug`).
const FXHLO_LOG: &str = "FXHLO_LOG";

#[derive(Parser)]
#[command(name = "fxhlo", version, about = "fxhlo: FX graphs to StableHLO on PJRT devices")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The pass flags of `run`, `bench`, `compile`, `explain` and `cost`.
#[derive(clap::Args)]
struct PassArgs {
    /// Optimization level: -O0 runs none of fxhlo's passes (XLA alone), -O1 the pipeline for
    /// the target, -O2 (the default) that and the e-graph optimizer (`eqsat`; on the CPU plugin
    /// `batch-blocks` after it, for TPUs `attention-recompute`).
    #[arg(short = 'O', value_name = "LEVEL", default_value_t = fxhlo::passes::DEFAULT_OPT_LEVEL,
          value_parser = clap::value_parser!(u8).range(0..=fxhlo::passes::MAX_OPT_LEVEL as i64))]
    opt_level: u8,
    /// Run exactly these passes, in order, instead of the level's pipeline (comma-separated;
    /// a name not in the registry is refused with the list of valid ones).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    passes: Option<Vec<String>>,
    /// Run only the first N passes of the pipeline (bisects a miscompile to one pass).
    #[arg(long, value_name = "N")]
    max_passes: Option<usize>,
    /// Compile the bundle's parameters, buffers and constants in as constants (the `freeze`
    /// pass, as `options={"freeze": True}` in Python): passes and XLA may fold them, and the
    /// executable no longer takes them.
    #[arg(long)]
    freeze: bool,
}

impl PassArgs {
    /// The frozen inputs these flags ask for: the bundle's weights with `--freeze`, else none.
    fn frozen(&self, bundle: &fxhlo::frontend::Bundle) -> Frozen {
        if self.freeze {
            fxhlo::frozen_weights(bundle)
        } else {
            Frozen::new()
        }
    }

    /// `options` with these flags' passes.
    fn apply(self, options: Options) -> Options {
        Options { opt_level: self.opt_level, passes: self.passes, max_passes: self.max_passes, ..options }
    }
}

/// The dump flags of `run`, `bench` and `compile` (the same switch as `FXHLO_DUMP` and
/// `FXHLO_DUMP_DIR`, which they override).
#[derive(clap::Args)]
struct DumpArgs {
    /// Write the stages of each compiled graph under `<dump-dir>/<graph>-<key8>/`: `all` (the
    /// default when the flag has no value) or a comma list of stages (trace, import, passes,
    /// stablehlo, xla, dot) and pass names, e.g. `import,dce,stablehlo`. See docs/dumps.md.
    #[arg(long, value_name = "FILTER", num_args = 0..=1, default_missing_value = "all")]
    dump: Option<String>,
    /// The folder dumps go to (default: FXHLO_DUMP_DIR, else ./fxhlo-dump).
    #[arg(long, value_name = "DIR")]
    dump_dir: Option<PathBuf>,
}

impl DumpArgs {
    /// What to dump: these flags, else `FXHLO_DUMP`. `--dump <folder>` (the flag's older form,
    /// a path) still dumps everything into that folder, with a note.
    fn config(&self) -> anyhow::Result<Option<DumpConfig>> {
        let filter = match &self.dump {
            Some(filter) => filter.clone(),
            None if self.dump_dir.is_some() => fxhlo::env::var(fxhlo::env::FXHLO_DUMP).unwrap_or_else(|| "all".into()),
            None => return Ok(DumpConfig::from_env()?),
        };
        match DumpConfig::new(&filter, self.dump_dir.clone()) {
            Ok(config) => Ok(Some(config)),
            Err(e) => {
                let path = std::path::Path::new(&filter);
                let looks_like_a_folder = filter.contains('/') || filter.contains(std::path::MAIN_SEPARATOR) || path.is_dir();
                if self.dump_dir.is_none() && looks_like_a_folder {
                    eprintln!("note: --dump {filter} is read as --dump all --dump-dir {filter}");
                    return Ok(Some(DumpConfig::new("all", Some(path.to_path_buf()))?));
                }
                Err(anyhow::anyhow!("{e} (for a folder, use --dump-dir)"))
            }
        }
    }
}

/// The tensor-parallel flags of `run`, `compile`, `explain` and `cost`.
#[derive(clap::Args)]
struct TensorParallelArgs {
    /// Split over this many devices with tensor parallelism (SPMD): the Megatron-style plan
    /// (attention's qkv and the MLP's first linear column-parallel, the output projections
    /// row-parallel), or the plan in `--plan`. On `cpu` the plugin makes the devices; a TPU
    /// topology has its chips (tpu:v6e:2x2: 4).
    #[arg(long, value_name = "DEVICES")]
    tensor_parallel: Option<usize>,
    /// A tensor-parallel plan as JSON: `{"devices": 2, "split": [{"weights": "*.fc1.weight",
    /// "dim": 0}]}` (weight key patterns, `*` any run of characters; unmatched weights are
    /// replicated).
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
}

impl TensorParallelArgs {
    /// The plan of `--plan` (its `devices` overridden by `--tensor-parallel` when both are
    /// given), or the Megatron-style plan over `--tensor-parallel` devices, or none.
    fn plan(&self) -> anyhow::Result<Option<TensorParallel>> {
        let mut tp = match &self.plan {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                let tp: TensorParallel = serde_json::from_str(&text).map_err(|e| {
                    anyhow::anyhow!("{}: not a tensor-parallel plan: {e}", path.display())
                })?;
                Some(tp)
            }
            None => self.tensor_parallel.map(TensorParallel::megatron),
        };
        if let (Some(tp), Some(n)) = (tp.as_mut(), self.tensor_parallel) {
            tp.devices = n;
        }
        Ok(tp)
    }
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
        #[command(flatten)]
        pass_args: PassArgs,
        #[command(flatten)]
        dump: DumpArgs,
        #[command(flatten)]
        tp: TensorParallelArgs,
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
    /// compiles, the compile cache bypassed), the time to load the executable from the cache,
    /// and steady-state run latency (median of `--runs`).
    Bench {
        bundle: PathBuf,
        #[arg(long, value_enum, default_value_t = Device::Cpu)]
        device: Device,
        #[arg(long, default_value_t = 3)]
        compiles: usize,
        #[arg(long, default_value_t = 20)]
        runs: usize,
        #[command(flatten)]
        pass_args: PassArgs,
        #[command(flatten)]
        dump: DumpArgs,
    },
    /// Import a bundle and print one stage of it (no device needed); with `--cache`, compile
    /// it into the compile cache. With an ahead-of-time target (`--target tpu:v6e:2x2`),
    /// compile it for that TPU topology on this machine (no TPU needed) through the cache, and
    /// write the TPU executable to `-o`. A `.gir` file (IR text, from a dump or a failure's
    /// reproduction) runs the same pipeline as a bundle. A `.mlir` file (a StableHLO module,
    /// from a dump or a bug report) is compiled as it is by the target's PJRT compiler,
    /// without the cache.
    Compile {
        /// A bundle, a trace file, a `.gir` IR file or a `.mlir` StableHLO module.
        bundle: PathBuf,
        /// What to print: the imported IR or the StableHLO module (as the device gets it).
        /// Default: `mlir`, or nothing with `--cache`.
        #[arg(long, value_enum)]
        emit: Option<Emit>,
        #[command(flatten)]
        dump: DumpArgs,
        /// Compile the index checks of `embedding`, `index`, `gather`, ... in (the
        /// check-indices pass), as `run --check-indices` does.
        #[arg(long)]
        check_indices: bool,
        /// Compile for `--device` through the compile cache (`FXHLO_CACHE_DIR`, ...), filling
        /// it, and say whether the executable was compiled or already cached, with its key
        /// (on stdout, or on stderr when `--emit` prints a stage).
        #[arg(long)]
        cache: bool,
        /// The target to compile for: cpu, cuda, tpu, or tpu:<topology> (tpu:v6e:2x2,
        /// tpu:v5e:2x2, tpu:v5p:2x2x1, ...) to compile ahead of time without the chips.
        #[arg(long, alias = "device", default_value = "cpu")]
        target: TargetName,
        /// Where to write the executable of an ahead-of-time target.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        pass_args: PassArgs,
        #[command(flatten)]
        tp: TensorParallelArgs,
    },
    /// Explain what `compile` with the same flags would do, without compiling: each distinct
    /// op of the graph with its count and whether codegen lowers it, the passes that would run
    /// and what each changed (run on a copy of the graph), and whether the compile cache
    /// (`FXHLO_CACHE_DIR`, ...) holds the executable, or else which key fields the nearest
    /// entry differs in. Reads the cache folder only.
    Explain {
        bundle: PathBuf,
        /// The target to explain a compile for, as `compile --target` takes it.
        #[arg(long, alias = "device", default_value = "cpu")]
        target: TargetName,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        pass_args: PassArgs,
        #[command(flatten)]
        tp: TensorParallelArgs,
    },
    /// Compile a bundle (or a `.gir` IR file, or a StableHLO `.mlir` module) ahead of time for
    /// a TPU topology and print XLA's cost analysis (flops, bytes accessed, transcendentals,
    /// optimal seconds) and a roofline estimate from the chip's published peaks. Estimates of
    /// the TPU compiler's cost model, not measurements.
    Cost {
        bundle: PathBuf,
        /// An ahead-of-time target, such as tpu:v6e:2x2.
        #[arg(long, default_value = "tpu:v6e:2x2")]
        target: TargetName,
        #[command(flatten)]
        pass_args: PassArgs,
        #[command(flatten)]
        tp: TensorParallelArgs,
    },
    /// Internal: the child process that compiles for a topology (run by fxhlo itself, so that
    /// a crash of the target's compiler does not take the caller down).
    #[command(hide = true, name = "aot-worker", disable_help_flag = true)]
    AotWorker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The compile cache's folder: stats, list, verify or clear its entries.
    Cache {
        #[command(subcommand)]
        command: cache::CacheCommand,
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
        Command::Run {
            bundle,
            device,
            check,
            check_indices,
            pass_args,
            dump,
            tp,
        } => {
            let dump = dump.config()?;
            let start = std::time::Instant::now();
            let bundle = open_dumped(&bundle, dump.as_ref())?;
            let import = start.elapsed();
            let device = device_kind(device);
            let frozen = pass_args.frozen(&bundle);
            let session = Session::new(pass_args.apply(Options {
                device: device.into(),
                check_indices,
                tensor_parallel: tp.plan()?,
                ..Options::default()
            }))?;
            let dump = dump.map(|config| bundle_dump(config, &bundle, import));
            let compiled = session.compile(&bundle.graph, &frozen, dump.as_ref())?;
            say_dumped(dump.as_ref());
            println!(
                "compiled `{}` for {} ({}): codegen {:.1} ms, {}",
                bundle.graph.name,
                device,
                session.client().platform_name(),
                compiled.codegen_time.as_secs_f64() * 1e3,
                provenance(&compiled)
            );
            let outputs = compiled.run_bundle(&session, &bundle)?;
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
        Command::Bench { bundle, device, compiles, runs, pass_args, dump } => {
            let dump = dump.config()?;
            let start = std::time::Instant::now();
            let b = open_dumped(&bundle, dump.as_ref())?;
            let import = start.elapsed();
            // A cache of its own, memory only, emptied before each compile: every compile is a
            // PJRT compile, and the folder is left alone.
            let private = CacheConfig { mode: CacheMode::Off, error_on_compile: false, ..CacheConfig::from_env() };
            let frozen = pass_args.frozen(&b);
            let options = pass_args.apply(Options { device: device_kind(device).into(), ..Options::default() });
            let mut session = Session::with_cache(options, &EnvConfig::from_env(), Arc::new(CompileCache::new(private)))?;
            // Each compile rewrites the same folder; the last one's report stays.
            session.set_dump(dump);
            let key = session.key(&b.graph, &frozen);
            let (mut codegen, mut compile) = (Vec::new(), Vec::new());
            for _ in 0..compiles.max(1) {
                session.cache().forget(&key);
                let c = session.compile(&b.graph, &frozen, None)?;
                codegen.push(c.codegen_time.as_secs_f64());
                compile.push(c.compile_time.as_secs_f64());
            }
            // Once more, from the cache the last compile filled: what a cache hit costs.
            let compiled = session.compile(&b.graph, &frozen, None)?;
            let load = compiled.cached.map(|_| compiled.compile_time);
            let mut latency = Vec::new();
            for _ in 0..runs.max(1) + 1 {
                let t = std::time::Instant::now();
                compiled.run_bundle(&session, &b)?;
                latency.push(t.elapsed().as_secs_f64());
            }
            latency.remove(0); // the first run includes one-time allocations
            let (cg, cp, lat) = (median(&mut codegen), median(&mut compile), median(&mut latency));
            println!("bundle: {} ({} nodes)", b.graph.name, b.graph.node_count());
            println!("import:       {:>9.2} ms", import.as_secs_f64() * 1e3);
            println!("codegen:      {:>9.2} ms  (median of {})", cg * 1e3, codegen.len());
            println!("PJRT compile: {:>9.2} ms  (median of {})", cp * 1e3, compile.len());
            println!("codegen share of compile: {:.1} %", 100.0 * cg / (cg + cp));
            match load {
                Some(load) => println!("cache load:   {:>9.2} ms  (deserializing the executable)", load.as_secs_f64() * 1e3),
                None => println!("cache load:   n/a (the plugin cannot serialize this executable)"),
            }
            println!("run (upload + execute + download): {:.3} ms  (median of {})", lat * 1e3, latency.len());
            Ok(ExitCode::SUCCESS)
        }
        Command::Compile {
            bundle: input,
            emit,
            dump,
            check_indices,
            cache,
            target,
            output,
            pass_args,
            tp,
        } => {
            let freeze = pass_args.freeze;
            let options = pass_args.apply(Options {
                device: target.clone(),
                check_indices,
                tensor_parallel: tp.plan()?,
                ..Options::default()
            });
            options.check()?;
            let dump = dump.config()?;
            if input.extension().is_some_and(|e| e == "mlir") {
                if target.is_ahead_of_time() {
                    return aot::compile_mlir_file(&input, &target, output.as_deref());
                }
                return compile_mlir_on_device(&input, &options);
            }
            let start = std::time::Instant::now();
            let (graph, dump, frozen) = if is_ir_file(&input) {
                let graph = read_ir_file(&input, freeze)?;
                let dump = dump.map(|config| Dump::new(config, &graph.name));
                (graph, dump, Frozen::new())
            } else {
                let bundle = open_dumped(&input, dump.as_ref())?;
                let dump = dump.map(|config| bundle_dump(config, &bundle, start.elapsed()));
                let frozen = if freeze { fxhlo::frozen_weights(&bundle) } else { Frozen::new() };
                (bundle.graph, dump, frozen)
            };
            if target.is_ahead_of_time() {
                let (lowered, compiled) = aot::compile(&graph, &frozen, &options, dump.as_ref(), false)?;
                say_dumped(dump.as_ref());
                let line = aot::report(&compiled, &target, output.as_deref())?;
                // As with --cache: the report on stdout, or on stderr when a stage is printed.
                match emit {
                    None => println!("{line}"),
                    Some(emit) => {
                        eprintln!("{line}");
                        match emit {
                            Emit::Mlir => println!("{}", lowered.mlir),
                            Emit::Ir => print!("{}", fxhlo::ir::print(&graph)),
                        }
                    }
                }
                return Ok(ExitCode::SUCCESS);
            }
            if output.is_some() {
                anyhow::bail!("-o writes the executable of an ahead-of-time target (such as --target tpu:v6e:2x2); for {target} use --cache");
            }
            if cache {
                let session = Session::new(options)?;
                let compiled = session.compile(&graph, &frozen, dump.as_ref())?;
                say_dumped(dump.as_ref());
                let line = cache_line(&session, &compiled);
                match emit {
                    None => println!("{line}"),
                    Some(emit) => {
                        eprintln!("{line}");
                        match emit {
                            Emit::Mlir => println!("{}", compiled.lowered.mlir),
                            Emit::Ir => print!("{}", fxhlo::ir::print(&graph)),
                        }
                    }
                }
                return Ok(ExitCode::SUCCESS);
            }
            let emit = emit.unwrap_or(Emit::Mlir);
            let lowered = if matches!(emit, Emit::Mlir) || dump.is_some() {
                // No device here: the key names the device kind only (nothing is compiled or cached).
                let target = format!("{} (not compiled)", options.device);
                let lowered = fxhlo::Pipeline::new(options.clone()).lower(&graph, &frozen, dump.as_ref(), &target);
                say_dumped(dump.as_ref());
                Some(lowered.context("lowering to StableHLO")?)
            } else {
                None
            };
            match (emit, lowered) {
                (Emit::Mlir, Some(lowered)) => println!("{}", lowered.mlir),
                _ => print!("{}", fxhlo::ir::print(&graph)),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain { bundle, target, json, pass_args, tp } => {
            // The options `compile` builds from the same flags.
            let options = pass_args.apply(Options { device: target, tensor_parallel: tp.plan()?, ..Options::default() });
            options.check()?;
            explain::run(&bundle, &options, json)
        }
        Command::Cost { bundle, target, pass_args, tp } => {
            print!("{}", aot::cost(&bundle, &target, pass_args, tp.plan()?)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::AotWorker { args } => Ok(ExitCode::from(fxhlo::aot::worker_main(&args).clamp(0, 255) as u8)),
        Command::Cache { command } => cache::run(command),
    }
}

/// Whether `path` is an IR text file (`.gir`: a dump's stage, a failure's reproduction).
fn is_ir_file(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "gir")
}

/// The graph of the IR file `path`; `--freeze` (`freeze`) is refused: the file names weights
/// by digest only.
fn read_ir_file(path: &std::path::Path, freeze: bool) -> anyhow::Result<fxhlo::ir::Graph> {
    if freeze {
        anyhow::bail!("--freeze needs a bundle: an IR file names weights by digest only, without their bytes");
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    fxhlo::ir::parse(&text).with_context(|| format!("{}: not an IR file", path.display()))
}

/// A bundle's dump, with the trace that was read (its own bytes when it was JSON, else its
/// JSON) and the time reading it took.
fn bundle_dump(config: DumpConfig, bundle: &Bundle, import: std::time::Duration) -> Dump {
    let json = match std::fs::read(&bundle.graph_file) {
        Ok(bytes) if !bytes.starts_with(fxhlo::frontend::encoding::MAGIC) => bytes,
        _ => fxhlo::frontend::to_json(&bundle.trace).into_bytes(),
    };
    Dump::new(config, &bundle.graph.name).with_trace(json, import)
}

/// Says on stderr where a dump went.
fn say_dumped(dump: Option<&Dump>) {
    if let Some(dir) = dump.and_then(Dump::dir) {
        eprintln!("dumped to {}", dir.display());
    }
}

/// `fxhlo compile <module.mlir>` for a device target: the module as it is, compiled by the
/// device's PJRT compiler (no passes, no cache): a failure's reproduction, or a dump's module.
fn compile_mlir_on_device(path: &std::path::Path, options: &Options) -> anyhow::Result<ExitCode> {
    let mlir = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let env = EnvConfig::from_env();
    let target = fxhlo::runtime::Target::resolve_in(options.device.device, &env).map_err(fxhlo::Error::from)?;
    let devices = options.devices();
    let client = fxhlo::runtime::Client::with_devices(&target, &env, devices).map_err(fxhlo::Error::from)?;
    let start = std::time::Instant::now();
    client
        .compile_with_options(&mlir, &fxhlo::runtime::CompileOptions::partitioned(devices))
        .map_err(fxhlo::Error::from)?;
    let name = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    println!(
        "compiled {name} for {} ({}): PJRT compile {:.1} ms (not cached)",
        options.device,
        client.platform_name(),
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}

/// Where an executable came from, with the time it took: `PJRT compile 41.2 ms`, or `loaded
/// from the disk cache in 1.3 ms`.
fn provenance(compiled: &Compiled) -> String {
    let ms = compiled.compile_time.as_secs_f64() * 1e3;
    match compiled.cached {
        None => format!("PJRT compile {ms:.1} ms"),
        Some(tier) => format!("loaded from the {} cache in {ms:.1} ms", tier.name()),
    }
}

/// `compile --cache`'s report: compiled or already cached, the key's digest, and where the
/// entry is (or why none was written).
fn cache_line(session: &Session, compiled: &Compiled) -> String {
    let device = &session.options().device;
    let platform = session.client().platform_name();
    let digest = compiled.lowered.key.hex();
    let config = session.cache().config();
    let entry = config.dir.as_deref().map(|dir| fxhlo::cache::disk::entry_path(dir, &compiled.lowered.key));
    let stored = match (config.mode, &entry) {
        (CacheMode::Off, _) => format!("not stored on disk ({}=off)", fxhlo::env::FXHLO_CACHE),
        (_, None) => format!("not stored on disk (no cache folder: set {})", fxhlo::env::FXHLO_CACHE_DIR),
        (_, Some(path)) if path.is_file() => format!("entry {}", path.display()),
        (CacheMode::ReadOnly, Some(_)) => {
            format!("not stored on disk ({}=read-only)", fxhlo::env::FXHLO_CACHE)
        }
        (_, Some(path)) => format!(
            "not stored on disk: {} could not be written (see the warning above)",
            path.display()
        ),
    };
    match compiled.cached {
        None => format!("compiled `{}` for {device} ({platform}): {}; cache key {digest}, {stored}", compiled.graph(), provenance(compiled)),
        Some(_) => format!("`{}` for {device} ({platform}) is already cached: {}; cache key {digest}, {stored}", compiled.graph(), provenance(compiled)),
    }
}

/// Opens a bundle; when its folder holds both graph.json and graph.bin, says on stderr which
/// one was read and why.
fn open(path: &std::path::Path) -> anyhow::Result<Bundle> {
    open_dumped(path, None)
}

/// [`open`], and with `dump` a bundle that fails to import is dumped (its trace, the error,
/// the command that fails the same way) and the error says where.
fn open_dumped(path: &std::path::Path, dump: Option<&DumpConfig>) -> anyhow::Result<Bundle> {
    let bundle = fxhlo::open_bundle(path, dump)?;
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
