//! Seed 001's `hostagent.v1.HostAgentService` (docs/hostagent.md), driven as a control
//! plane would, with the generated Connect client over TCP with bearer tokens: create
//! with an id the control plane assigns (a retried create makes one sandbox), exec with
//! collected and streamed output, files written and read whole and in streamed chunks,
//! pause/resume/list, destroy, and another principal refused as through the native API.

use cleanroom_client::hostagent_api::__buffa::oneof::{
    exec_stream_data, exec_stream_response, write_file_stream_request,
};
use cleanroom_client::hostagent_api::*;
use cleanroom_client::ApiError;
use cleanroom_e2e::*;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789";

fn server() -> TcpServer {
    let d = tempfile::tempdir().unwrap();
    let tokens = write_tokens(d.path(), &[(ALICE, "alice", "user"), (BOB, "bob", "user")]);
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    drop(d);
    s
}

fn code(e: impl Into<ApiError>) -> String {
    e.into().code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_written_against_seed_001_drives_a_host() {
    let s = server();
    let alice = client_as(&s.addr, ALICE).await;
    let bob = client_as(&s.addr, BOB).await;
    let ha = &alice.hostagent;
    let create = CreateSandboxRequest {
        sandbox_id: "cp-7".into(),
        vcpus: 2,
        memory_mb: 256,
        timeout_sec: 600,
        ..Default::default()
    };
    let made = ha
        .create_sandbox(create.clone())
        .await
        .expect("create")
        .into_owned();
    assert!(made.sandbox_id.starts_with("sbx_"), "{made:?}");
    assert_eq!(made.status, "running");
    // Retried (a timeout on the control plane's side): the same sandbox.
    let again = ha.create_sandbox(create).await.expect("retry").into_owned();
    assert_eq!(again.sandbox_id, made.sandbox_id);
    let id = made.sandbox_id.clone();

    // Exec by the assigned id: output collected, the exit code.
    let r = ha
        .exec(ExecRequest {
            sandbox_id: "cp-7".into(),
            cmd: "sh".into(),
            args: vec!["-c".into(), "echo out; echo err >&2; exit 3".into()],
            ..Default::default()
        })
        .await
        .expect("exec")
        .into_owned();
    assert_eq!(
        (&r.stdout[..], &r.stderr[..], r.exit_code),
        (&b"out\n"[..], &b"err\n"[..], 3)
    );
    // A command past its timeout: ended, and stderr says why.
    let r = ha
        .exec(ExecRequest {
            sandbox_id: id.clone(),
            cmd: "sleep".into(),
            args: vec!["30".into()],
            timeout_sec: 1,
            ..Default::default()
        })
        .await
        .expect("exec timeout")
        .into_owned();
    assert!(
        String::from_utf8_lossy(&r.stderr).contains("[cleanroom: "),
        "{r:?}"
    );

    // ExecStream: start, output as it comes, end.
    let mut st = ha
        .exec_stream(ExecStreamRequest {
            sandbox_id: id.clone(),
            cmd: "sh".into(),
            args: vec!["-c".into(), "echo a; sleep 0.3; echo b >&2".into()],
            ..Default::default()
        })
        .await
        .expect("exec stream");
    let (mut events, mut out, mut err, mut end) = (vec![], vec![], vec![], None);
    while let Some(m) = st.message().await.expect("stream message") {
        match m.to_owned_message().event {
            Some(exec_stream_response::Event::Start(_)) => events.push("start"),
            Some(exec_stream_response::Event::Data(d)) => {
                events.push("data");
                match d.output {
                    Some(exec_stream_data::Output::Stdout(b)) => out.extend_from_slice(&b),
                    Some(exec_stream_data::Output::Stderr(b)) => err.extend_from_slice(&b),
                    None => {}
                }
            }
            Some(exec_stream_response::Event::End(e)) => {
                events.push("end");
                end = Some((e.exit_code, e.error.clone()));
            }
            None => {}
        }
    }
    assert_eq!(events.first(), Some(&"start"));
    assert_eq!(events.last(), Some(&"end"));
    assert_eq!(
        (out, err, end),
        (b"a\n".to_vec(), b"b\n".to_vec(), Some((0, String::new())))
    );

    // Files: whole, and streamed in chunks across the native upload's chunk size.
    ha.write_file(WriteFileRequest {
        sandbox_id: "cp-7".into(),
        path: "/workspace/small.txt".into(),
        content: b"hello".to_vec(),
        ..Default::default()
    })
    .await
    .expect("write");
    let got = ha
        .read_file(ReadFileRequest {
            sandbox_id: id.clone(),
            path: "/workspace/small.txt".into(),
            ..Default::default()
        })
        .await
        .expect("read")
        .into_owned();
    assert_eq!(&got.content[..], b"hello");
    let big: Vec<u8> = (0..(5usize << 20) / 4)
        .flat_map(|i| (i as u32).to_le_bytes())
        .collect();
    let mut msgs = vec![WriteFileStreamRequest {
        content: Some(write_file_stream_request::Content::Meta(Box::new(
            WriteFileStreamMeta {
                sandbox_id: "cp-7".into(),
                path: "/workspace/big.bin".into(),
                ..Default::default()
            },
        ))),
        ..Default::default()
    }];
    for c in big.chunks(1_500_000) {
        msgs.push(WriteFileStreamRequest {
            content: Some(write_file_stream_request::Content::Chunk(c.to_vec())),
            ..Default::default()
        });
    }
    ha.write_file_stream(futures::stream::iter(msgs))
        .await
        .expect("write stream");
    let mut st = ha
        .read_file_stream(ReadFileStreamRequest {
            sandbox_id: id.clone(),
            path: "/workspace/big.bin".into(),
            ..Default::default()
        })
        .await
        .expect("read stream");
    let mut back = Vec::new();
    while let Some(m) = st.message().await.expect("chunk") {
        back.extend_from_slice(&m.to_owned_message().chunk);
    }
    assert!(
        back == big,
        "streamed file differs: {} vs {} bytes",
        back.len(),
        big.len()
    );
    // The files are the sandbox's own: its processes see them.
    let r = ha
        .exec(ExecRequest {
            sandbox_id: id.clone(),
            cmd: "sh".into(),
            args: vec![
                "-c".into(),
                "cat /workspace/small.txt; stat -c %s /workspace/big.bin".into(),
            ],
            ..Default::default()
        })
        .await
        .expect("exec")
        .into_owned();
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        format!("hello{}\n", big.len())
    );
    // A write stream that does not start with meta is refused.
    let e = ha
        .write_file_stream(futures::stream::iter(vec![WriteFileStreamRequest {
            content: Some(write_file_stream_request::Content::Chunk(b"x".to_vec())),
            ..Default::default()
        }]))
        .await
        .unwrap_err();
    assert_eq!(code(e), "invalid_argument");

    // Pause, resume, list.
    let status = |list: ListSandboxesResponse| {
        list.sandboxes
            .iter()
            .find(|i| i.sandbox_id == id)
            .map(|i| (i.status.clone(), i.vcpus, i.memory_mb, i.timeout_sec))
    };
    ha.pause_sandbox(PauseSandboxRequest {
        sandbox_id: "cp-7".into(),
        ..Default::default()
    })
    .await
    .expect("pause");
    let l = ha
        .list_sandboxes(ListSandboxesRequest::default())
        .await
        .expect("list")
        .into_owned();
    assert_eq!(status(l), Some(("paused".into(), 2, 256, 600)));
    ha.resume_sandbox(ResumeSandboxRequest {
        sandbox_id: id.clone(),
        ..Default::default()
    })
    .await
    .expect("resume");
    let l = ha
        .list_sandboxes(ListSandboxesRequest::default())
        .await
        .expect("list")
        .into_owned();
    assert_eq!(status(l).map(|s| s.0), Some("running".into()));

    // Another principal: nothing of alice's, by either id, through any call.
    let b = &bob.hostagent;
    let l = b
        .list_sandboxes(ListSandboxesRequest::default())
        .await
        .expect("list")
        .into_owned();
    assert!(l.sandboxes.is_empty(), "{l:?}");
    for target in [id.clone(), "cp-7".to_string()] {
        let e = b
            .read_file(ReadFileRequest {
                sandbox_id: target.clone(),
                path: "/workspace/small.txt".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(code(e), "sandbox_not_found", "{target}");
        let e = b
            .destroy_sandbox(DestroySandboxRequest {
                sandbox_id: target.clone(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(code(e), "sandbox_not_found", "{target}");
    }
    // A template names a warm pool; an unknown one is refused with the API's code.
    let e = ha
        .create_sandbox(CreateSandboxRequest {
            template: "python311".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    let e: ApiError = e.into();
    assert!(e.code.contains("not_found"), "{e:?}");

    // Destroy: gone from the list.
    ha.destroy_sandbox(DestroySandboxRequest {
        sandbox_id: "cp-7".into(),
        ..Default::default()
    })
    .await
    .expect("destroy");
    let l = ha
        .list_sandboxes(ListSandboxesRequest::default())
        .await
        .expect("list")
        .into_owned();
    assert_eq!(status(l), None);
}
