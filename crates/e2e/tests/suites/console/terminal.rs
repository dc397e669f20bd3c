//! A terminal execution (`tty: true`, what `cleanroom console` and the SDKs' interactive
//! executions use) under both runtimes ([`both_runtimes!`]): the process runs on a
//! pseudo-terminal of the asked size (stdin, stdout and stderr), and what it writes there
//! lands in the execution's output with its exit code. Under gvisor the terminal is a
//! host pty the server gives `runsc exec`, which the sentry serves to the process.

use cleanroom_client::api::__buffa::oneof::execution_stream_event::Payload;
use cleanroom_client::api::*;
use cleanroom_e2e::*;

async fn terminal_execution(rt: Runtime) {
    let s = Server::start();
    let c = s.client().await;
    let sbx = s.create_on(rt, &[]);
    let req = CreateExecutionRequest {
        sandbox_id: sbx.clone(),
        command: vec![
            "sh".into(),
            "-c".into(),
            "stty size; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo IS_A_TTY; exit 3".into(),
        ],
        tty: true,
        tty_cols: 97,
        tty_rows: 31,
        ..Default::default()
    };
    let exe = c
        .executions
        .create_execution(req)
        .await
        .expect("create a terminal execution")
        .into_owned()
        .execution
        .as_option()
        .expect("execution")
        .execution_id
        .clone();
    let req = StreamExecutionRequest {
        execution_id: exe,
        ..Default::default()
    };
    let mut st = c.executions.stream_execution(req).await.expect("stream");
    let (mut out, mut exit) = (Vec::new(), None);
    while let Some(m) = st.message().await.expect("stream message") {
        let ev: ExecutionStreamEvent = m.to_owned_message();
        match ev.payload {
            Some(Payload::Output(o)) => out.extend_from_slice(&o.data),
            Some(Payload::Exit(x)) => exit = Some(*x),
            _ => {}
        }
    }
    let out = String::from_utf8_lossy(&out).replace('\r', "");
    assert!(out.contains("31 97"), "the asked size: {out:?}");
    assert!(out.contains("IS_A_TTY"), "{out:?}");
    assert_eq!(exit.expect("an exit").exit_code, 3, "{out:?}");
    s.run(&["sandbox", "rm", &sbx]);
    assert_no_leftovers(&s.state_dir(), &sbx);
}
both_runtimes!(
    async a_terminal_execution_runs_on_a_pty_of_the_asked_size,
    terminal_execution
);
