//! Ahead-of-time TPU targets through the `fxhlo` binary: real libtpu (installed into .venv by
//! scripts/setup.sh) compiling for topologies this machine does not have, the compile cache,
//! the cost report, crashes of the TPU compiler kept out of the caller, and the fast failure of
//! `tpu` on a machine without one.

mod support;
use support::fxhlo;

use std::fs;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures")
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-aot-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}


fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Every model fixture, f32 and bf16 (transformers included).
const MODELS: &[&str] = &[
    "mlp",
    "mlp_bf16",
    "cnn",
    "cnn_bf16",
    "resnet_block",
    "resnet_block_bf16",
    "unet_block",
    "unet_block_bf16",
    "gpt_block",
    "gpt_block_bf16",
    "transformer_encoder",
    "transformer_encoder_bf16",
];

#[test]
fn model_fixtures_compile_ahead_of_time_for_v6e_and_v5e() {
    let dir = scratch("fixtures");
    for topology in ["v6e:2x2", "v5e:2x2"] {
        for name in MODELS {
            let bundle = fixtures().join(format!("{name}.fxt"));
            let exe = dir.join(format!("{name}-{}.tpu", topology.replace(':', "_")));
            let target = format!("tpu:{topology}");
            let out = fxhlo(&["compile", bundle.to_str().unwrap(), "--target", &target, "-o", exe.to_str().unwrap()], &[]);
            assert!(out.status.success(), "{name} for {target}: {}", stderr(&out));
            assert!(stdout(&out).contains(&format!("`{name}` for {target}: compiled in")), "{}", stdout(&out));
            let size = fs::metadata(&exe).map(|m| m.len()).unwrap_or(0);
            // A real TPU executable: libtpu's serialized form is at least tens of kilobytes.
            assert!(size > 10_000, "{name} for {target}: executable of {size} bytes");
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

/// A softmax whose max-reduction selects NaN inside its body: the form fxhlo emitted for every
/// transformer until reductions moved the NaN check outside the body. libtpu 0.0.52 dies on it
/// with SIGSEGV in its fusion pass (TpuPriorityFusionQueue), so it stands for "the TPU compiler
/// crashes on valid StableHLO".
const CRASHES_LIBTPU: &str = r#"func.func @main(%x: tensor<4x8x8xf32>) -> tensor<4x8x8xf32> {
  %29 = stablehlo.reshape %x : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
  %30 = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %31 = "stablehlo.reduce"(%29, %30) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %134 = "stablehlo.maximum"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      %135 = "stablehlo.compare"(%a, %a) {compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction NE>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %136 = "stablehlo.select"(%135, %a, %134) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      %137 = "stablehlo.compare"(%b, %b) {compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction NE>} : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %138 = "stablehlo.select"(%137, %b, %136) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%138) : (tensor<f32>) -> ()
    }) {dimensions = array<i64: 3>} : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
  %32 = stablehlo.reshape %31 : (tensor<2x2x8xf32>) -> tensor<2x2x8x1xf32>
  %33 = stablehlo.broadcast_in_dim %32, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
  %34 = stablehlo.subtract %29, %33 : tensor<2x2x8x8xf32>
  %35 = stablehlo.exponential %34 : tensor<2x2x8x8xf32>
  %36 = stablehlo.constant dense<0.0> : tensor<f32>
  %37 = stablehlo.reduce(%35 init: %36) applies stablehlo.add across dimensions = [3] : (tensor<2x2x8x8xf32>, tensor<f32>) -> tensor<2x2x8xf32>
  %38 = stablehlo.reshape %37 : (tensor<2x2x8xf32>) -> tensor<2x2x8x1xf32>
  %39 = stablehlo.broadcast_in_dim %38, dims = [0, 1, 2, 3] : (tensor<2x2x8x1xf32>) -> tensor<2x2x8x8xf32>
  %40 = stablehlo.divide %35, %39 : tensor<2x2x8x8xf32>
  %52 = stablehlo.reshape %40 : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
  return %52 : tensor<4x8x8xf32>
}
"#;

/// The crash must stay in the worker process and come back as a typed error naming the graph
/// and the target, with the module kept for a bug report.
#[test]
fn a_crash_of_the_tpu_compiler_is_an_error_not_a_dead_process() {
    let dir = scratch("crash");
    let module = dir.join("softmax_select_body.mlir");
    fs::write(&module, CRASHES_LIBTPU).unwrap();
    let out = fxhlo(
        &[
            "compile",
            module.to_str().unwrap(),
            "--target",
            "tpu:v6e:2x2",
        ],
        &[],
    );
    let err = stderr(&out);
    // The binary itself exits normally with status 1 (a signal would give no code).
    assert_eq!(out.status.code(), Some(1), "{err}");
    if err.contains("compiler crashed") {
        assert!(
            err.contains("softmax_select_body") && err.contains("tpu:v6e:2x2"),
            "{err}"
        );
        assert!(err.contains("signal 11"), "{err}");
        let kept = err
            .split("the module is kept in ")
            .nth(1)
            .and_then(|r| r.split(" for a bug report").next())
            .unwrap_or("");
        let kept_module = fs::read_to_string(kept).unwrap_or_default();
        assert!(
            kept_module.contains("func.func @main"),
            "kept module {kept}"
        );
        let _ = fs::remove_file(kept);
    } else {
        panic!("expected the known libtpu 0.0.52 crash on this module (a newer libtpu may compile it: then find another crash or drop the test): {err}");
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn ahead_of_time_executables_go_through_the_cache_keyed_by_topology() {
    let dir = scratch("cache");
    let cache = dir.join("cache");
    let env = [("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", cache.to_str().unwrap())];
    let bundle = fixtures().join("mlp.fxt");
    let b = bundle.to_str().unwrap();
    let key = |out: &Output| {
        stdout(out)
            .split("cache key ")
            .nth(1)
            .map(|k| k.trim().to_string())
            .unwrap_or_default()
    };
    let first = fxhlo(&["compile", b, "--target", "tpu:v6e:2x2"], &env);
    assert!(first.status.success() && stdout(&first).contains("compiled in"), "{}", stderr(&first));
    let second = fxhlo(&["compile", b, "--target", "tpu:v6e:2x2"], &env);
    assert!(second.status.success() && stdout(&second).contains("already cached (disk tier"), "{}", stdout(&second));
    assert_eq!(key(&first), key(&second));
    let other = fxhlo(&["compile", b, "--target", "tpu:v5e:2x2"], &env);
    assert!(other.status.success() && stdout(&other).contains("compiled in"), "{}", stdout(&other));
    assert_ne!(key(&first), key(&other), "v6e and v5e executables must not share a key");
    assert_eq!(key(&first).len(), 64);
    let _ = fs::remove_dir_all(&dir);
}

/// What `fxhlo compile --target tpu:v6e:2x2 --cache` stores is the entry a TPU VM with a v6e
/// 2x2 slice looks up for the same graph (`device="tpu"`): its session keys the target from its
/// client's topology description, which the plugin's description of `v6e:2x2` stands in for
/// here (no TPU): the same fields, read by the same code (`TopologyInfo`).
#[test]
fn a_tpu_vm_of_the_topology_finds_what_was_compiled_ahead_of_time() {
    use fxhlo::runtime::{DeviceKind, EnvConfig, Target, TargetName};
    let dir = scratch("vm-key");
    let cache = dir.join("cache");
    let env = [("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", cache.to_str().unwrap())];
    let bundle = fixtures().join("mlp.fxt");
    let out = fxhlo(&["compile", bundle.to_str().unwrap(), "--target", "tpu:v6e:2x2", "--cache"], &env);
    assert!(out.status.success(), "{}", stderr(&out));
    let aot_key = stdout(&out).split("cache key ").nth(1).map(|k| k.trim().to_string()).unwrap_or_default();

    // The session of a TPU VM: `device="tpu"`, and the target as `Session::target_id` makes it
    // from a client's topology (the plugin's description of v6e:2x2, in a worker process).
    let name: TargetName = "tpu:v6e:2x2".parse().unwrap();
    let plugin = Target::resolve_ahead_of_time(&name, &EnvConfig::from_env()).unwrap().plugin;
    let worker = fxhlo::aot::Worker { program: env!("CARGO_BIN_EXE_fxhlo").into(), args: vec!["aot-worker".into()] };
    let topology = Target { device: DeviceKind::Tpu, plugin: plugin.clone(), topology: Some("v6e:2x2".into()) };
    let described = fxhlo::aot::describe(&topology, &worker).unwrap();
    assert_eq!((described.platform_name.as_str(), described.device_count, described.layout().as_str()), ("tpu", 4, "2x2x1"), "{described:?}");
    let id = fxhlo::cache::topology_target_id(DeviceKind::Tpu, &fxhlo::cache::plugin_identity(&plugin), &described);
    let graph = fxhlo::frontend::Bundle::open(&bundle).unwrap().graph;
    let vm = fxhlo::Pipeline::new(fxhlo::Options { device: DeviceKind::Tpu.into(), ..fxhlo::Options::default() });
    let vm_key = vm.key(&graph, &fxhlo::Frozen::new(), &id);
    assert_eq!(vm_key.hex(), aot_key, "the VM's key {vm_key:?}");
    // And the folder the compile filled holds it: the VM's first call loads it.
    let config = fxhlo::CacheConfig { mode: fxhlo::CacheMode::ReadOnly, ..fxhlo::CacheConfig::in_dir(&cache) };
    let found = fxhlo::CompileCache::new(config).get(&vm_key);
    assert!(matches!(found, Some((_, fxhlo::Tier::Disk))), "no entry for the VM's key");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn the_cost_of_a_matmul_is_two_m_n_k_flops() {
    let dir = scratch("cost");
    let (m, k, n) = (64i64, 128i64, 32i64);
    let module = dir.join("mm.mlir");
    fs::write(
        &module,
        format!(
            "func.func @main(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{\n\
             %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>\n\
             return %0 : tensor<{m}x{n}xf32>\n}}\n"
        ),
    )
    .unwrap();
    let out = fxhlo(&["cost", module.to_str().unwrap(), "--target", "tpu:v6e:2x2"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let field = |name: &str| -> f64 {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|v| v.trim().split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let flops = field("flops:");
    assert_eq!(flops, (2 * m * n * k) as f64, "{text}");
    // The roofline on one v6e: the slower of compute at 918 TFLOP/s and memory at 1640 GB/s.
    let bytes = field("bytes accessed:");
    let want = (flops / 918e12).max(bytes / 1640e9);
    let roofline: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("roofline on one TPU v6e"))
        .and_then(|l| l.split("): ").nth(1))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    println!("flops {flops}, bytes {bytes}, roofline {roofline:e} s, expected {want:e} s");
    assert!((roofline - want).abs() <= want * 1e-6, "{text}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_unknown_topology_is_named_in_the_error() {
    let bundle = fixtures().join("mlp.fxt");
    let out = fxhlo(&["compile", bundle.to_str().unwrap(), "--target", "tpu:v99:9x9"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("v99:9x9"), "{}", stderr(&out));
}

#[test]
fn tpu_without_a_tpu_fails_in_under_a_second_and_says_how_to_compile_ahead_of_time() {
    let dev = scratch("no-tpu-dev");
    let bundle = fixtures().join("mlp.fxt");
    let start = Instant::now();
    let out = fxhlo(
        &["run", bundle.to_str().unwrap(), "--device", "tpu"],
        &[("FXHLO_DEV_DIR", dev.to_str().unwrap())],
    );
    let took = start.elapsed();
    println!("failed after {:.0} ms", took.as_secs_f64() * 1e3);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("no TPU found") && err.contains("--target tpu:v6e:2x2"), "{err}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let _ = fs::remove_dir_all(&dev);
}

/// The Megatron-style plan compiles ahead of time over the chips of the seeds' slices: 4 on
/// `v6e:2x2`, 8 on `v6e:2x4` (XLA's SPMD partitioner for TPU, one program per chip).
#[test]
fn the_tensor_parallel_plan_compiles_for_v6e_slices_of_4_and_8_chips() {
    for name in ["gpt_block", "transformer_encoder_bf16"] {
        let bundle = fixtures().join(format!("{name}.fxt"));
        let mut sizes = Vec::new();
        for (topology, devices) in [
            ("tpu:v6e:2x2", "1"),
            ("tpu:v6e:2x2", "4"),
            ("tpu:v6e:2x4", "8"),
        ] {
            let out = fxhlo(
                &[
                    "compile",
                    bundle.to_str().unwrap(),
                    "--target",
                    topology,
                    "--tensor-parallel",
                    devices,
                ],
                &[("FXHLO_CACHE", "off")],
            );
            let text = stdout(&out);
            println!("{name} {topology} over {devices}: {}", text.trim());
            assert!(
                out.status.success() && text.contains("compiled in"),
                "{name} {topology} x{devices}: {}",
                stderr(&out)
            );
            let size: u64 = text
                .split("TPU executable ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            sizes.push(size);
        }
        // A partitioned program carries its collectives and per-chip programs: not the
        // single-chip executable again.
        assert!(
            sizes[1] != sizes[0] && sizes[2] != sizes[0],
            "{name}: executable sizes {sizes:?}"
        );
    }
    // The annotations reach the partitioner: each of 4 chips does well under the whole
    // block's flops (the split matmuls are a quarter each; norms and softmax stay whole).
    let flops = |devices: &str| -> f64 {
        let bundle = fixtures().join("gpt_block.fxt");
        let out = fxhlo(
            &["cost", bundle.to_str().unwrap(), "--target", "tpu:v6e:2x2", "--tensor-parallel", devices],
            &[("FXHLO_CACHE", "off")],
        );
        let text = stdout(&out);
        text.lines()
            .find_map(|l| l.trim().strip_prefix("flops:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no flops in: {text}\n{}", stderr(&out)))
    };
    let (one, four) = (flops("1"), flops("4"));
    println!("gpt_block flops per chip: 1 chip {one:.4e}, 4 chips {four:.4e}");
    assert!(four < 0.75 * one, "per-chip flops over 4 chips {four} vs one chip {one}");
}

/// `--dump` on an ahead-of-time compile: the worker's XLA dumps the HLO it compiled for the
/// TPU into the graph's dump folder (`NN-xla/`), and the report names it.
#[test]
fn an_ahead_of_time_dump_holds_the_tpu_compilers_own_dump() {
    let dir = scratch("dump");
    let dumps = dir.join("dumps");
    let bundle = fixtures().join("mlp.fxt");
    let out = fxhlo(
        &["compile", bundle.to_str().unwrap(), "--target", "tpu:v6e:2x2", "--dump", "all", "--dump-dir", dumps.to_str().unwrap()],
        &[("FXHLO_CACHE", "off")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let graph = fs::read_dir(&dumps).unwrap().next().unwrap().unwrap().path();
    let xla = fs::read_dir(&graph)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().ends_with("-xla"))
        .unwrap_or_else(|| panic!("no NN-xla folder in {graph:?}"));
    let files: Vec<String> = fs::read_dir(&xla).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(files.iter().any(|f| f.contains("after_optimizations") && f.ends_with(".txt")), "{files:?}");
    let report = fs::read_to_string(graph.join("report.txt")).unwrap();
    let name = xla.file_name().unwrap().to_string_lossy().into_owned();
    assert!(report.contains(&format!("{name}/")), "{report}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn attention_recompute_keeps_the_scores_of_an_attention_out_of_tpu_memory() {
    // The UNet-sized attention of the batch-blocks file test (16 heads x 1,024 x 8, 64 MB of
    // f32 scores), as PyTorch's SDPA decomposes it, in f32 and in bf16: XLA's TPU cost
    // analysis at -O1 and at -O2 (whose TPU pipeline runs attention-recompute).
    let dir = scratch("attention");
    let text = fs::read_to_string(fixtures().parent().unwrap().join("filetests/passes/batch-blocks/attention.gir")).unwrap();
    let bytes = |out: &Output| -> f64 {
        stdout(out)
            .lines()
            .find_map(|l| l.trim().strip_prefix("bytes accessed:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    for (dtype, most) in [("f32", 0.6), ("bf16", 0.2)] {
        let path = dir.join(format!("attention_{dtype}.gir"));
        fs::write(&path, text.replace("f32", dtype)).unwrap();
        let cost = |level: &str| fxhlo(&["cost", path.to_str().unwrap(), "--target", "tpu:v6e:2x2", level], &[]);
        let (o1, o2) = (cost("-O1"), cost("-O2"));
        assert!(o1.status.success() && o2.status.success(), "{}{}", stderr(&o1), stderr(&o2));
        let (b1, b2) = (bytes(&o1), bytes(&o2));
        println!("{dtype}: bytes accessed -O1 {b1:.4e}, -O2 {b2:.4e} ({:.3})", b2 / b1);
        assert!(b2 < most * b1, "{dtype}: -O2 {b2} against -O1 {b1}\n{}", stdout(&o2));
    }
    let _ = fs::remove_dir_all(&dir);
}
