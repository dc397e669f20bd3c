//! ListSandboxes for live lists and admins (docs/api.md): `changed_since` answers only
//! what changed since a moment (what the web console re-reads on each live signal), never
//! another principal's sandbox; a server that cannot honour the moment answers the whole
//! list, marked complete. `Sandbox.owner` and the admins' owner filter.

use cleanroom_client::api::*;
use cleanroom_e2e::*;

const ALICE: &str = "alice-list-token-2b4d6f8a0c1e3a5b7d9f1b3d5f7a9c1e";
const BOB: &str = "bob-list-token-4d6f8a0c2e4a6c8e0a2c4e6a8c0e2a4c";
const OPS: &str = "ops-list-token-6f8a0c2e4a6c8e0a2c4e6a8c0e2a4c6e";

fn server() -> (TcpServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write_tokens(
        dir.path(),
        &[
            (ALICE, "alice", "user"),
            (BOB, "bob", "user"),
            (OPS, "ops", "admin"),
        ],
    );
    let s = TcpServer::start("http", &["--tokens-file", tokens.to_str().unwrap()]);
    (s, dir)
}

fn create(s: &TcpServer, token: &str) -> String {
    let o = s.run(Some(token), &["sandbox", "create"]);
    let id = stdout(&o).trim().to_string();
    assert!(id.starts_with("sbx_"), "{}", stderr(&o));
    id
}

fn ids(r: &ListSandboxesResponse) -> Vec<String> {
    let mut v: Vec<String> = r.sandboxes.iter().map(|s| s.sandbox_id.clone()).collect();
    v.sort();
    v
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

async fn list(
    c: &cleanroom_client::Client,
    req: ListSandboxesRequest,
) -> Result<ListSandboxesResponse, cleanroom_client::ApiError> {
    Ok(api(c.sandboxes.list_sandboxes(req).await)?.into_owned())
}

/// A ListSandboxes request for what changed since `t` (a cursor, or one made by [`stamp`]).
macro_rules! since {
    ($t:expr) => {
        ListSandboxesRequest {
            changed_since: $t.clone().into(),
            ..Default::default()
        }
    };
}

/// The host's clock now (the server's too: same host), in a timestamp like `template`
/// (the client crate does not name the timestamp type).
macro_rules! stamp {
    ($template:expr) => {{
        let mut t = $template.clone();
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        t.seconds = d.as_secs() as i64;
        t.nanos = d.subsec_nanos() as i32;
        t
    }};
}

#[test]
fn changed_since_answers_only_what_changed_and_only_the_callers() {
    let (s, _dir) = server();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let alice = client_as(&s.addr, ALICE).await;
        let bob = client_as(&s.addr, BOB).await;
        let ops = client_as(&s.addr, OPS).await;
        let pause = || std::thread::sleep(std::time::Duration::from_millis(50));

        let empty = list(&alice, Default::default()).await.unwrap();
        assert!(empty.complete && empty.sandboxes.is_empty(), "{empty:?}");
        let template = empty.cursor.as_option().expect("a cursor").clone();
        let a1 = create(&s, ALICE);
        // A1 is READY: nothing writes its row any more. Everything after `mid` is new.
        pause();
        let mid = stamp!(template);
        pause();
        let a2 = create(&s, ALICE);
        let b1 = create(&s, BOB);

        // The whole list: complete, with a cursor a little before the answer.
        let full = list(&alice, Default::default()).await.unwrap();
        assert!(full.complete, "{full:?}");
        assert_eq!(ids(&full), sorted(vec![a1.clone(), a2.clone()]));
        let cursor = full.cursor.as_option().expect("a cursor").clone();
        assert!(cursor.seconds < stamp!(template).seconds, "{cursor:?}");

        // Since `mid`: only A2 — A1 did not change, B1 is Bob's.
        let r = list(&alice, since!(mid)).await.unwrap();
        assert!(!r.complete, "{r:?}");
        assert_eq!(ids(&r), vec![a2.clone()]);
        assert!(r.unlisted_sandbox_ids.is_empty(), "{r:?}");
        // Bob's answer since `mid` names only his sandbox, in neither field Alice's.
        let r = list(&bob, since!(mid)).await.unwrap();
        assert_eq!(ids(&r), vec![b1.clone()]);
        assert!(r.unlisted_sandbox_ids.is_empty(), "{r:?}");
        // An admin sees both principals' changes.
        let r = list(&ops, since!(mid)).await.unwrap();
        assert_eq!(ids(&r), sorted(vec![a2.clone(), b1.clone()]));

        // A1 stops: a change. Without include_stopped it is named to be dropped; with it,
        // it is listed STOPPED. Bob hears nothing of it.
        let after = stamp!(template);
        pause();
        let o = s.run(Some(ALICE), &["sandbox", "rm", &a1]);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = list(&alice, since!(after)).await.unwrap();
        assert!(ids(&r).is_empty(), "{r:?}");
        assert_eq!(r.unlisted_sandbox_ids, vec![a1.clone()]);
        let r = list(
            &alice,
            ListSandboxesRequest {
                include_stopped: true,
                ..since!(after)
            },
        )
        .await
        .unwrap();
        assert_eq!(ids(&r), vec![a1.clone()]);
        assert_eq!(
            r.sandboxes[0].status.as_known(),
            Some(SandboxStatus::SANDBOX_STATUS_STOPPED)
        );
        let r = list(&bob, since!(after)).await.unwrap();
        assert!(
            ids(&r).is_empty() && r.unlisted_sandbox_ids.is_empty(),
            "{r:?}"
        );
        // A label filter: Alice's changed sandboxes without the label are to be dropped.
        let mut labelled = since!(mid);
        labelled.labels.insert("team".into(), "web".into());
        let r = list(&alice, labelled).await.unwrap();
        assert!(ids(&r).is_empty(), "{r:?}");
        assert_eq!(
            sorted(r.unlisted_sandbox_ids.clone()),
            sorted(vec![a1.clone(), a2.clone()])
        );

        // A moment after the server's clock cannot be honoured: the whole list, complete.
        let mut future = stamp!(template);
        future.seconds += 3600;
        let r = list(&alice, since!(future)).await.unwrap();
        assert!(r.complete, "{r:?}");
        assert_eq!(ids(&r), vec![a2.clone()]);
        assert!(r.unlisted_sandbox_ids.is_empty(), "{r:?}");
    });
}

/// `Sandbox.owner` names the owning principal; an admin sees every principal's and may
/// filter by owner (`ListSandboxesRequest.owner`, `sandbox ls --owner`); anyone else sees
/// only its own name and may name only itself — another owner is `permission_denied`
/// (reason `owner_filter`), whether or not that principal has sandboxes.
#[test]
fn admins_see_and_filter_owners_and_nobody_else_may() {
    let (s, _dir) = server();
    let a = create(&s, ALICE);
    let b = create(&s, BOB);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let alice = client_as(&s.addr, ALICE).await;
        let ops = client_as(&s.addr, OPS).await;
        let owner = |o: &str| ListSandboxesRequest {
            owner: o.into(),
            ..Default::default()
        };
        // Everyone's for the admin, each with its owner.
        let all = list(&ops, Default::default()).await.unwrap();
        let owners: Vec<(String, String)> = all
            .sandboxes
            .iter()
            .map(|x| (x.sandbox_id.clone(), x.owner.clone()))
            .collect();
        assert!(owners.contains(&(a.clone(), "alice".into())), "{owners:?}");
        assert!(owners.contains(&(b.clone(), "bob".into())), "{owners:?}");
        assert_eq!(
            ids(&list(&ops, owner("bob")).await.unwrap()),
            vec![b.clone()]
        );
        assert_eq!(
            ids(&list(&ops, owner("alice")).await.unwrap()),
            vec![a.clone()]
        );
        assert!(list(&ops, owner("carol"))
            .await
            .unwrap()
            .sandboxes
            .is_empty());
        // The filter holds for changes too: Bob's changed sandbox is named to be dropped.
        let full = list(&ops, owner("alice")).await.unwrap();
        let mut t = full.cursor.as_option().unwrap().clone();
        t.seconds -= 600;
        let mut r = since!(t);
        r.owner = "alice".into();
        let changed = list(&ops, r).await.unwrap();
        assert_eq!(ids(&changed), vec![a.clone()]);
        assert_eq!(changed.unlisted_sandbox_ids, vec![b.clone()]);

        // Alice: her own, her own name; naming herself works, anyone else is refused.
        let mine = list(&alice, Default::default()).await.unwrap();
        assert_eq!(ids(&mine), vec![a.clone()]);
        assert!(
            mine.sandboxes.iter().all(|x| x.owner == "alice"),
            "{mine:?}"
        );
        let got = api(alice
            .sandboxes
            .get_sandbox(GetSandboxRequest {
                sandbox_id: a.clone(),
                ..Default::default()
            })
            .await)
        .unwrap()
        .into_owned();
        assert_eq!(got.sandbox.as_option().unwrap().owner, "alice");
        assert_eq!(
            ids(&list(&alice, owner("alice")).await.unwrap()),
            vec![a.clone()]
        );
        for other in ["bob", "carol", "uid:0"] {
            let e = list(&alice, owner(other)).await.unwrap_err();
            assert_eq!(e.code, "permission_denied", "{other}: {e:?}");
            assert!(format!("{e:?}").contains("owner_filter"), "{e:?}");
        }
        let e = list(&alice, owner("not an owner")).await.unwrap_err();
        assert_eq!(e.code, "invalid_argument", "{e:?}");
    });

    // The CLI: `sandbox ls --owner` for an admin; refused for anyone else.
    let o = s.run(Some(OPS), &["sandbox", "ls", "--owner", "bob", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["sandboxId"], b.as_str(), "{v}");
    assert_eq!(v[0]["owner"], "bob", "{v}");
    // The text forms name the owner too: a column of `sandbox ls`, a line of inspect.
    let o = s.run(Some(OPS), &["sandbox", "ls"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(
        table.lines().next().unwrap_or("").ends_with("OWNER"),
        "{table}"
    );
    for (id, who) in [(&a, "alice"), (&b, "bob")] {
        let row = table.lines().find(|l| l.starts_with(id.as_str()));
        assert!(row.is_some_and(|r| r.ends_with(who)), "{id} {who}: {table}");
    }
    let o = s.run(Some(OPS), &["sandbox", "inspect", &b]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).lines().any(|l| l == "owner:               bob"),
        "{}",
        stdout(&o)
    );
    let o = s.run(Some(ALICE), &["sandbox", "ls", "--owner", "bob"]);
    assert_code(&o, "permission_denied");
    assert!(!stdout(&o).contains(&b), "{}", stdout(&o));
}
