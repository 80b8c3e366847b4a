//! Tensor parallelism on N CPU devices (the CPU plugin makes them): the transformer fixtures
//! split by the Megatron-style plan over 2 and 4 devices, run as one SPMD program by XLA's
//! partitioner, match the PyTorch reference as the single-device run does; plans that cannot
//! split a weight are rejected naming it.

mod support;
use support::fxhlo;

use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testsuite/fixtures/{name}.fxt"))
}

fn check_line(stdout: &[u8]) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn transformers_split_over_2_and_4_devices_match_pytorch_as_one_device_does() {
    for name in [
        "transformer_encoder",
        "transformer_encoder_bf16",
        "gpt_block",
        "gpt_block_bf16",
    ] {
        let bundle = fixture(name);
        for devices in ["1", "2", "4"] {
            let out = fxhlo(
                &[
                    "run",
                    bundle.to_str().unwrap(),
                    "--check",
                    "--tensor-parallel",
                    devices,
                ],
                &[],
            );
            let last = check_line(&out.stdout);
            println!("{name} over {devices} device(s): {last}");
            assert!(
                out.status.success() && last.starts_with("check: PASS"),
                "{name} over {devices}: {last}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn a_plan_that_does_not_divide_a_weight_is_refused_naming_it() {
    let out = fxhlo(
        &[
            "run",
            fixture("gpt_block").to_str().unwrap(),
            "--tensor-parallel",
            "3",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tensor_parallel")
            && err.contains("does not divide evenly")
            && err.contains("3 devices"),
        "{err}"
    );
    assert!(err.contains(".weight`"), "names the weight: {err}");
}

#[test]
fn a_plan_file_splits_what_it_names_and_a_dim_out_of_range_is_refused() {
    let dir = std::env::temp_dir().join(format!("fxhlo-tp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plan = dir.join("plan.json");
    std::fs::write(&plan, r#"{"devices": 2, "split": [{"weights": "fc1.*", "dim": 0}, {"weights": "head.weight", "dim": 0}]}"#).unwrap();
    let out = fxhlo(
        &[
            "run",
            fixture("gpt_block").to_str().unwrap(),
            "--check",
            "--plan",
            plan.to_str().unwrap(),
        ],
        &[],
    );
    let last = check_line(&out.stdout);
    println!("plan file over 2 devices: {last}");
    assert!(
        out.status.success() && last.starts_with("check: PASS"),
        "{last}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // `plan`'s run of gpt_block, which must fail: its stderr.
    let refused = |text: &str| {
        std::fs::write(&plan, text).unwrap();
        let out = fxhlo(&["run", fixture("gpt_block").to_str().unwrap(), "--plan", plan.to_str().unwrap()], &[]);
        assert!(!out.status.success(), "{text} ran");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = refused(r#"{"devices": 2, "split": [{"weights": "fc1.bias", "dim": 1}]}"#);
    assert!(err.contains("splits dim 1 of weight `fc1.bias`") && err.contains("rank 1"), "{err}");
    let err = refused(r#"{"devices": 2, "splits": []}"#);
    assert!(err.contains("not a tensor-parallel plan") && err.contains("splits"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
