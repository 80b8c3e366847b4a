//! The `fxhlo` binary run as a user runs it: exit codes, the check line, clear errors for bad
//! input (each asserted on its message), and the compile cache across processes.

mod support;
use support::fxhlo;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testsuite/fixtures/mlp.fxt")
}


fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_string()
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-cli-{tag}-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    for f in ["graph.json", "weights.safetensors", "reference.safetensors"] {
        fs::copy(fixture().join(f), dir.join(f)).unwrap();
    }
    dir
}

#[test]
fn run_check_passes_on_the_bundled_trace() {
    let out = fxhlo(&["run", fixture().to_str().unwrap(), "--check"], &[]);
    assert!(out.status.success());
    let last = last_line(&out);
    assert!(last.starts_with("check: PASS") && last.contains("max_abs_err=") && last.contains("max_rel_err="), "{last}");
}

/// `--freeze`: the bundle's weights become constants (the caller passes only the user input),
/// and every fixture still matches PyTorch's reference; `compile -O0 --emit mlir` shows one
/// `@main` parameter, `-O1` more (the large weights, bound).
#[test]
fn freeze_compiles_the_weights_in_and_still_matches_the_reference() {
    for name in ["mlp", "cnn"] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testsuite/fixtures/{name}.fxt"));
        let out = fxhlo(&["run", path.to_str().unwrap(), "--check", "--freeze"], &[]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let last = last_line(&out);
        assert!(last.starts_with("check: PASS"), "{name}: {last}");
        // -O0: every weight is a constant. -O1: the large ones come back as parameters bound
        // to their bytes (`hoist-large-constants`), which the caller still does not pass.
        let params = |level: &str| {
            let out = fxhlo(&["compile", path.to_str().unwrap(), "--freeze", level, "--emit", "mlir"], &[]);
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(text.contains("stablehlo.constant"), "{name} {level}");
            let main = text.lines().find(|l| l.contains("func.func @main")).unwrap_or_default().to_string();
            main.matches("%arg").count()
        };
        let weights = fs::read(path.join("weights.safetensors")).unwrap();
        let weights = safetensors::SafeTensors::deserialize(&weights).unwrap();
        let large = weights
            .tensors()
            .iter()
            .filter(|(_, t)| t.shape().iter().product::<usize>() > ::fxhlo::passes::LARGE_CONSTANT_ELEMENTS)
            .count();
        assert_eq!(params("-O0"), 1, "{name}: only the user input stays a parameter at -O0");
        assert_eq!(params("-O1"), 1 + large, "{name}: the {large} large weights are bound parameters at -O1");
    }
}

#[test]
fn run_check_fails_when_the_reference_differs() {
    let dir = scratch("mismatch");
    let bytes = fs::read(dir.join("reference.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut owned: Vec<(String, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, view) in st.tensors() {
        let mut data = view.data().to_vec();
        if name == "output.0" {
            for chunk in data.chunks_mut(4) {
                let v = f32::from_le_bytes(chunk.try_into().unwrap()) * 1.5 + 0.25;
                chunk.copy_from_slice(&v.to_le_bytes());
            }
        }
        owned.push((name, view.shape().to_vec(), data));
    }
    let views: Vec<_> = owned
        .iter()
        .map(|(n, s, d)| {
            (
                n.clone(),
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, s.clone(), d)
                    .unwrap(),
            )
        })
        .collect();
    fs::write(dir.join("reference.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();
    let out = fxhlo(&["run", dir.to_str().unwrap(), "--check"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(last_line(&out).starts_with("check: FAIL"));
    // One line per output names its verdict, its errors and the rule that judged it.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("check: output 0 (f32): FAIL") && stdout.contains("8 of 8 elements differ; rule scale-aware"), "{stdout}");
    fs::remove_dir_all(dir).ok();
}

/// The preflight looks in the folder `FXHLO_DEV_DIR` names: an empty one is a machine
/// without a TPU, so this holds on a TPU host too.
#[test]
fn tpu_on_a_machine_without_one_fails_at_once() {
    let dev = scratch("tpu-dev-empty");
    for f in ["graph.json", "weights.safetensors", "reference.safetensors"] {
        fs::remove_file(dev.join(f)).unwrap();
    }
    let start = std::time::Instant::now();
    let out = fxhlo(
        &["run", fixture().to_str().unwrap(), "--device", "tpu"],
        &[("FXHLO_DEV_DIR", dev.to_str().unwrap())],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no TPU found") && stderr.contains(&format!("{}/accel*", dev.display())), "{stderr}");
    assert!(stderr.contains("FXHLO_TPU_FORCE"), "{stderr}");
    assert!(start.elapsed().as_secs() < 30, "the TPU preflight must not hang");
    // A device node there lets `tpu` through the preflight to plugin discovery.
    fs::write(dev.join("accel0"), b"").unwrap();
    let env = [
        ("FXHLO_DEV_DIR", dev.to_str().unwrap()),
        ("FXHLO_PJRT_PLUGIN", "/nonexistent/libtpu.so"),
    ];
    let out = fxhlo(
        &["run", fixture().to_str().unwrap(), "--device", "tpu"],
        &env,
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/libtpu.so") && !stderr.contains("no TPU found"), "{stderr}");
    fs::remove_dir_all(dev).ok();
}

#[test]
fn a_missing_plugin_is_named() {
    let out = fxhlo(&["run", fixture().to_str().unwrap()], &[("FXHLO_PJRT_PLUGIN", "/nonexistent/plugin.so")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/plugin.so") && stderr.to_lowercase().contains("does not exist"), "{stderr}");
}

#[test]
fn a_file_that_is_not_a_plugin_is_named() {
    let dir = scratch("notaplugin");
    let fake = dir.join("fake.so");
    fs::write(&fake, b"this is not a shared library").unwrap();
    let out = fxhlo(&["run", fixture().to_str().unwrap()], &[("FXHLO_PJRT_PLUGIN", fake.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("fake.so") && stderr.contains("not a PJRT plugin"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_malformed_trace_is_reported_with_its_position() {
    let dir = scratch("malformed");
    fs::write(dir.join("graph.json"), "{\"format\": \"fxhlo-trace\", \"version\": ").unwrap();
    let out = fxhlo(&["run", dir.to_str().unwrap(), "--check"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("graph.json:1:") && stderr.contains("malformed trace JSON"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compile_prints_ir_and_stablehlo() {
    let out = fxhlo(&["compile", fixture().to_str().unwrap(), "--emit", "ir"], &[]);
    assert!(out.status.success());
    let ir = String::from_utf8_lossy(&out.stdout);
    assert!(ir.starts_with("graph @mlp {") && ir.contains("aten.addmm"), "{ir}");
    let out = fxhlo(&["compile", fixture().to_str().unwrap(), "--emit", "mlir"], &[]);
    let mlir = String::from_utf8_lossy(&out.stdout);
    assert!(mlir.contains("stablehlo.dot_general") && mlir.contains("loc(\"addmm\""), "{mlir}");
}


/// Sets the modification time of `path` to `age` seconds ago.
fn age(path: &Path, secs: u64) {
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
}

/// Writes `dir/graph.bin` holding the fixture's graph renamed `name` (through `fxhlo import
/// --write-bin` on a copy whose graph.json has that name).
fn write_bin_named(dir: &Path, name: &str) {
    let other = scratch(&format!("renamed-{name}"));
    let json = fs::read_to_string(other.join("graph.json")).unwrap().replacen("\"name\": \"mlp\"", &format!("\"name\": \"{name}\""), 1);
    assert!(json.contains(name));
    fs::write(other.join("graph.json"), json).unwrap();
    let bin = dir.join("graph.bin");
    let out = fxhlo(&["import", other.to_str().unwrap(), "--write-bin", bin.to_str().unwrap()], &[]);
    assert!(out.status.success());
    fs::remove_dir_all(other).ok();
}

/// `fxhlo run b/graph.json` after `fxhlo import b --write-bin b/graph.bin` ran the graph.bin.
#[test]
fn run_reads_the_trace_file_it_is_given() {
    let dir = scratch("explicit");
    write_bin_named(&dir, "stale");
    age(&dir.join("graph.json"), 100);
    let out = fxhlo(&["run", dir.join("graph.json").to_str().unwrap(), "--check"], &[]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("compiled `mlp`") && last_line(&out).starts_with("check: PASS"), "{stdout}");
    let out = fxhlo(&["import", dir.join("graph.bin").to_str().unwrap(), "--print"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("graph @stale {"));
    fs::remove_dir_all(dir).ok();
}

/// A folder with both encodings reads the newer (graph.bin on a tie) and says which on stderr.
#[test]
fn a_bundle_with_both_encodings_reads_the_newer_and_says_so() {
    let dir = scratch("both");
    write_bin_named(&dir, "from_bin");
    age(&dir.join("graph.bin"), 100); // graph.json edited after graph.bin was written
    let out = fxhlo(&["import", dir.to_str().unwrap(), "--print"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("graph @mlp {"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("note: ") && stderr.contains("reading graph.json, modified after graph.bin"), "{stderr}");
    age(&dir.join("graph.json"), 200);
    let out = fxhlo(&["import", dir.to_str().unwrap(), "--print"], &[]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("graph @from_bin {"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reading graph.bin"));
    fs::remove_dir_all(dir).ok();
}

/// `--write-bin` replaces the file instead of rewriting it in place: a reader that opened the
/// old file reads it whole (an in-place write truncates it under the reader, who then read an
/// empty file: "missing the FXHLOTRC header"), and no temporary file is left.
#[test]
fn write_bin_replaces_the_file_atomically() {
    let dir = scratch("atomic");
    let bin = dir.join("graph.bin");
    fs::write(&bin, b"old contents").unwrap();
    let mut reader = fs::File::open(&bin).unwrap();
    let out = fxhlo(&["import", dir.join("graph.json").to_str().unwrap(), "--write-bin", bin.to_str().unwrap()], &[]);
    assert!(out.status.success());
    let mut seen = String::new();
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, "old contents");
    assert!(fs::read(&bin).unwrap().starts_with(b"FXHLOTRC"));
    let mut names: Vec<String> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["graph.bin", "graph.json", "reference.safetensors", "weights.safetensors"]);
    fs::remove_dir_all(dir).ok();
}

/// `compile --dump` replaces each dump file the same way (and still takes a folder, the
/// flag's older form, as `--dump all --dump-dir <folder>`).
#[test]
fn compile_dump_replaces_files_atomically() {
    let dir = scratch("dump");
    let dumps = dir.join("dumps");
    let out = fxhlo(&["compile", dir.to_str().unwrap(), "--dump", dumps.to_str().unwrap()], &[]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is read as --dump all --dump-dir"));
    let graph_dir = fs::read_dir(&dumps).unwrap().next().unwrap().unwrap().path();
    let mlir = fs::read_dir(&graph_dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().ends_with("-stablehlo.mlir")).unwrap();
    fs::write(&mlir, b"old contents").unwrap();
    let mut reader = fs::File::open(&mlir).unwrap();
    let out = fxhlo(&["compile", dir.to_str().unwrap(), "--dump", dumps.to_str().unwrap()], &[]);
    assert!(out.status.success());
    let mut seen = String::new();
    reader.read_to_string(&mut seen).unwrap();
    assert_eq!(seen, "old contents");
    assert!(fs::read_to_string(&mlir).unwrap().contains("stablehlo"));
    assert!(fs::read_dir(&graph_dir).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".tmp")));
    fs::remove_dir_all(dir).ok();
}

fn stderr_of(args: &[&str]) -> String {
    let out = fxhlo(args, &[]);
    assert_eq!(out.status.code(), Some(1));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A path that is not a bundle says what it is and what was expected.
#[test]
fn a_path_of_the_wrong_kind_says_what_it_is() {
    let dir = scratch("kinds");
    fs::rename(dir.join("graph.json"), dir.join("trace.json")).unwrap();
    fs::create_dir(dir.join("graph.json")).unwrap();
    let stderr = stderr_of(&["import", dir.to_str().unwrap()]);
    assert!(stderr.contains(&format!("{} is a directory, expected a trace file", dir.join("graph.json").display())), "{stderr}");

    let fifo = dir.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("run mkfifo").success());
    let stderr = stderr_of(&["import", fifo.to_str().unwrap()]);
    assert!(stderr.contains(&format!("{} is a FIFO, expected a bundle folder or a trace file", fifo.display())), "{stderr}");

    let stderr = stderr_of(&["import", dir.join("weights.safetensors").to_str().unwrap()]);
    assert!(stderr.contains("weights.safetensors: not a trace file"), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

/// A folder that cannot be read says so. Permission bits do not stop root, so as root fxhlo
/// runs as another user (nobody, 65534): the check is never skipped.
#[test]
fn an_unreadable_folder_says_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = scratch("unreadable");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o000)).unwrap();
    let as_root = fs::read_dir(&dir).is_ok(); // permission bits did not apply to this process
    // As nobody, the binary must be reachable: the checkout may sit in a folder only root may
    // enter (`mktemp -d` makes them 0700), so nobody runs a copy in a folder open to all.
    let exe_dir = std::env::temp_dir().join(format!("fxhlo-cli-exe-{}", std::process::id()));
    let exe = if as_root {
        fs::create_dir_all(&exe_dir).unwrap();
        fs::set_permissions(&exe_dir, fs::Permissions::from_mode(0o755)).unwrap();
        let copy = exe_dir.join("fxhlo");
        fs::copy(env!("CARGO_BIN_EXE_fxhlo"), &copy).unwrap();
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
        copy
    } else {
        PathBuf::from(env!("CARGO_BIN_EXE_fxhlo"))
    };
    let mut cmd = Command::new(&exe);
    cmd.args(["import", dir.to_str().unwrap()]).env("FXHLO_CACHE", "off");
    if as_root {
        cmd.uid(65534).gid(65534);
    }
    let out = cmd.output().expect("run fxhlo");
    fs::remove_dir_all(&exe_dir).ok();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{}: permission denied reading the folder", dir.display())), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

/// A truncated graph.bin says what was being read and at which byte, not bincode's structs.
#[test]
fn a_truncated_graph_bin_names_the_part_and_the_byte() {
    let dir = scratch("truncated");
    let bin = dir.join("graph.bin");
    let out = fxhlo(&["import", dir.to_str().unwrap(), "--write-bin", bin.to_str().unwrap()], &[]);
    assert!(out.status.success());
    let bytes = fs::read(&bin).unwrap();
    // The last byte is the (empty) subgraph list's length; before it, the graph's one output
    // is the string `addmm_1`: 7 bytes, of which 6 are left.
    fs::write(&bin, &bytes[..bytes.len() - 2]).unwrap();
    let stderr = stderr_of(&["run", bin.to_str().unwrap()]);
    let want = format!("graph.bin: malformed bincode trace at byte {}: unexpected end of input reading graph output 0", bytes.len() - 8);
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!stderr.contains("UnexpectedEnd") && !stderr.contains('{'), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_missing_weights_file_is_named() {
    let dir = scratch("noweights");
    fs::remove_file(dir.join("weights.safetensors")).unwrap();
    let stderr = stderr_of(&["run", dir.to_str().unwrap()]);
    let want = format!("{}: no such file, but parameter `arg0_1` needs tensor `fc1.weight` from it", dir.join("weights.safetensors").display());
    assert!(stderr.contains(&want), "{stderr}");
    fs::remove_dir_all(dir).ok();
}

/// A fresh, not yet existing cache folder for one test.
fn cache_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-cli-cache-{tag}-{}", std::process::id()));
    fs::remove_dir_all(&dir).ok();
    dir
}

/// Runs the binary on the cache folder `dir`, read-write.
fn cached(args: &[&str], dir: &Path) -> Output {
    fxhlo(args, &[("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", dir.to_str().unwrap())])
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The names of the files in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// `compile --cache` compiles once; a second process finds the entry, which `cache ls`
/// and `cache stats` show.
#[test]
fn compile_cache_compiles_once_and_the_next_process_loads_it() {
    let dir = cache_dir("compile");
    let stats = cached(&["cache", "stats"], &dir);
    assert!(stats.status.success());
    let text = stdout(&stats);
    assert!(text.contains("does not exist yet") && text.contains("entries: 0 ") && text.contains("4.0 GiB (4294967296 bytes"), "{text}");

    let first = cached(&["compile", fixture().to_str().unwrap(), "--cache"], &dir);
    assert!(first.status.success());
    let first = stdout(&first);
    assert!(first.starts_with("compiled `mlp` for cpu") && first.contains("PJRT compile"), "{first}");
    let digest = first.split("cache key ").nth(1).unwrap()[..64].to_string();
    assert_eq!(names(&dir), [format!("{digest}.fxc")]);

    let second = stdout(&cached(&["compile", fixture().to_str().unwrap(), "--cache"], &dir));
    assert!(second.contains("`mlp` for cpu (cpu) is already cached: loaded from the disk cache") && second.contains(&digest), "{second}");

    let ls = stdout(&cached(&["cache", "ls"], &dir));
    let lines: Vec<&str> = ls.lines().collect();
    assert_eq!(lines.len(), 1, "{ls}");
    assert!(lines[0].starts_with(&digest[..16]) && lines[0].contains("inputs: user_input f32[2,8], 4 parameters"), "{ls}");
    assert!(lines[0].contains("target: cpu") && lines[0].contains("options: device=cpu check_indices=false"), "{ls}");

    let stats = stdout(&cached(&["cache", "stats"], &dir));
    assert!(stats.contains("entries: 1 (") && stats.contains("mode:    read-write"), "{stats}");
    fs::remove_dir_all(dir).ok();
}

/// `fxhlo run` in two processes: the second says its executable came from the disk cache.
#[test]
fn a_second_run_loads_from_the_disk_cache() {
    let dir = cache_dir("run");
    let first = cached(&["run", fixture().to_str().unwrap(), "--check"], &dir);
    assert!(first.status.success());
    assert!(stdout(&first).contains("PJRT compile") && !stdout(&first).contains("cache"), "{}", stdout(&first));
    let second = cached(&["run", fixture().to_str().unwrap(), "--check"], &dir);
    assert!(second.status.success());
    let text = stdout(&second);
    assert!(text.contains("compiled `mlp` for cpu (cpu): codegen") && text.contains("loaded from the disk cache in"), "{text}");
    assert!(last_line(&second).starts_with("check: PASS"), "{text}");
    fs::remove_dir_all(dir).ok();
}

/// A damaged entry is named by `cache verify` (exit 1) and removed by `verify --fix`; `ls`
/// lists a file that is no entry at all as unreadable, with the reason.
#[test]
fn cache_verify_names_a_corrupt_entry_and_fix_removes_it() {
    let dir = cache_dir("verify");
    assert!(cached(&["compile", fixture().to_str().unwrap(), "--cache"], &dir).status.success());
    let ok = cached(&["cache", "verify"], &dir);
    assert!(ok.status.success() && stdout(&ok).contains("1 entry checked") && stdout(&ok).contains("1 ok, 0 bad"), "{}", stdout(&ok));

    let entry = dir.join(&names(&dir)[0]);
    let mut bytes = fs::read(&entry).unwrap();
    *bytes.last_mut().unwrap() ^= 0x55; // the last byte is the payload's
    fs::write(&entry, bytes).unwrap();
    fs::write(dir.join("junk.fxc"), b"not an entry").unwrap();

    let ls = stdout(&cached(&["cache", "ls"], &dir));
    assert!(ls.lines().any(|l| l.starts_with("junk ") && l.contains("unreadable: not an fxhlo cache entry")), "{ls}");

    let bad = cached(&["cache", "verify"], &dir);
    assert_eq!(bad.status.code(), Some(1));
    let text = stdout(&bad);
    let name = entry.file_name().unwrap().to_str().unwrap();
    assert!(text.contains(&format!("bad: {name}: payload checksum does not match")), "{text}");
    assert!(text.contains("bad: junk.fxc: not an fxhlo cache entry") && text.contains("0 ok, 2 bad"), "{text}");
    assert_eq!(names(&dir).len(), 2, "verify without --fix removes nothing");

    // Read-only forbids removing; read-write removes both.
    let ro = fxhlo(&["cache", "verify", "--fix"], &[("FXHLO_CACHE", "read-only"), ("FXHLO_CACHE_DIR", dir.to_str().unwrap())]);
    assert_eq!(ro.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&ro.stderr).contains("FXHLO_CACHE=read-only"));
    let fixed = cached(&["cache", "verify", "--fix"], &dir);
    assert_eq!(fixed.status.code(), Some(1));
    assert!(stdout(&fixed).contains(&format!("bad: {name}: payload checksum does not match")) && stdout(&fixed).contains("2 removed"));
    assert!(names(&dir).is_empty());
    assert!(cached(&["cache", "verify"], &dir).status.success());
    fs::remove_dir_all(dir).ok();
}

/// An executable the plugin cannot serialize (XLA's CPU XNNPACK fusion, turned on through
/// `XLA_FLAGS`) compiles and runs; the cache says why it stored nothing, and nothing panics
/// (the `pjrt` crate's own serialization panics on the plugin's error).
#[test]
fn an_executable_the_plugin_cannot_serialize_is_not_cached_and_nothing_panics() {
    let dir = cache_dir("unserializable");
    let xnn = ("XLA_FLAGS", "--xla_cpu_experimental_xnn_graph_fusion_mode=XNN_GRAPH_FUSION_MODE_GREEDY");
    let out = fxhlo(
        &["compile", fixture().to_str().unwrap(), "--cache"],
        &[("FXHLO_CACHE", "read-write"), ("FXHLO_CACHE_DIR", dir.to_str().unwrap()), xnn],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("cannot serialize this executable") && err.contains("not cached"), "{err}");
    assert!(!dir.exists() || names(&dir).iter().all(|n| !n.ends_with(".fxc")), "nothing stored");
    fs::remove_dir_all(dir).ok();
}

/// `cache clear` removes the entries and leftover temporaries, and nothing else of the folder.
#[test]
fn cache_clear_removes_entries_only() {
    let dir = cache_dir("clear");
    assert!(cached(&["compile", fixture().to_str().unwrap(), "--cache"], &dir).status.success());
    let size = fs::metadata(dir.join(&names(&dir)[0])).unwrap().len();
    fs::write(dir.join(".0123.fxc.999.0.tmp"), b"half an entry").unwrap();
    fs::write(dir.join("notes.txt"), b"mine").unwrap();
    fs::write(dir.join("other.tmp"), b"not the cache's").unwrap();
    let out = cached(&["cache", "clear"], &dir);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.starts_with("removed 1 entry (") && text.contains(&format!("{size} bytes) and 1 temporary file from")), "{text}");
    assert_eq!(names(&dir), ["notes.txt", "other.tmp"]);
    assert!(stdout(&cached(&["cache", "stats"], &dir)).contains("entries: 0 "));
    assert!(stdout(&cached(&["cache", "ls"], &dir)).is_empty());
    fs::remove_dir_all(dir).ok();
}

/// `-O0`, `--passes` and `--max-passes` choose the passes; a typo lists the valid names.
#[test]
fn pass_selection_flags() {
    let bundle = fixture();
    let b = bundle.to_str().unwrap();
    for args in [&["run", b, "--check", "-O0"][..], &["run", b, "--check", "--passes", "dce,depthwise-conv-taps"], &["run", b, "--check", "--max-passes", "0"]] {
        let out = fxhlo(args, &[]);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let err = stderr_of(&["run", b, "--passes", "dce,fold-everything"]);
    assert!(err.contains("unknown pass `fold-everything`") && err.contains("depthwise-conv-taps"), "{err}");
    // `cost` takes the same flags (its -O1/-O2 ablation under the TPU cost model), checked
    // before anything compiles.
    let err = stderr_of(&["cost", b, "--passes", "dce,fold-everything"]);
    assert!(err.contains("unknown pass `fold-everything`") && err.contains("batch-blocks"), "{err}");
    let out = fxhlo(&["run", b, "-O3"], &[]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("-O"), "{out:?}");
}
