//! Which file a bundle path reads, and what an error says when the path is not what was
//! expected: a trace file named directly, a folder with both encodings, a directory or a FIFO
//! where a file belongs, an unreadable folder, a missing weights file.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use fxhlo_frontend::{read_json, to_bin, Bundle, GRAPH_BIN, GRAPH_JSON, WEIGHTS};

use crate::{open_err, Scratch};

/// Writes `graph.bin` holding the fixture's graph renamed `name`, and sets the modification
/// times of `graph.json` and `graph.bin` to `json_age` and `bin_age` seconds ago.
fn with_bin(s: &Scratch, name: &str, json_age: u64, bin_age: u64) {
    let mut trace = read_json(&s.0.join(GRAPH_JSON)).unwrap();
    trace.name = name.into();
    fs::write(s.0.join(GRAPH_BIN), to_bin(&trace)).unwrap();
    let now = SystemTime::now();
    for (file, age) in [(GRAPH_JSON, json_age), (GRAPH_BIN, bin_age)] {
        let f = fs::File::options().write(true).open(s.0.join(file)).unwrap();
        f.set_modified(now - Duration::from_secs(age)).unwrap();
    }
}

/// `fxhlo run b/graph.json` after `fxhlo import b --write-bin b/graph.bin` ran the graph.bin.
#[test]
fn a_trace_file_named_directly_is_the_one_read() {
    let s = Scratch::new("explicit");
    with_bin(&s, "from_bin", 100, 0); // graph.bin is the newer
    let b = Bundle::open(&s.0.join(GRAPH_JSON)).unwrap();
    assert_eq!((b.graph.name.as_str(), b.graph_file.as_path()), ("mlp", s.0.join(GRAPH_JSON).as_path()));
    assert!(b.choice.is_none());
    assert!(b.weights.is_some(), "the tensor files are those of the file's folder");
    let b = Bundle::open(&s.0.join(GRAPH_BIN)).unwrap();
    assert_eq!(b.graph.name, "from_bin");
    // Another name: the encoding is told by the first bytes.
    fs::copy(s.0.join(GRAPH_BIN), s.0.join("copy.trace")).unwrap();
    assert_eq!(Bundle::open(&s.0.join("copy.trace")).unwrap().graph.name, "from_bin");
    fs::copy(s.0.join(GRAPH_JSON), s.0.join("copy2.trace")).unwrap();
    assert_eq!(Bundle::open(&s.0.join("copy2.trace")).unwrap().graph.name, "mlp");
}

/// A folder with both encodings reads the newer (graph.bin on a tie) and says which and why.
#[test]
fn a_folder_with_both_encodings_reads_the_newer_and_says_so() {
    let s = Scratch::new("both");
    with_bin(&s, "from_bin", 0, 100); // graph.json edited after graph.bin was written
    let b = Bundle::open(&s.0).unwrap();
    assert_eq!(b.graph.name, "mlp");
    assert_eq!(b.graph_file, s.0.join(GRAPH_JSON));
    let why = b.choice.unwrap_or_default();
    assert!(why.contains("has both graph.json and graph.bin: reading graph.json, modified after graph.bin"), "{why}");

    with_bin(&s, "from_bin", 100, 0);
    let b = Bundle::open(&s.0).unwrap();
    assert_eq!(b.graph.name, "from_bin");
    let why = b.choice.unwrap_or_default();
    assert!(why.contains("reading graph.bin, modified at the same time as or after graph.json"), "{why}");

    with_bin(&s, "from_bin", 50, 50);
    assert_eq!(Bundle::open(&s.0).unwrap().graph.name, "from_bin");

    // One encoding alone: no choice to report.
    fs::remove_file(s.0.join(GRAPH_BIN)).unwrap();
    assert!(Bundle::open(&s.0).unwrap().choice.is_none());
}

#[test]
fn a_directory_named_graph_json_is_named() {
    let s = Scratch::new("dirjson");
    fs::remove_file(s.0.join(GRAPH_JSON)).unwrap();
    fs::create_dir(s.0.join(GRAPH_JSON)).unwrap();
    let err = open_err(&s.0);
    assert_eq!(err, format!("{} is a directory, expected a trace file", s.0.join(GRAPH_JSON).display()));
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("run mkfifo");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

#[test]
fn a_fifo_is_named() {
    let s = Scratch::new("fifo");
    let fifo = s.0.join("pipe");
    mkfifo(&fifo);
    let err = open_err(&fifo);
    assert_eq!(err, format!("{} is a FIFO, expected a bundle folder or a trace file (graph.json or graph.bin)", fifo.display()));
    // A FIFO where graph.json belongs is never opened (opening it would block).
    fs::remove_file(s.0.join(GRAPH_JSON)).unwrap();
    mkfifo(&s.0.join(GRAPH_JSON));
    let err = open_err(&s.0);
    assert_eq!(err, format!("{} is a FIFO, expected a trace file", s.0.join(GRAPH_JSON).display()));
}

#[test]
fn a_file_that_is_not_a_trace_is_named() {
    let s = Scratch::new("notatrace");
    let err = open_err(&s.0.join(WEIGHTS));
    assert!(err.starts_with(&format!("{}: not a trace file", s.0.join(WEIGHTS).display())), "{err}");
    assert!(err.contains("expected a bundle folder, a graph.json or a graph.bin"), "{err}");
}

#[test]
fn a_missing_weights_file_is_named_with_the_input_needing_it() {
    let s = Scratch::new("noweights");
    fs::remove_file(s.0.join(WEIGHTS)).unwrap();
    let err = open_err(&s.0);
    assert!(err.starts_with(&format!("{}: no such file, but parameter `arg0_1` needs tensor `fc1.weight` from it", s.0.join(WEIGHTS).display())), "{err}");
}

const CHILD_DIR: &str = "FXHLO_FRONTEND_TEST_UNREADABLE_DIR";

/// A folder that cannot be read says so, naming the folder. Permission bits do not stop root,
/// so as root the check runs in a child process of this test binary under another user
/// (nobody, 65534): it is never skipped.
#[test]
fn an_unreadable_folder_says_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("unreadable");
    fs::set_permissions(&s.0, fs::Permissions::from_mode(0o000)).unwrap();
    let is_root = fs::read_dir(&s.0).is_ok(); // permission bits did not apply
    if is_root {
        use std::os::unix::process::CommandExt;
        // Nobody must reach the binary: the checkout may sit in a folder only root may enter
        // (`mktemp -d` makes them 0700), so nobody runs a copy in a folder open to all.
        let exe_dir = std::env::temp_dir().join(format!("fxhlo-frontend-exe-{}", std::process::id()));
        fs::create_dir_all(&exe_dir).unwrap();
        fs::set_permissions(&exe_dir, fs::Permissions::from_mode(0o755)).unwrap();
        let exe = exe_dir.join("files-test");
        fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new(&exe)
            .args(["--exact", "files::child_opens_the_unreadable_folder", "--include-ignored", "--test-threads=1"])
            .env(CHILD_DIR, &s.0)
            .uid(65534)
            .gid(65534)
            .output()
            .expect("run this test binary as nobody");
        fs::remove_dir_all(&exe_dir).ok();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    } else {
        check_unreadable(&s.0);
    }
    fs::set_permissions(&s.0, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
#[ignore = "run as another user by an_unreadable_folder_says_permission_denied"]
fn child_opens_the_unreadable_folder() {
    let dir = std::env::var_os(CHILD_DIR).expect("run by an_unreadable_folder_says_permission_denied");
    check_unreadable(Path::new(&dir));
}

fn check_unreadable(dir: &Path) {
    assert!(fs::read_dir(dir).is_err(), "{} is readable: the test cannot check anything", dir.display());
    let err = open_err(dir);
    assert_eq!(err, format!("{}: permission denied reading the folder", dir.display()));
}
