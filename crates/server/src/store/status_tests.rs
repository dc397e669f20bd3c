//! The store's one status writer against a real database: every write passes
//! [`SandboxStatus::can_become`], a refusal writes nothing (no status, no event), and a
//! stored number that is no status is a corrupt row rather than a guess.

use super::*;
use crate::model::status::SandboxStatus::{self, *};

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    (dir, s)
}

fn insert(s: &Store, id: &str, status: SandboxStatus) {
    let mut r = super::tests::row(id, "u", status);
    r.message = "before".into();
    s.insert_sandbox(&r, SandboxCaps::default()).unwrap();
}

fn event(id: &str, st: SandboxStatus) -> EventRow {
    EventRow {
        sandbox_id: id.into(),
        kind: "sandbox.status".into(),
        sandbox_status: st.number(),
        ..Default::default()
    }
}

/// `from -> to` is refused with an [`IllegalTransition`] naming both, and the row and the
/// event log are as they were.
fn assert_refused(from: SandboxStatus, to: SandboxStatus) {
    let (_d, s) = open();
    insert(&s, "sbx_a", from);
    let err = s
        .sandbox_status_changed("sbx_a", to, "after", &event("sbx_a", to))
        .unwrap_err();
    match err {
        StoreError::Transition(ref t) => {
            assert_eq!((t.id.as_str(), t.from, t.to), ("sbx_a", Some(from), to));
            let e = crate::model::error::EngineError::from(err);
            assert_eq!(e.code, crate::model::error::ErrorCode::SandboxNotReady);
            assert!(
                e.details.contains(&("to".into(), to.name().into())),
                "{e:?}"
            );
            assert_eq!(e.class, crate::model::error::Class::FailedPrecondition);
        }
        other => panic!("{from:?} -> {to:?}: {other}"),
    }
    let row = s.get_sandbox("sbx_a").unwrap().unwrap();
    assert_eq!((row.status, row.message.as_str()), (from, "before"));
    assert!(s.events_after("sbx_a", 0, 10).unwrap().is_empty());
    // The same through the plain writer and the READY commit.
    assert!(s.set_sandbox_status("sbx_a", to, "after").is_err());
    if to == Ready {
        let record = cleanroom_backend::ProvisionedSandbox {
            sandbox_id: "sbx_a".into(),
            state_dir: "/state/sbx_a".into(),
            init_pid: 1,
            init_start_time: 0,
            info: Default::default(),
            network_device: None,
        };
        let err = s.sandbox_ready("sbx_a", &record, &event("sbx_a", Ready), None);
        assert!(matches!(err, Err(StoreError::Transition(_))));
        assert!(s
            .get_sandbox("sbx_a")
            .unwrap()
            .unwrap()
            .provisioned
            .get("sbx_a")
            .unwrap()
            .is_none());
    }
    assert_eq!(s.get_sandbox("sbx_a").unwrap().unwrap().status, from);
}

#[test]
fn a_legal_transition_writes_the_status_the_message_and_the_event() {
    let (_d, s) = open();
    insert(&s, "sbx_a", Ready);
    s.sandbox_status_changed("sbx_a", Stopping, "going", &event("sbx_a", Stopping))
        .unwrap();
    let row = s.get_sandbox("sbx_a").unwrap().unwrap();
    assert_eq!((row.status, row.message.as_str()), (Stopping, "going"));
    assert_eq!(s.events_after("sbx_a", 0, 10).unwrap().len(), 1);
}

#[test]
fn the_writer_refuses_leaving_a_terminal_state() {
    assert_refused(Stopped, Ready);
    assert_refused(Stopped, Failed);
    assert_refused(Failed, Stopped);
    assert_refused(Failed, Ready);
}

#[test]
fn the_writer_refuses_a_write_that_changes_nothing() {
    assert_refused(Ready, Ready);
    assert_refused(Stopping, Stopping);
}

#[test]
fn the_writer_refuses_a_return_to_provisioning() {
    assert_refused(Ready, Provisioning);
    assert_refused(Paused, Provisioning);
}

#[test]
fn the_writer_refuses_a_stopping_sandbox_becoming_ready() {
    // A create that finishes after a terminate began: the sandbox must not come back.
    assert_refused(Stopping, Ready);
    assert_refused(Stopping, Paused);
}

#[test]
fn the_writer_refuses_a_skipped_state() {
    assert_refused(Provisioning, Paused);
    assert_refused(Ready, Checkpointed);
}

#[test]
fn the_writer_refuses_a_sandbox_that_is_not_there() {
    let (_d, s) = open();
    match s.set_sandbox_status("sbx_none", Failed, "") {
        Err(StoreError::Transition(t)) => assert_eq!(t.from, None),
        other => panic!("{other:?}"),
    }
}

#[test]
fn compare_and_set_loses_a_race_quietly_but_refuses_an_illegal_pair() {
    let (_d, s) = open();
    insert(&s, "sbx_a", Stopping);
    // Pause found STOPPING where it expected READY: its race lost, no error.
    assert!(!s.transition_sandbox("sbx_a", Ready, Paused).unwrap());
    assert_eq!(s.get_sandbox("sbx_a").unwrap().unwrap().status, Stopping);
    // Asking for a pair the state machine never allows is the caller's mistake.
    insert(&s, "sbx_b", Ready);
    assert!(s.transition_sandbox("sbx_b", Ready, Provisioning).is_err());
    assert!(s.transition_sandbox("sbx_b", Ready, Paused).unwrap());
}

#[test]
fn a_stored_number_that_is_no_status_is_a_corrupt_row() {
    let (_d, s) = open();
    insert(&s, "sbx_a", Ready);
    s.with(|c| c.execute("UPDATE sandboxes SET status = 99 WHERE id = 'sbx_a'", []))
        .unwrap();
    let got = s.get_sandbox("sbx_a");
    assert!(got.is_err(), "{got:?}");
}
