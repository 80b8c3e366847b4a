//! The compile cache: what the key holds, the disk tier's safety (damaged entries, eviction,
//! read-only and unwritable folders), and the session reading and filling it on the real CPU
//! plugin.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use fxhlo::cache::disk;
use fxhlo::runtime::{EnvConfig, HostTensor};
use fxhlo::{CacheConfig, CacheKey, CacheMode, CompileCache, Session, Frozen, Options, Tier};
use fxhlo_ir::{DType, Graph, Op, UnaryOp, ValueRef};

use crate::support::Builder;

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fxhlo-cache-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// `relu(x @ w)` with `x: f32[n,4]` and a parameter `w: f32[4,3]`, its nodes named `prefix*`.
fn graph(n: i64, prefix: &str) -> Graph {
    let mut b = Builder::new(&format!("{prefix}graph"));
    let x = b.input(&format!("{prefix}x"), DType::F32, &[n, 4]);
    let w = ValueRef::first(b.g.add_input(
        format!("{prefix}w"),
        fxhlo_ir::InputKind::Parameter,
        Some("fc.weight".to_string()),
        fxhlo_ir::TensorType::new(DType::F32, vec![4, 3]),
        None,
    ));
    let mm = b.op(Op::Mm, &[x, w], None);
    let r = b.op(Op::Unary(UnaryOp::Relu), &[mm], None);
    b.finish(&[r])
}

fn key(g: &Graph) -> CacheKey {
    CacheKey::new(g, &Options::default(), &Frozen::new(), "cpu 0.81 (1 device)".to_string())
}

fn session(cache: &Arc<CompileCache>) -> Session {
    Session::with_cache(Options::default(), &EnvConfig::from_env(), cache.clone()).expect("CPU PJRT client")
}

fn args(n: i64) -> Vec<HostTensor> {
    let x: Vec<f32> = (0..n * 4).map(|i| (i as f32 - 5.0) * 0.25).collect();
    let w: Vec<f32> = (0..12).map(|i| 1.0 - i as f32 * 0.2).collect();
    vec![HostTensor::from_f32([n, 4], &x).unwrap(), HostTensor::from_f32([4, 3], &w).unwrap()]
}

#[test]
fn names_sources_and_the_graph_name_do_not_change_the_key() {
    let (a, b) = (graph(2, "a_"), graph(2, "other_"));
    assert_ne!(fxhlo_ir::print(&a), fxhlo_ir::print(&b));
    assert_eq!(key(&a), key(&b));
    assert_eq!(key(&a).hex(), key(&b).hex());
}

/// Each field of the key changes its digest, and `differences` names it.
#[test]
fn every_key_field_changes_the_key() {
    let base = key(&graph(2, ""));
    let mut variants: Vec<(&str, CacheKey)> = Vec::new();
    let mut k = base.clone();
    k.fxhlo = "9.9.9".into();
    variants.push(("fxhlo", k));
    // Another shape changes inputs and graph; another op the structure too.
    variants.push(("input 0", key(&graph(3, ""))));
    let mut b = Builder::new("g");
    let x = b.input("x", DType::F32, &[2, 4]);
    let r = b.op(Op::Unary(UnaryOp::Sigmoid), &[x], None);
    variants.push(("structure", key(&b.finish(&[r]))));
    let mut frozen = Frozen::new();
    frozen.insert("w".into(), fxhlo::ir::TensorData::new(vec![0u8; 48]));
    variants.push(("frozen", CacheKey::new(&graph(2, ""), &Options::default(), &frozen, "cpu 0.81 (1 device)".into())));
    let mut frozen2 = Frozen::new();
    frozen2.insert("w".into(), fxhlo::ir::TensorData::new(vec![1u8; 48]));
    let f1 = CacheKey::new(&graph(2, ""), &Options::default(), &frozen, "t".into());
    let f2 = CacheKey::new(&graph(2, ""), &Options::default(), &frozen2, "t".into());
    assert_ne!(f1.hex(), f2.hex(), "changed frozen weights must change the key");
    let checked = Options { check_indices: true, ..Options::default() };
    variants.push(("options", CacheKey::new(&graph(2, ""), &checked, &Frozen::new(), "cpu 0.81 (1 device)".into())));
    variants.push(("target", CacheKey::new(&graph(2, ""), &Options::default(), &Frozen::new(), "cpu 0.115 (1 device)".into())));
    let mut k = base.clone();
    k.xla_flags = "--xla_cpu_enable_fast_math=true".into();
    variants.push(("xla_flags", k));
    let mut k = base.clone();
    k.inputs[1] = "buffer f32[4,3]".into();
    variants.push(("input 1", k));
    for (field, k) in variants {
        assert_ne!(k.hex(), base.hex(), "{field} did not change the key");
        let diffs = base.differences(&k);
        println!("{field}: {diffs:?}");
        assert!(diffs.iter().any(|d| d.starts_with(field)), "{field}: {diffs:?}");
    }
}

#[test]
fn the_key_is_written_as_json_with_its_digest() {
    let k = key(&graph(2, ""));
    let v: serde_json::Value = serde_json::from_str(&k.to_json()).unwrap();
    assert_eq!(v["digest"], serde_json::Value::String(k.hex()));
    assert_eq!(v["inputs"][0], "user_input f32[2,4]");
}

/// Compiling one graph twice is one PJRT compile; a new cache on the same folder (what a new
/// process sees) loads it from disk with no compile and the same results.
#[test]
fn a_second_compile_hits_memory_and_a_new_process_hits_disk() {
    let dir = scratch("hits");
    let cache = Arc::new(CompileCache::new(CacheConfig::in_dir(&dir)));
    let c = session(&cache);
    let g = graph(2, "");
    let first = c.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
    assert_eq!(first.cached, None);
    let want = first.run(&c, &args(2)).unwrap();
    let second = c.compile(&graph(2, "renamed_"), &fxhlo::Frozen::new(), None).unwrap();
    assert_eq!(second.cached, Some(Tier::Memory));
    let s = cache.stats();
    assert_eq!((s.compiles, s.memory_hits, s.entries_on_disk), (1, 1, 1), "{s:?}");

    let fresh = Arc::new(CompileCache::new(CacheConfig::in_dir(&dir)));
    let c2 = session(&fresh);
    let third = c2.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
    assert_eq!(third.cached, Some(Tier::Disk));
    assert_eq!(third.run(&c2, &args(2)).unwrap(), want);
    assert_eq!(fresh.stats().compiles, 0);
    // Another shape misses, and says which field differs from the entry of the same graph.
    c2.compile(&graph(3, ""), &fxhlo::Frozen::new(), None).unwrap();
    let s = fresh.stats();
    println!("{s:?}");
    assert_eq!(s.compiles, 1);
    assert_eq!(s.misses_by_reason.get("inputs"), Some(&1), "{s:?}");
    let (_, detail) = fresh.explain_miss(&key(&graph(5, "")));
    println!("{detail}");
    assert!(detail.contains("input 0: user_input f32[") && detail.contains("vs user_input f32[5,4]"), "{detail}");
    let _ = fs::remove_dir_all(&dir);
}

/// The CPU plugin's code is for the CPU it was compiled on: an entry a machine with other
/// extensions wrote to a shared folder (one without AVX-512 here, say) is not loaded (it could
/// die of an illegal instruction); it misses on the target, which the miss names, and the
/// graph is compiled for this CPU.
#[test]
fn an_entry_compiled_for_another_cpu_is_not_loaded() {
    let dir = scratch("other_cpu");
    let cache = Arc::new(CompileCache::new(CacheConfig::in_dir(&dir)));
    let c = session(&cache);
    let here = c.target_id();
    let features = fxhlo::runtime::host::cpu_features();
    assert!(here.ends_with(&format!("; host {features}")), "{here}");
    let g = graph(2, "");
    let compiled = c.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
    let want = compiled.run(&c, &args(2)).unwrap();
    // The same entry as another machine's: this one's bytes under a key naming other extensions.
    let mine = c.key(&g, &fxhlo::Frozen::new());
    let (bytes, _) = cache.get(&mine).expect("the entry just written");
    let other = CacheKey { target: here.replace(&features, "x86_64 sse3 avx"), ..mine.clone() };
    assert_ne!(other, mine);
    let fresh_dir = scratch("other_cpu_fresh");
    let shared = Arc::new(CompileCache::new(CacheConfig::in_dir(&fresh_dir)));
    shared.put(&other, bytes.to_vec());
    let c2 = session(&shared);
    let got = c2.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
    assert_eq!(got.cached, None, "compiled here, not loaded from the other machine's entry");
    assert_eq!(got.run(&c2, &args(2)).unwrap(), want);
    let s = shared.stats();
    println!("{s:?}");
    assert_eq!(s.misses_by_reason.get("target"), Some(&1), "{s:?}");
    let _ = fs::remove_dir_all(&dir);
    let _ = fs::remove_dir_all(&fresh_dir);
}

/// Entries keyed the way an older fxhlo keyed them (an ahead-of-time target named by its
/// topology and its plugin file's modification time, before targets were keyed by what the
/// topology description says) stay in the folder: a lookup with today's key misses them,
/// naming the fields that differ, and nothing fails; each is still found by its own key.
#[test]
fn entries_of_an_older_key_make_up_miss_and_say_why() {
    let dir = scratch("older");
    let g = graph(2, "");
    let aot: Options = Options { device: "tpu:v6e:2x2".parse().unwrap(), ..Options::default() };
    let mut old = CacheKey::new(&g, &aot, &Frozen::new(), "tpu:v6e:2x2 ahead of time, plugin libtpu.so (libtpu 0.0.52) 1 bytes modified 2".into());
    old.options = old.options.replacen("device=tpu", "device=tpu:v6e:2x2", 1);
    CompileCache::new(CacheConfig::in_dir(&dir)).put(&old, vec![7; 64]);

    let topology = fxhlo::runtime::TopologyInfo {
        platform_name: "tpu".into(),
        platform_version: "TFRT TPU v6 lite".into(),
        device_count: 4,
        device_kinds: vec!["TPU v6 lite".into()],
        bounds: vec![2, 2, 1],
    };
    let target = fxhlo::cache::topology_target_id(fxhlo::runtime::DeviceKind::Tpu, "libtpu.so (libtpu 0.0.52, 1 bytes)", &topology);
    let vm = Options { device: fxhlo::runtime::DeviceKind::Tpu.into(), ..Options::default() };
    let new = CacheKey::new(&g, &vm, &Frozen::new(), target);
    // The topology lives in the target field: the options of both spellings agree.
    assert_eq!(new.options, CacheKey::new(&g, &aot, &Frozen::new(), String::new()).options);
    let fresh = CompileCache::new(CacheConfig::in_dir(&dir));
    assert!(fresh.get(&new).is_none());
    let (_, detail) = fresh.explain_miss(&new);
    assert!(detail.contains("target") && detail.contains("options"), "{detail}");
    assert_eq!(fresh.get(&old).map(|(bytes, _)| bytes.len()), Some(64));
    let _ = fs::remove_dir_all(&dir);
}

/// A truncated entry, a flipped payload byte, garbage and another format version are each
/// detected, removed and recompiled, with the right result.
#[test]
fn damaged_entries_are_detected_removed_and_recompiled() {
    let g = graph(2, "");
    let damages: Vec<(&str, Box<dyn Fn(Vec<u8>) -> Vec<u8>>)> = vec![
        ("truncated", Box::new(|b: Vec<u8>| b[..b.len() / 2].to_vec())),
        ("flipped byte", Box::new(|mut b: Vec<u8>| {
            let last = b.len() - 1;
            b[last] ^= 0x40;
            b
        })),
        ("garbage", Box::new(|_| b"garbage, not an entry".to_vec())),
        ("format", Box::new(|b: Vec<u8>| {
            let (mut header, at) = disk::decode_header(&b).unwrap();
            header.format = 99;
            let head = bincode::serde::encode_to_vec(&header, bincode::config::standard()).unwrap();
            let mut out = disk::MAGIC.to_vec();
            out.extend_from_slice(&(head.len() as u32).to_le_bytes());
            out.extend_from_slice(&head);
            out.extend_from_slice(&b[at..]);
            out
        })),
    ];
    for (what, damage) in damages {
        let dir = scratch(&format!("damage-{}", what.replace(' ', "-")));
        let warm = Arc::new(CompileCache::new(CacheConfig::in_dir(&dir)));
        let c = session(&warm);
        let want = c.compile(&g, &fxhlo::Frozen::new(), None).unwrap().run(&c, &args(2)).unwrap();
        let k = c.key(&g, &Frozen::new());
        let path = disk::entry_path(&dir, &k);
        let original = fs::read(&path).unwrap();
        fs::write(&path, damage(original)).unwrap();

        let cache = Arc::new(CompileCache::new(CacheConfig::in_dir(&dir)));
        assert!(cache.get(&k).is_none(), "{what}: a damaged entry was served");
        assert!(!path.exists(), "{what}: the damaged entry was not removed");
        let c = session(&cache);
        let again = c.compile(&g, &fxhlo::Frozen::new(), None).unwrap();
        assert_eq!(again.cached, None, "{what}");
        assert_eq!(again.run(&c, &args(2)).unwrap(), want, "{what}");
        let s = cache.stats();
        assert_eq!((s.misses_by_reason.get("corrupt"), s.entries_on_disk), (Some(&1), 1), "{what}: {s:?}");
        let _ = fs::remove_dir_all(&dir);
    }
}

/// Under a size cap the least recently used entries go first; the entry just written stays.
#[test]
fn eviction_removes_the_least_recently_used_entries() {
    let dir = scratch("evict");
    let keys: Vec<CacheKey> = (1..=4).map(|n| key(&graph(n, ""))).collect();
    let entry = disk::encode(&keys[0], &[7u8; 1000]).len() as u64;
    let cache = CompileCache::new(CacheConfig { max_bytes: entry * 2 + entry / 2, ..CacheConfig::in_dir(&dir) });
    for (i, k) in keys.iter().enumerate() {
        cache.put(k, vec![7u8; 1000]);
        // mtimes order the entries; make them distinct on coarse file systems.
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000 + i as u64 * 10);
        fs::File::options().append(true).open(disk::entry_path(&dir, k)).unwrap().set_modified(t).unwrap();
    }
    let left: Vec<bool> = keys.iter().map(|k| disk::entry_path(&dir, k).exists()).collect();
    println!("entries left: {left:?}");
    assert_eq!(left, vec![false, false, true, true]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn read_only_never_writes_and_an_unwritable_folder_degrades_to_memory() {
    let dir = scratch("ro");
    let k = key(&graph(2, ""));
    let ro = CompileCache::new(CacheConfig { mode: CacheMode::ReadOnly, ..CacheConfig::in_dir(&dir) });
    ro.put(&k, vec![1, 2, 3]);
    assert!(!dir.exists(), "read-only created the cache folder");
    assert_eq!(ro.get(&k).map(|(b, t)| (b.to_vec(), t)), Some((vec![1, 2, 3], Tier::Memory)));

    // A folder path that is a file: nothing can be written under it.
    let file = scratch("not-a-dir");
    fs::write(&file, b"x").unwrap();
    let cache = CompileCache::new(CacheConfig::in_dir(file.join("cache")));
    cache.put(&k, vec![4, 5]);
    cache.put(&key(&graph(3, "")), vec![6]);
    assert_eq!(cache.get(&k).map(|(b, _)| b.to_vec()), Some(vec![4, 5]));
    let _ = fs::remove_file(&file);
}

/// `FXHLO_ERROR_ON_COMPILE`: a miss is an error naming what differs from the nearest entry.
#[test]
fn error_on_compile_refuses_a_miss_and_says_why() {
    let dir = scratch("refuse");
    let c = session(&Arc::new(CompileCache::new(CacheConfig::in_dir(&dir))));
    c.compile(&graph(2, ""), &fxhlo::Frozen::new(), None).unwrap();
    let strict = Arc::new(CompileCache::new(CacheConfig { error_on_compile: true, ..CacheConfig::in_dir(&dir) }));
    let c = session(&strict);
    assert_eq!(c.compile(&graph(2, ""), &fxhlo::Frozen::new(), None).unwrap().cached, Some(Tier::Disk));
    let err = c.compile(&graph(6, ""), &fxhlo::Frozen::new(), None).err().map(|e| e.to_string()).unwrap_or_default();
    println!("{err}");
    assert!(err.contains("FXHLO_ERROR_ON_COMPILE") && err.contains("vs user_input f32[6,4]"), "{err}");
    let _ = fs::remove_dir_all(&dir);
}
