//! proto3 JSON: unknown keys are refused, naming the key, in every message — also in the
//! ones with a oneof, whose deserializer buffa writes by hand (build.rs patches its
//! fallback arm). Before the patch `{"executionId":"x","bogus":1}` decoded as if `bogus`
//! were not there.

use cleanroom_proto::cleanroom::v1::{ExecutionStreamEvent, GetSandboxRequest};

fn refused<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str, key: &str) {
    let err = serde_json::from_str::<T>(json).expect_err(json).to_string();
    assert!(err.contains(&format!("`{key}`")), "{json}: {err}");
}

#[test]
fn oneof_messages_refuse_unknown_keys() {
    // Next to the oneof, before and after a oneof member, and a misspelled member.
    refused::<ExecutionStreamEvent>(r#"{"executionId":"exe_1","bogus":1}"#, "bogus");
    refused::<ExecutionStreamEvent>(r#"{"sequnce":"2","output":{}}"#, "sequnce");
    refused::<ExecutionStreamEvent>(r#"{"output":{},"extra":null}"#, "extra");
    refused::<ExecutionStreamEvent>(r#"{"outptu":{"data":""}}"#, "outptu");
    // Inside a oneof member (a derived message): refused too.
    refused::<ExecutionStreamEvent>(r#"{"output":{"dta":""}}"#, "dta");
    // Known keys, JSON and proto names, still decode.
    let ev: ExecutionStreamEvent =
        serde_json::from_str(r#"{"execution_id":"exe_1","sequence":"3","exit":{"exitCode":2}}"#)
            .unwrap();
    assert_eq!(ev.execution_id, "exe_1");
    assert_eq!(ev.sequence, 3);
}

#[test]
fn plain_messages_refuse_unknown_keys() {
    refused::<GetSandboxRequest>(r#"{"sandboxid":"sbx_1"}"#, "sandboxid");
}
