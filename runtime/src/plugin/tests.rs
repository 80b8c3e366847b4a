//! Unit tests for plugin discovery and the version check (no real plugin needed).

use super::*;
use crate::test_util::TempDir;

/// Creates `<venv>/lib/python3.11/site-packages/<rel>` as an empty file.
fn fake_plugin(venv: &Path, rel: &str) -> PathBuf {
    let path = venv.join("lib/python3.11/site-packages").join(rel);
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(&path, b"");
    path
}

fn message(r: Result<PathBuf>) -> String {
    r.err().map(|e| e.to_string()).unwrap_or_default()
}

#[test]
fn override_wins_and_must_exist() {
    let tmp = TempDir::new("override");
    let so = tmp.path().join("plugin.so");
    let _ = std::fs::write(&so, b"");
    let env = EnvConfig {
        plugin: Some(so.clone()),
        ..EnvConfig::default()
    };
    for device in DeviceKind::ALL {
        assert_eq!(discover(device, &env).ok(), Some(so.clone()));
    }
    let env = EnvConfig {
        plugin: Some(tmp.path().join("missing.so")),
        ..EnvConfig::default()
    };
    let msg = message(discover(DeviceKind::Cpu, &env));
    assert!(msg.contains("does not exist"), "{msg}");
    assert!(msg.contains("FXHLO_PJRT_PLUGIN"), "{msg}");
}

#[test]
fn walks_up_to_a_dot_venv() {
    let tmp = TempDir::new("walk");
    let venv = tmp.path().join("project/.venv");
    let so = fake_plugin(&venv, plugin_files(DeviceKind::Cpu)[0]);
    let deep = tmp.path().join("project/a/b");
    let _ = std::fs::create_dir_all(&deep);
    let env = EnvConfig {
        search_from: vec![deep],
        ..EnvConfig::default()
    };
    assert_eq!(discover(DeviceKind::Cpu, &env).ok(), Some(so));
}

#[test]
fn fxhlo_venv_is_the_only_venv_searched() {
    let tmp = TempDir::new("fxvenv");
    let walked = tmp.path().join("p/.venv");
    fake_plugin(&walked, plugin_files(DeviceKind::Cpu)[0]);
    let chosen = tmp.path().join("chosen");
    let _ = std::fs::create_dir_all(chosen.join("lib/python3.11/site-packages"));
    let env = EnvConfig {
        venv: Some(chosen.clone()),
        search_from: vec![tmp.path().join("p")],
        ..EnvConfig::default()
    };
    // The system site-packages may hold a CPU plugin on some machine; only assert when not.
    match discover(DeviceKind::Cpu, &env) {
        Ok(found) => assert!(!found.starts_with(&walked), "{}", found.display()),
        Err(e) => assert!(e.to_string().contains(&chosen.display().to_string()), "{e}"),
    }
}

#[test]
fn cuda_prefers_cuda13_and_accepts_cuda12() {
    let tmp = TempDir::new("cuda");
    let venv = tmp.path().join(".venv");
    let cuda12 = fake_plugin(&venv, plugin_files(DeviceKind::Cuda)[1]);
    let env = EnvConfig {
        virtual_env: Some(venv.clone()),
        ..EnvConfig::default()
    };
    assert_eq!(discover(DeviceKind::Cuda, &env).ok(), Some(cuda12));
    let cuda13 = fake_plugin(&venv, plugin_files(DeviceKind::Cuda)[0]);
    assert_eq!(discover(DeviceKind::Cuda, &env).ok(), Some(cuda13));
}

#[test]
fn not_found_names_what_was_searched_and_what_to_do() {
    let tmp = TempDir::new("notfound");
    let venv = tmp.path().join(".venv");
    let _ = std::fs::create_dir_all(venv.join("lib/python3.11/site-packages"));
    let env = EnvConfig {
        venv: Some(venv.clone()),
        ..EnvConfig::default()
    };
    let r = discover(DeviceKind::Tpu, &env);
    if r.is_ok() {
        return; // this machine has libtpu in its system Python
    }
    let msg = message(r);
    assert!(msg.contains("device `tpu`"), "{msg}");
    assert!(msg.contains("libtpu/libtpu.so"), "{msg}");
    assert!(msg.contains(&venv.display().to_string()), "{msg}");
    assert!(msg.contains("scripts/setup.sh"), "{msg}");
    assert!(msg.contains("FXHLO_PJRT_PLUGIN"), "{msg}");
}

#[test]
fn version_check() {
    let p = Path::new("x.so");
    let ours = pjrt_sys::PJRT_Api_STRUCT_SIZE as usize;
    let (major, minor) = (
        pjrt_sys::PJRT_API_MAJOR as i32,
        pjrt_sys::PJRT_API_MINOR as i32,
    );
    assert!(check_version(p, ours, major, minor).is_ok());
    assert!(check_version(p, ours + 64, major, minor + 30).is_ok());
    let older = check_version(p, ours - 8, major, minor - 1)
        .err()
        .map(|e| e.to_string());
    assert!(older.unwrap_or_default().contains("FXHLO_PJRT_HEADER"));
    assert!(check_version(p, ours, major + 1, 0).is_err());
}
