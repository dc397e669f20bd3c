//! Owners through the store: every stored form a state dir may hold (from any earlier
//! server) reads back as its [`Owner`] and is written back as the same text; a row whose
//! owner is in no known form is refused (`internal`), never handed to anyone.

use super::tests::row;
use super::*;
use crate::model::error::{EngineError, ErrorCode};
use crate::model::status::sandbox as ss;

#[test]
fn each_stored_owner_form_reads_back_typed_and_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    for (id, text, owner) in [
        ("sbx_uid", "uid:1000", Owner::Uid(1000)),
        ("sbx_named", "alice", Owner::Named("alice".into())),
        ("sbx_pool", "pool:pool_1", Owner::Pool("pool_1".into())),
        ("sbx_legacy", "legacy:", Owner::Legacy),
    ] {
        s.insert_sandbox(&row(id, text, ss::READY), SandboxCaps::default())
            .unwrap();
        let stored: String = s
            .with(|c| {
                c.query_row("SELECT owner FROM sandboxes WHERE id = ?1", [id], |r| {
                    r.get(0)
                })
            })
            .unwrap();
        assert_eq!(stored, text);
        assert_eq!(s.get_sandbox(id).unwrap().unwrap().owner, owner);
    }
}

#[test]
fn a_row_with_an_unknown_owner_is_refused_as_internal() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("state.db")).unwrap();
    s.insert_sandbox(&row("sbx_a", "alice", ss::READY), SandboxCaps::default())
        .unwrap();
    for bad in ["root:alice", "", "uid:x", "pool:"] {
        s.with(|c| c.execute("UPDATE sandboxes SET owner = ?1 WHERE id = 'sbx_a'", [bad]))
            .unwrap();
        let err = s.get_sandbox("sbx_a").expect_err(bad);
        assert!(matches!(err, StoreError::Sql(_)), "{bad:?}: {err:?}");
        assert_eq!(EngineError::from(err).code, ErrorCode::Internal, "{bad:?}");
        assert!(s.list_sandboxes().is_err(), "{bad:?}");
    }
}
