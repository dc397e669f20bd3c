//! A hostile registry on loopback: manifests that never end, or claim to be huge, must be
//! cut off at the bound with `image_too_large` instead of being read into memory.

use super::MAX_MANIFEST;
use crate::resolve::resolve;
use crate::{ImageError, RegistryConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the fake registry answers a manifest request.
#[derive(Clone, Copy)]
enum Answer {
    /// Chunked, `chunks` × 1 MiB of JSON-ish filler and then the end.
    Chunked { chunks: usize },
    /// A `Content-Length` far over the bound (the body is never sent).
    Declares(u64),
    /// A small, well-formed manifest (to show the fetch itself works).
    Small,
    /// `Small`, but only with `Authorization: Basic dTpw` (u:p); 401 otherwise.
    SmallBasic,
    /// `Small`, but only with the bearer token `/token` hands out (the distribution token
    /// flow: `/v2/` answers 401 with a `Bearer realm=…` challenge).
    SmallBearer,
    /// `SmallBearer`, but the token server streams `chunks` × 1 MiB instead of a token.
    HugeToken { chunks: usize },
}

const SMALL: &[u8] = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"x","digest":"sha256:00","size":1},"layers":[]}"#;

/// Serve `/v2/` (no auth) and every manifest request with `answer`; return `host:port`.
async fn registry(answer: Answer) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let served = addr.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let addr = served.clone();
            tokio::spawn(async move {
                loop {
                    let mut head = Vec::new();
                    let mut b = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if s.read(&mut b).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(b[0]);
                    }
                    let head = String::from_utf8_lossy(&head).to_string();
                    let lower = head.to_ascii_lowercase();
                    if let Answer::HugeToken { chunks } = answer {
                        if head.starts_with("GET /v2/ ") {
                            let h = format!(
                                "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"http://{addr}/token\",service=\"fake\"\r\ncontent-length: 0\r\n\r\n"
                            );
                            let _ = s.write_all(h.as_bytes()).await;
                            continue;
                        }
                        if head.starts_with("GET /token") {
                            let hdr = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
                            if s.write_all(hdr.as_bytes()).await.is_err() {
                                return;
                            }
                            let mut c = format!("{:x}\r\n", 1 << 20).into_bytes();
                            c.extend_from_slice(&vec![b'"'; 1 << 20]);
                            c.extend_from_slice(b"\r\n");
                            for _ in 0..chunks {
                                if s.write_all(&c).await.is_err() {
                                    return;
                                }
                            }
                            let _ = s.write_all(b"0\r\n\r\n").await;
                            continue;
                        }
                    }
                    if let Answer::SmallBearer = answer {
                        if head.starts_with("GET /v2/ ") {
                            let h = format!(
                                "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer realm=\"http://{addr}/token\",service=\"fake\"\r\ncontent-length: 0\r\n\r\n"
                            );
                            let _ = s.write_all(h.as_bytes()).await;
                            continue;
                        }
                        if head.starts_with("GET /token") {
                            let body = br#"{"token":"t0k3n"}"#;
                            let h = format!(
                                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n",
                                body.len()
                            );
                            let _ = s.write_all(h.as_bytes()).await;
                            let _ = s.write_all(body).await;
                            continue;
                        }
                    }
                    let wanted = match answer {
                        Answer::SmallBasic => Some("authorization: basic dtpw"),
                        Answer::SmallBearer => Some("authorization: bearer t0k3n"),
                        _ => None,
                    };
                    if head.contains("/manifests/") && wanted.is_some_and(|w| !lower.contains(w)) {
                        let _ = s
                            .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                            .await;
                        continue;
                    }
                    if !head.contains("/manifests/") {
                        let _ = s
                            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                            .await;
                        continue;
                    }
                    let ct = "content-type: application/vnd.oci.image.manifest.v1+json\r\n";
                    match answer {
                        Answer::Chunked { chunks } => {
                            let hdr = format!(
                                "HTTP/1.1 200 OK\r\n{ct}transfer-encoding: chunked\r\n\r\n"
                            );
                            if s.write_all(hdr.as_bytes()).await.is_err() {
                                return;
                            }
                            let chunk = vec![b' '; 1 << 20];
                            for _ in 0..chunks {
                                let mut c = format!("{:x}\r\n", chunk.len()).into_bytes();
                                c.extend_from_slice(&chunk);
                                c.extend_from_slice(b"\r\n");
                                if s.write_all(&c).await.is_err() {
                                    return;
                                }
                            }
                            let _ = s.write_all(b"0\r\n\r\n").await;
                        }
                        Answer::Declares(n) => {
                            let hdr = format!("HTTP/1.1 200 OK\r\n{ct}content-length: {n}\r\n\r\n");
                            let _ = s.write_all(hdr.as_bytes()).await;
                            return;
                        }
                        Answer::Small
                        | Answer::SmallBasic
                        | Answer::SmallBearer
                        | Answer::HugeToken { .. } => {
                            let body = SMALL;
                            let hdr = format!(
                                "HTTP/1.1 200 OK\r\n{ct}content-length: {}\r\n\r\n",
                                body.len()
                            );
                            let _ = s.write_all(hdr.as_bytes()).await;
                            let _ = s.write_all(body).await;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn insecure(addr: &str) -> RegistryConfig {
    RegistryConfig {
        insecure: vec![addr.to_string()],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_manifest_that_streams_past_the_bound_is_cut_off() {
    // 64 MiB: sixteen times the bound. Read whole it would also fail, but as a digest
    // mismatch after the memory was spent; the bound must stop it first.
    let addr = registry(Answer::Chunked { chunks: 64 }).await;
    let e = resolve(&insecure(&addr), &format!("{addr}/app:v1"))
        .await
        .unwrap_err();
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    assert_eq!(e.code(), "image_too_large");
}

#[tokio::test]
async fn a_manifest_that_declares_a_huge_length_is_refused_before_reading() {
    let addr = registry(Answer::Declares(1 << 40)).await;
    let e = resolve(&insecure(&addr), &format!("{addr}/app:v1"))
        .await
        .unwrap_err();
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
}

#[tokio::test]
async fn a_small_manifest_resolves_to_its_digest() {
    let addr = registry(Answer::Small).await;
    let r = resolve(&insecure(&addr), &format!("{addr}/app:v1"))
        .await
        .unwrap();
    assert!(r.digest.starts_with("sha256:"), "{}", r.digest);
    assert!(r.reference.starts_with(&format!("{addr}/app:v1@sha256:")));
    const { assert!(MAX_MANIFEST >= 1 << 20) };
}

#[tokio::test]
async fn credentials_reach_the_manifest_by_basic_auth_or_the_token_flow() {
    let addr = registry(Answer::SmallBasic).await;
    let mut cfg = insecure(&addr);
    let anonymous = resolve(&cfg, &format!("{addr}/app:v1")).await.unwrap_err();
    assert_eq!(anonymous.code(), "registry_unauthorized", "{anonymous:?}");
    cfg.credentials.insert(
        addr.clone(),
        crate::Credentials {
            username: "u".into(),
            password: "p".into(),
        },
    );
    resolve(&cfg, &format!("{addr}/app:v1")).await.unwrap();

    let addr = registry(Answer::SmallBearer).await;
    resolve(&insecure(&addr), &format!("{addr}/app:v1"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_token_server_that_streams_past_the_bound_is_cut_off() {
    // 64 MiB from the realm the challenge names: read whole by oci-client's own flow, it
    // would all be held in memory.
    let addr = registry(Answer::HugeToken { chunks: 64 }).await;
    let e = resolve(&insecure(&addr), &format!("{addr}/app:v1"))
        .await
        .unwrap_err();
    assert!(matches!(e, ImageError::TooLarge(_)), "{e:?}");
    assert!(e.to_string().contains("token"), "{e}");
}
