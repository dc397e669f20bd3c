//! One sandbox must not hurt the host or the server through resources: absurd limits are
//! refused as `invalid_argument`, an OOM kill is reported, retained output has a quota and
//! a retention policy, and the image cache has size caps. Real server, real sandboxes, a
//! real registry on loopback.

mod common;
use common::*;

// ---- absurd resource limits -------------------------------------------------

#[test]
fn absurd_limits_are_invalid_argument_naming_the_field() {
    let s = Server::start();
    let huge = (1u64 << 40).to_string();
    let cases: &[(&[&str], &str)] = &[
        (&["--memory-mb", "99999999999"], "memory_bytes"),
        (&["--memory-mb", "18446744073709551615"], "memory_bytes"),
        (&["--memory-mb", "1"], "memory_bytes"),
        (&["--pids", "0"], "--pids"),
        (&["--pids", &huge], "pids"),
        (&["--pids", "3"], "pids"),
        (&["--cpu-millis", "18446744073709551615"], "cpu_millis"),
        (&["--cpu-millis", "0"], "--cpu-millis"),
        (&["--disk-mb", "99999999999"], "disk_bytes"),
        (&["--disk-mb", "0"], "--disk-mb"),
        (&["--memory-mb", "0"], "--memory-mb"),
        (&["--output-mb", "99999999999"], "output_bytes"),
    ];
    for (flags, field) in cases {
        for verb in [&["sandbox", "create"][..], &["exec", "-n"][..]] {
            let mut args: Vec<&str> = verb.to_vec();
            args.extend_from_slice(flags);
            if verb[0] == "exec" {
                args.extend_from_slice(&["--", "true"]);
            }
            let o = s.run(&args);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
            assert!(
                err.contains("cleanroom: error [invalid_argument]") && err.contains(field),
                "{args:?}: {err}"
            );
        }
    }
    // The same bounds hold for the policy's `sandbox.resources`.
    let dir = tempfile::tempdir().unwrap();
    for (key, value) in [
        ("memory_mb", "99999999999"),
        ("pids", "0"),
        ("pids", "1099511627776"),
        ("cpu_millis", "99999999999"),
        ("disk_mb", "99999999999"),
        ("output_mb", "0"),
    ] {
        let p = write(
            &dir,
            "p.yaml",
            &format!("version: 1\nsandbox:\n  resources:\n    {key}: {value}\n"),
        );
        let o = s.run(&["sandbox", "create", "--policy", &p]);
        let err = stderr(&o);
        assert!(
            err.contains("[policy_invalid]") && err.contains(&format!("sandbox.resources.{key}")),
            "{key}={value}: {err}"
        );
    }
    // Nothing was created by any of these.
    let o = s.run(&["sandbox", "ls", "--all"]);
    assert!(!stdout(&o).contains("sbx_"), "{}", stdout(&o));
    // And a sane request still works.
    let o = s.run(&[
        "exec",
        "-n",
        "--memory-mb",
        "128",
        "--pids",
        "64",
        "--",
        "true",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---- OOM ---------------------------------------------------------------------

#[test]
fn oom_kill_is_reported_on_stderr_with_a_stable_code() {
    let s = Server::start();
    let o = s.run(&[
        "exec",
        "-n",
        "--memory-mb",
        "64",
        "--",
        "python3",
        "-c",
        "a = []\nwhile True:\n    a.append(bytearray(1 << 20))\n",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(137), "{err}");
    assert!(err.contains("cleanroom: error [oom_killed]"), "{err}");
    // A process killed by SIGKILL of its own accord is not called an OOM kill.
    let o = s.sh("kill -9 $$");
    assert_eq!(o.status.code(), Some(137));
    assert!(!stderr(&o).contains("oom_killed"), "{}", stderr(&o));
}
