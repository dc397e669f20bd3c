//! The bench's own machinery, kept working by the suite (bench/run.py is otherwise only run
//! by hand, and a full run takes many minutes): its unit tests (bench/selftest.py: the
//! busy-host check does not count an idle server's zygote, failing rows become errors), and
//! a real, short run — the debug binary, `BENCH_ONLY=exec`, two samples per row, one row
//! made to fail — that must still print every other row's measurement and exit 1.

use cleanroom_e2e::*;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn bench_selftest_passes() {
    let mut c = Command::new("python3");
    c.arg("bench/selftest.py").current_dir(root());
    let o = output_with_timeout(c, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_failing_row_is_reported_and_the_others_are_still_measured() {
    let mut c = Command::new("python3");
    c.arg("bench/run.py")
        .current_dir(root())
        .env("BENCH_BINARY", BIN)
        .env("BENCH_ONLY", "exec")
        .env("BENCH_RUNS", "2")
        .env("BENCH_FAIL", "bwrap_true")
        // Other tests' sandboxes run beside this one.
        .env("BENCH_ALLOW_BUSY_HOST", "1");
    let o = output_with_timeout(c, Duration::from_secs(60));
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let j: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    for row in [
        "exec_true",
        "sandbox_create_ready",
        "exec_true_in_existing_sandbox",
    ] {
        assert_eq!(j[row]["runs"], 2, "{row}: {j}");
        assert!(j[row]["p50_ms"].as_f64().unwrap() > 0.0, "{row}: {j}");
    }
    assert!(
        j["bwrap_true"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("BENCH_FAIL")),
        "{j}"
    );
    // A ratio over a failed row is left out, not made up.
    assert!(j.get("exec_true_vs_bwrap_p50_ratio").is_none(), "{j}");
    assert_eq!(j["failed"], serde_json::json!(["bwrap_true"]), "{j}");
}
