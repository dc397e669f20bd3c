//! One sandbox must not hurt the host or the server through resources: absurd limits are
//! refused as `invalid_argument`, an OOM kill is reported, retained output has a quota and
//! a retention policy, and the image cache has size caps. Real server, real sandboxes, a
//! real registry on loopback. What runs a sandbox runs under both runtimes
//! ([`both_runtimes!`]); the image cache caps hold before any runtime is involved.

use cleanroom_e2e::*;

// ---- absurd resource limits -------------------------------------------------

both_runtimes!(
    absurd_limits_are_invalid_argument_naming_the_field,
    absurd_limits_on
);
fn absurd_limits_on(rt: Runtime) {
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
            args.extend(rt.flag());
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
        let o = s.run(&rt.args(2, &["sandbox", "create", "--policy", &p]));
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
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--memory-mb",
            "128",
            "--pids",
            "64",
            "--",
            "true",
        ],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---- OOM ---------------------------------------------------------------------

both_runtimes!(
    oom_kill_is_reported_on_stderr_with_a_stable_code,
    oom_kill_on
);
/// One 256 MiB allocation, touched, against a 64 MiB limit. Under gvisor the OOM kill
/// ends the whole sandbox (the sentry is one host process), and is reported the same way.
/// (Growing by small allocations instead, a gvisor sandbox's process sees them fail —
/// the sentry refuses memory past the limit — and exits on its own, the sandbox alive.)
fn oom_kill_on(rt: Runtime) {
    let s = Server::start();
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--memory-mb",
            "64",
            "--",
            "python3",
            "-c",
            "x = bytearray(256 << 20); x[::4096] = b'x' * len(x[::4096]); print('survived')",
        ],
    ));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(137), "{err}");
    assert!(err.contains("cleanroom: error [oom_killed]"), "{err}");
    // A process killed by SIGKILL of its own accord is not called an OOM kill.
    let o = s.run(&rt.args(1, &["exec", "-n", "--", "sh", "-c", "kill -9 $$"]));
    assert_eq!(o.status.code(), Some(137), "{}", stderr(&o));
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

/// What a StreamExecution call yielded: stdout, stderr, warning codes.
type Retained = (Vec<u8>, Vec<u8>, Vec<String>);

/// StreamExecution without follow, or the error code.
fn stream_retained(s: &Server, exe: &str) -> Result<Retained, String> {
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

both_runtimes!(
    output_over_the_sandbox_quota_streams_live_is_not_retained_and_expires_after_rm,
    output_over_quota_on
);
fn output_over_quota_on(rt: Runtime) {
    let s = Server::start_with(&[
        "--output-log-max-age-secs",
        "0",
        "--output-log-gc-interval-secs",
        "1",
    ]);
    let sbx = s.create_on(rt, &["--output-mb", "1", "--disk-mb", "64"]);

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

both_runtimes!(
    a_slow_but_steady_client_gets_all_live_only_output,
    slow_steady_client_on
);
/// Live delivery does not depend on retention: a client that reads steadily but slower
/// than the sandbox writes is still reading the *retained* part when the quota runs out,
/// so it takes no live-only chunk for a while; it must still get every byte. (The writer
/// used to give up on it after two seconds without a live-only read, and such a client
/// lost hundreds of MiB of a 2 GiB stream.)
fn slow_steady_client_on(rt: Runtime) {
    use std::io::Read;
    let s = Server::start();
    let total: usize = 64 << 20;
    let mut c = s.cli();
    c.args(rt.args(
        1,
        &[
            "exec",
            "-n",
            "--output-mb",
            "24",
            "--",
            "sh",
            "-c",
            &format!("head -c {total} /dev/zero"),
        ],
    ));
    c.stdout(std::process::Stdio::piped());
    c.stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut out = child.stdout.take().unwrap();
    // About 8 MiB/s: the 24 MiB retained part alone takes three seconds to read.
    let mut got = 0usize;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got += n;
        std::thread::sleep(std::time::Duration::from_millis(8));
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(got, total, "bytes received live; stderr: {err}");
    assert!(!err.contains("output_live_dropped"), "{err}");
}

both_runtimes!(
    server_wide_log_cap_stops_retention_but_not_live_output,
    server_wide_log_cap_on
);
fn server_wide_log_cap_on(rt: Runtime) {
    let s = Server::start_with(&["--output-log-max-mb", "2"]);
    let n = 2_000_000; // ~14.8 MB
    let n_text = n.to_string();
    let o = s.run(&rt.args(1, &["exec", "-n", "--keep", "--", "seq", "1", &n_text]));
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

both_runtimes!(
    a_follower_attached_through_the_api_also_gets_live_only_output,
    follower_gets_live_output_on
);
fn follower_gets_live_output_on(runtime: Runtime) {
    // Two subscribers: `exec` itself and an API stream that follows the same execution.
    let s = Server::start();
    let sbx = s.create_on(runtime, &["--output-mb", "1"]);
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
                Some(Payload::Started(_) | Payload::Finished(_)) => {
                    panic!("StreamExecution sends no RunExecution bookends")
                }
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

// ---- image cache caps -----------------------------------------------------------

use cleanroom_e2e::oci::Registry;
use std::io::{Read, Write};

fn layer(files: &[(&str, usize, u8)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, size, fill) in files {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_size(*size as u64);
        h.set_path(path).unwrap();
        h.set_cksum();
        b.append(&h, std::io::repeat(*fill).take(*size as u64))
            .unwrap();
    }
    let data = b.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&data).unwrap();
    gz.finish().unwrap()
}

/// `n` pseudo-random (incompressible) bytes.
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn raw_gz_layer(path: &str, body: &[u8]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o644);
    h.set_size(body.len() as u64);
    h.set_path(path).unwrap();
    h.set_cksum();
    b.append(&h, body).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(&b.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

fn cache_entries(s: &Server, sub: &str) -> Vec<String> {
    std::fs::read_dir(s.state_dir().join("images").join(sub))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

fn assert_refused_too_large(s: &Server, args: &[&str]) {
    let o = s.run(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "{args:?}: {err}");
    assert!(err.contains("[image_too_large]"), "{args:?}: {err}");
    assert!(
        cache_entries(s, "tmp").is_empty(),
        "fill leftovers: {:?}",
        cache_entries(s, "tmp")
    );
}

#[test]
fn image_size_caps_refuse_bombs_and_leave_nothing_behind() {
    let reg = Registry::start();
    let s = Server::start_with(&[
        "--insecure-registry",
        &reg.host(),
        "--image-max-mb",
        "16",
        "--image-max-entries",
        "200",
    ]);
    // A 64 MiB zero file: ~100 KiB compressed.
    let bomb = layer(&[("zeros", 64 << 20, 0)]);
    assert!(bomb.len() < 1 << 20);
    let bomb = reg.push_image("test/bomb", &[bomb]);
    assert_refused_too_large(&s, &["image", "pull", &bomb]);
    // The same through a sandbox: refused before anything runs.
    assert_refused_too_large(&s, &["exec", "-n", "--image", &bomb, "--", "true"]);
    // Two layers, each under the cap, together over it.
    let half = layer(&[("a", 10 << 20, 1)]);
    let other = layer(&[("b", 10 << 20, 2)]);
    let split = reg.push_image("test/split", &[half, other]);
    assert_refused_too_large(&s, &["image", "pull", &split]);
    // Many tiny entries.
    let names: Vec<String> = (0..500).map(|i| format!("f{i}")).collect();
    let files: Vec<(&str, usize, u8)> = names.iter().map(|n| (n.as_str(), 0, 0)).collect();
    let many = reg.push_image("test/many", &[layer(&files)]);
    assert_refused_too_large(&s, &["image", "pull", &many]);
    // Incompressible 20 MiB: refused on the manifest's declared size, before download.
    let big = reg.push_image("test/big", &[raw_gz_layer("noise", &noise(20 << 20))]);
    assert_refused_too_large(&s, &["image", "pull", &big]);
    // The same with a manifest that understates the size: cut off while downloading.
    let (lying, _, _) = reg.push_image_with(
        "test/lying",
        &[raw_gz_layer("noise2", &noise(24 << 20))],
        "amd64",
        Some(1024),
    );
    assert_refused_too_large(&s, &["image", "pull", &lying]);
    assert!(
        cache_entries(&s, "sha256").is_empty(),
        "{:?}",
        cache_entries(&s, "sha256")
    );

    // An image within the caps still works.
    let fine = reg.push_image("test/fine", &[layer(&[("ok", 4 << 20, 7)])]);
    let o = s.run(&["image", "pull", &fine]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(cache_entries(&s, "sha256").len(), 1);
}

#[test]
fn the_image_cache_as_a_whole_is_capped() {
    let reg = Registry::start();
    let s = Server::start_with(&[
        "--insecure-registry",
        &reg.host(),
        "--image-max-mb",
        "16",
        "--image-cache-max-mb",
        "20",
    ]);
    let a = reg.push_image("test/a", &[layer(&[("a", 12 << 20, 1)])]);
    let b = reg.push_image("test/b", &[layer(&[("b", 12 << 20, 2)])]);
    let o = s.run(&["image", "pull", &a]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_refused_too_large(&s, &["image", "pull", &b]);
    assert_eq!(cache_entries(&s, "sha256").len(), 1);
    // Making room lets it in.
    let digest = a.rsplit_once('@').unwrap().1;
    let o = s.run(&["image", "rm", digest]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = s.run(&["image", "pull", &b]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

both_runtimes!(
    a_client_that_stops_reading_cannot_wedge_an_execution_over_quota,
    stopped_client_cannot_wedge_on
);
fn stopped_client_cannot_wedge_on(runtime: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(runtime, &["--output-mb", "1"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let exe = rt.block_on(async {
        let c = s.client().await;
        let req = CreateExecutionRequest {
            sandbox_id: sbx.clone(),
            command: vec!["sh".into(), "-c".into(), "seq 1 3000000".into()],
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
        // Subscribe, then never read.
        let req = StreamExecutionRequest {
            execution_id: exe.clone(),
            ..Default::default()
        };
        let stuck = c.executions.stream_execution(req).await.unwrap();
        // Another connection watches the execution finish anyway.
        let watcher = s.client().await;
        let mut finished = false;
        for _ in 0..600 {
            let req = GetExecutionRequest {
                execution_id: exe.clone(),
                ..Default::default()
            };
            let e = watcher
                .executions
                .get_execution(req)
                .await
                .unwrap()
                .into_owned();
            let status = e.execution.as_option().unwrap().status;
            if status == ExecutionStatus::EXECUTION_STATUS_SUCCEEDED {
                finished = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(finished, "a stuck client wedged the execution");
        drop(stuck);
        exe
    });
    let v = inspect_json(&s, &exe);
    let total = seq_output(3_000_000).len() as u64;
    assert_eq!(
        u64_field(&v, "retainedBytesDropped"),
        total - (1 << 20),
        "{v}"
    );
    let log = std::fs::metadata(log_path(&s, &exe)).unwrap().len();
    assert!(log <= (1 << 20) + (64 << 10), "log is {log} bytes");
}

both_runtimes!(
    inspect_reports_dropped_output_while_the_execution_runs,
    inspect_reports_drop_on
);
fn inspect_reports_drop_on(rt: Runtime) {
    let s = Server::start();
    let sbx = s.create_on(rt, &["--output-mb", "1"]);
    // 2 MiB then a long sleep, streamed by `exec` to /dev/null; inspect from elsewhere.
    let mut c = s.cli();
    c.args([
        "exec",
        "-n",
        "--in",
        &sbx,
        "--",
        "sh",
        "-c",
        "head -c 2097152 /dev/zero; sleep 30",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let ok = eventually(Duration::from_secs(30), || {
        let o = s.run(&[
            "execution",
            "inspect",
            "--sandbox-id",
            &sbx,
            "--last",
            "--json",
        ]);
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&o.stdout) else {
            return false;
        };
        u64_field(&v, "retainedBytesDropped") == 1 << 20
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(ok, "inspect did not report the drop while running");
}

both_runtimes!(
    low_disk_watermark_stops_retention_but_not_live_output,
    low_disk_watermark_on
);
fn low_disk_watermark_on(rt: Runtime) {
    // More free space required than any disk has: nothing is retained, all is live.
    let s = Server::start_with(&["--output-log-min-free-mb", "1000000000"]);
    let o = s.run(&rt.args(
        1,
        &[
            "exec",
            "-n",
            "--keep",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2",
        ],
    ));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, b"out\n");
    let err = stderr(&o);
    assert!(err.contains("err\n"), "{err}");
    assert!(
        err.contains("[output_not_retained]") && err.contains("--output-log-min-free-mb"),
        "{err}"
    );
    let logs: u64 = std::fs::read_dir(s.state_dir().join("executions"))
        .unwrap()
        .flatten()
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        logs < 4096,
        "only warnings and the exit record: {logs} bytes"
    );
}
