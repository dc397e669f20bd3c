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

// ---- retained output ----------------------------------------------------------

use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_client::api::*;
use std::path::PathBuf;
use std::time::Duration;

fn seq_output(n: u64) -> Vec<u8> {
    (1..=n)
        .map(|i| format!("{i}\n"))
        .collect::<String>()
        .into_bytes()
}

fn log_path(s: &Server, exe: &str) -> PathBuf {
    s.state_dir().join("executions").join(format!("{exe}.log"))
}

fn last_execution(s: &Server, sbx: &str) -> String {
    let o = s.run(&[
        "execution",
        "inspect",
        "--sandbox-id",
        sbx,
        "--last",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("inspect json");
    v["execution"]["executionId"]
        .as_str()
        .expect("execution id")
        .to_string()
}

fn inspect_json(s: &Server, exe: &str) -> serde_json::Value {
    let o = s.run(&["execution", "inspect", exe, "--json"]);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("inspect json: {e}: {}", stderr(&o)))
}

fn u64_field(v: &serde_json::Value, k: &str) -> u64 {
    match &v[k] {
        serde_json::Value::String(s) => s.parse().unwrap(),
        serde_json::Value::Number(n) => n.as_u64().unwrap(),
        _ => 0,
    }
}

/// StreamExecution without follow: (stdout, stderr, warning codes) or the error code.
fn stream_retained(s: &Server, exe: &str) -> Result<(Vec<u8>, Vec<u8>, Vec<String>), String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = s.client().await;
        let req = StreamExecutionRequest {
            execution_id: exe.into(),
            no_follow: true,
            ..Default::default()
        };
        let mut st = c
            .executions
            .stream_execution(req)
            .await
            .map_err(|e| cleanroom_client::ApiError::from(e).code)?;
        let (mut out, mut err, mut warnings) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            match st.message().await {
                Ok(Some(m)) => {
                    let ev: ExecutionStreamEvent = m.to_owned_message();
                    match ev.payload {
                        Some(Payload::Output(o)) => {
                            if o.stream == OutputStream::OUTPUT_STREAM_STDOUT {
                                out.extend_from_slice(&o.data)
                            } else {
                                err.extend_from_slice(&o.data)
                            }
                        }
                        Some(Payload::Warning(w)) => warnings.push(w.code.clone()),
                        _ => {}
                    }
                }
                Ok(None) => break,
                Err(e) => return Err(cleanroom_client::ApiError::from(e).code),
            }
        }
        Ok((out, err, warnings))
    })
}

#[test]
fn output_over_the_sandbox_quota_streams_live_is_not_retained_and_expires_after_rm() {
    let s = Server::start_with(&[
        "--output-log-max-age-secs",
        "0",
        "--output-log-gc-interval-secs",
        "1",
    ]);
    let o = s.run(&["sandbox", "create", "--output-mb", "1", "--disk-mb", "64"]);
    let sbx = stdout(&o).trim().to_string();
    assert!(sbx.starts_with("sbx_"), "{}", stderr(&o));

    // ~50 MiB on stdout and 8 MiB on stderr against a 1 MiB quota: the client still gets
    // every byte, in order.
    let n = 6_500_000;
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        &format!("seq 1 {n}; head -c 8388608 /dev/zero >&2"),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr[..o.stderr.len().min(2000)])
    );
    let expected = seq_output(n);
    assert_eq!(o.stdout.len(), expected.len(), "live stdout is complete");
    assert!(o.stdout == expected, "live stdout is byte-exact");
    let zeros = o.stderr.iter().filter(|&&b| b == 0).count();
    assert_eq!(zeros, 8 << 20, "live stderr is complete");
    let text = String::from_utf8_lossy(&o.stderr).replace('\0', "");
    assert!(
        text.contains("cleanroom: warning [output_not_retained]") && text.contains("output_mb"),
        "{text}"
    );
    let total = (expected.len() + (8 << 20)) as u64;

    // The log on disk stays at the quota; inspect reports the drop.
    let exe = last_execution(&s, &sbx);
    let log = std::fs::metadata(log_path(&s, &exe)).unwrap().len();
    assert!(log <= (1 << 20) + (64 << 10), "log is {log} bytes");
    let v = inspect_json(&s, &exe);
    assert_eq!(v["outputTruncated"], serde_json::Value::Bool(true), "{v}");
    assert_eq!(
        u64_field(&v, "retainedBytesDropped"),
        total - (1 << 20),
        "{v}"
    );
    let o = s.run(&["execution", "inspect", &exe]);
    assert!(stdout(&o).contains("output_truncated:"), "{}", stdout(&o));

    // Replaying it later yields the retained prefix and the warnings, nothing more.
    let (out, err, warnings) = stream_retained(&s, &exe).unwrap();
    assert_eq!(out.len() + err.len(), 1 << 20);
    assert_eq!(&out[..], &expected[..out.len()]);
    assert_eq!(
        warnings
            .iter()
            .filter(|w| *w == "output_not_retained")
            .count(),
        2,
        "marker and final count: {warnings:?}"
    );

    // The quota is the sandbox's: the next execution retains nothing but streams live.
    let o = s.run(&[
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "echo hello; echo oops >&2",
    ]);
    assert_eq!(o.stdout, b"hello\n");
    assert!(stderr(&o).contains("oops"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("[output_not_retained]"),
        "{}",
        stderr(&o)
    );
    let exe2 = last_execution(&s, &sbx);
    let (out, _, _) = stream_retained(&s, &exe2).unwrap();
    assert!(out.is_empty());
    assert_eq!(
        u64_field(&inspect_json(&s, &exe2), "retainedBytesDropped"),
        11
    );

    // After rm, the retention GC deletes both logs and says so.
    let o = s.run(&["sandbox", "rm", &sbx]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        eventually(Duration::from_secs(30), || !log_path(&s, &exe).exists()
            && !log_path(&s, &exe2).exists()),
        "logs were not collected"
    );
    let v = inspect_json(&s, &exe);
    assert_eq!(v["outputExpired"], serde_json::Value::Bool(true), "{v}");
    assert_eq!(stream_retained(&s, &exe).unwrap_err(), "output_expired");
    let o = s.run(&["execution", "inspect", &exe2]);
    assert!(stdout(&o).contains("output_expired"), "{}", stdout(&o));
}

#[test]
fn server_wide_log_cap_stops_retention_but_not_live_output() {
    let s = Server::start_with(&["--output-log-max-mb", "2"]);
    let n = 2_000_000; // ~14.8 MB
    let o = s.run(&["exec", "-n", "--keep", "--", "seq", "1", &n.to_string()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout == seq_output(n), "live stdout is complete");
    assert!(
        stderr(&o).contains("[output_not_retained]") && stderr(&o).contains("--output-log-max-mb"),
        "{}",
        stderr(&o)
    );
    let total: u64 = std::fs::read_dir(s.state_dir().join("executions"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(total <= (2 << 20) + (64 << 10), "logs total {total} bytes");
    // A stopped sandbox's logs survive when they are young and within the cap (default
    // age: 7 days).
    assert!(total > 0);
}

#[test]
fn a_follower_attached_through_the_api_also_gets_live_only_output() {
    // Two subscribers: `exec` itself and an API stream that follows the same execution.
    let s = Server::start();
    let o = s.run(&["sandbox", "create", "--output-mb", "1"]);
    let sbx = stdout(&o).trim().to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n = 1_000_000u64;
    let (out, warnings) = rt.block_on(async {
        let c = s.client().await;
        let req = CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            // Give the follower time to attach before the output starts.
            command: vec!["sh".into(), "-c".into(), format!("sleep 1; seq 1 {n}")],
            ..Default::default()
        };
        let exe = c
            .executions
            .create_execution(req)
            .await
            .unwrap()
            .into_owned()
            .execution
            .as_option()
            .unwrap()
            .execution_id
            .clone();
        let req = StreamExecutionRequest {
            execution_id: exe,
            ..Default::default()
        };
        let mut st = c.executions.stream_execution(req).await.unwrap();
        let (mut out, mut warnings) = (Vec::new(), Vec::new());
        let mut last = 0;
        while let Some(m) = tokio::time::timeout(Duration::from_secs(60), st.message())
            .await
            .expect("stream stalled")
            .unwrap()
        {
            let ev: ExecutionStreamEvent = m.to_owned_message();
            assert!(ev.sequence >= last, "sequence never goes back");
            last = ev.sequence;
            match ev.payload {
                Some(Payload::Output(o)) => {
                    assert_eq!(
                        o.offset,
                        out.len() as u64,
                        "offsets are contiguous; warnings so far: {warnings:?}"
                    );
                    out.extend_from_slice(&o.data)
                }
                Some(Payload::Warning(w)) => warnings.push(w.code.clone()),
                Some(Payload::Exit(_)) => break,
                None => {}
            }
        }
        (out, warnings)
    });
    assert!(out == seq_output(n), "follower got {} bytes", out.len());
    assert!(
        warnings.contains(&"output_not_retained".to_string()),
        "{warnings:?}"
    );
}
