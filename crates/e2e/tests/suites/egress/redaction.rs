//! Secret redaction against a hostile upstream (issue 8, class 6): a secret-bound HTTPS
//! host echoes the injected value back in every place of a response — a header name, the
//! reason phrase, trailers, a body compressed (gzip, zlib, raw deflate, zstd, brotli, xz) without
//! Content-Encoding — and in the value's common encodings (base64 and base64url at every
//! alignment with and without padding, hex in both cases, percent-encoding). The sandbox
//! must never see the value or any of those encodings: each response is either redacted
//! or refused with `response_not_inspectable`.
//!
//! The sandbox's client prints every raw byte it received (hex, so nothing is lost); the
//! test decodes them, decompresses the bodies itself and searches everything. Under both
//! runtimes ([`both_runtimes!`]).

use cleanroom_e2e::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

fn hex(v: &[u8], upper: bool) -> String {
    v.iter()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

fn pct(v: &[u8], all: bool, upper: bool) -> String {
    v.iter()
        .map(|&b| {
            if !all && (b.is_ascii_alphanumeric() || b"-._~".contains(&b)) {
                (b as char).to_string()
            } else if upper {
                format!("%{b:02X}")
            } else {
                format!("%{b:02x}")
            }
        })
        .collect()
}

fn compress(kind: &str, data: &[u8]) -> Vec<u8> {
    use flate2::Compression;
    match kind {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "zlib" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "zstd" => zstd::encode_all(data, 3).unwrap(),
        "brotli" => {
            let mut out = Vec::new();
            let mut e = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            e.write_all(data).unwrap();
            drop(e);
            out
        }
        // Only the magic matters: the gateway cannot open xz and must refuse it.
        "xz" => [&[0xfd, b'7', b'z', b'X', b'Z', 0][..], data].concat(),
        _ => unreachable!("{kind}"),
    }
}

const B64: [(&str, base64::engine::GeneralPurpose); 2] = [
    ("std", base64::engine::general_purpose::STANDARD),
    ("url", base64::engine::general_purpose::URL_SAFE),
];

/// Every path the hostile upstream serves, with the response it sends for value `v`.
fn hostile_response(path: &str, v: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let vs = String::from_utf8_lossy(v).into_owned();
    let plain = |body: Vec<u8>| {
        let mut r = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend(body);
        r
    };
    let echo = format!("{{\"echo\": \"{vs}\", \"pad\": \"{}\"}}", "x".repeat(64));
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        ["name"] => format!(
            "HTTP/1.1 200 OK\r\nX-{vs}: 1\r\nX-{}: 2\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
            hex(v, false)
        )
        .into_bytes(),
        ["reason"] => format!(
            "HTTP/1.1 200 {vs}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        )
        .into_bytes(),
        ["trailer"] => format!(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Echo\r\nConnection: close\r\n\r\n2\r\nok\r\n0\r\nX-Echo: {vs}\r\nX-{vs}: 1\r\n\r\n"
        )
        .into_bytes(),
        ["compressed", kind] => plain(compress(kind, echo.as_bytes())),
        // The value far into a large body: past what the gateway reads ahead, so it is
        // found only while the body streams.
        ["compressed-late", kind] => {
            let mut seed = 0x2545_f491_u64;
            let mut big: Vec<u8> = (0..300_000)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    b'a' + ((seed >> 33) % 26) as u8
                })
                .collect();
            big.extend_from_slice(echo.as_bytes());
            plain(compress(kind, &big))
        }
        ["b64", alphabet, align, padded] => {
            let engine = &B64.iter().find(|(n, _)| n == alphabet).unwrap().1;
            let align: usize = align.parse().unwrap();
            let mut data = b"ab"[..align].to_vec();
            data.extend_from_slice(v);
            data.extend_from_slice(b"tail");
            let mut enc = engine.encode(&data);
            if *padded == "nopad" {
                enc = enc.trim_end_matches('=').to_string();
            }
            plain(format!("token={enc}\n").into_bytes())
        }
        // Close-delimited: no Content-Length, no chunking, ended by the close (with or
        // without a TLS close_notify, see `start_hostile`).
        ["close", _] => format!("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{echo}").into_bytes(),
        // The value on an obs-fold continuation line.
        ["folded"] => format!(
            "HTTP/1.1 200 OK\r\nX-Echo: a\r\n {vs}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        )
        .into_bytes(),
        ["hex", case] => plain(format!("id={}\n", hex(v, *case == "upper")).into_bytes()),
        ["pct", all, case] => {
            plain(format!("q={}\n", pct(v, *all == "all", *case == "upper")).into_bytes())
        }
        _ => plain(b"unknown".to_vec()),
    }
}

fn paths() -> Vec<String> {
    let mut p: Vec<String> = [
        "/name",
        "/reason",
        "/trailer",
        "/close/notify",
        "/close/cut",
        "/folded",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for k in ["gzip", "zlib", "deflate", "zstd", "brotli", "xz"] {
        p.push(format!("/compressed/{k}"));
    }
    for k in ["gzip", "deflate", "zstd", "brotli"] {
        p.push(format!("/compressed-late/{k}"));
    }
    for (a, _) in B64 {
        for align in 0..3 {
            for pad in ["pad", "nopad"] {
                p.push(format!("/b64/{a}/{align}/{pad}"));
            }
        }
    }
    for case in ["lower", "upper"] {
        p.push(format!("/hex/{case}"));
        for all in ["reserved", "all"] {
            p.push(format!("/pct/{all}/{case}"));
        }
    }
    p
}

/// A TLS server answering each request per [`hostile_response`], with the value it finds
/// in the request's `Authorization: Bearer` header.
fn start_hostile(config: rustls::ServerConfig) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let config = Arc::new(config);
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut stream = rustls::StreamOwned::new(conn, s);
                let mut r = BufReader::new(&mut stream);
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    if line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                let value = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("authorization")
                            .then(|| v.trim().trim_start_matches("Bearer ").to_string())
                    })
                    .unwrap_or_default();
                let resp = hostile_response(&path, value.as_bytes());
                let _ = stream.write_all(&resp);
                let _ = stream.flush();
                if path != "/close/cut" {
                    stream.conn.send_close_notify();
                    let _ = stream.flush();
                }
            });
        }
    });
    port
}

/// The sandbox's client: one TLS connection per path, every received byte printed as hex.
const CLIENT: &str = r#"
import os, socket, ssl, sys, binascii
port = int(sys.argv[1])
ctx = ssl.create_default_context()
for path in sys.argv[2:]:
    raw = b""
    try:
        s = ctx.wrap_socket(socket.create_connection(("api.test", port), timeout=15), server_hostname="api.test")
        s.sendall(("GET %s HTTP/1.1\r\nHost: api.test:%d\r\nAuthorization: Bearer %s\r\nTE: trailers\r\nConnection: close\r\n\r\n" % (path, port, os.environ["TOKEN"])).encode())
        while True:
            c = s.recv(65536)
            if not c:
                break
            raw += c
    except Exception as e:
        raw += b"\nCLIENT-ERROR " + str(e).encode()
    print(path, binascii.hexlify(raw).decode() or "-")
print("client-done")
"#;

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .filter_map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// The body of a raw response, de-chunked when chunked (trailers included as text).
fn body_of(raw: &[u8]) -> Vec<u8> {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Vec::new();
    };
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    let mut rest = &raw[end + 4..];
    if !head.contains("transfer-encoding: chunked") {
        return rest.to_vec();
    }
    let mut out = Vec::new();
    loop {
        let Some(nl) = rest.windows(2).position(|w| w == b"\r\n") else {
            out.extend_from_slice(rest);
            return out;
        };
        let size = usize::from_str_radix(
            String::from_utf8_lossy(&rest[..nl])
                .split(';')
                .next()
                .unwrap_or("")
                .trim(),
            16,
        )
        .unwrap_or(0);
        rest = &rest[nl + 2..];
        if size == 0 {
            out.extend_from_slice(rest);
            return out;
        }
        out.extend_from_slice(&rest[..size.min(rest.len())]);
        rest = &rest[(size + 2).min(rest.len())..];
    }
}

/// Whatever each decompressor makes of `body`, as far as it gets.
fn decompressions(body: &[u8]) -> Vec<Vec<u8>> {
    fn partial<R: Read>(mut r: R) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf
    }
    let mut out = vec![
        partial(flate2::read::GzDecoder::new(body)),
        partial(flate2::read::ZlibDecoder::new(body)),
        partial(flate2::read::DeflateDecoder::new(body)),
    ];
    if let Ok(d) = zstd::stream::read::Decoder::new(body) {
        out.push(partial(d));
    }
    out.push(partial(brotli::Decompressor::new(body, 4096)));
    out
}

/// The value and every encoding of it the sandbox must not see.
fn forbidden_forms(v: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let mut f = vec![v.to_vec()];
    f.push(hex(v, false).into_bytes());
    f.push(hex(v, true).into_bytes());
    for all in [false, true] {
        for upper in [false, true] {
            f.push(pct(v, all, upper).into_bytes());
        }
    }
    for (_, engine) in &B64 {
        for align in 0..3usize {
            let mut data = vec![0u8; align];
            data.extend_from_slice(v);
            let enc = engine.encode(&data);
            let start = (8 * align).div_ceil(6);
            let end = (8 * (align + v.len())) / 6;
            f.push(enc.as_bytes()[start..end].to_vec());
        }
    }
    f
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

both_runtimes!(
    a_hostile_upstream_cannot_hand_the_value_to_the_sandbox,
    hostile_upstream_cannot_hand_the_value_on
);
fn hostile_upstream_cannot_hand_the_value_on(rt: Runtime) {
    let value = format!(
        "sekrit+{:x}!{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
        std::process::id()
    );
    let (ca_pem, tls_config) = test_pki(&["api.test"]);
    let port = start_hostile(tls_config);
    let d = tempfile::tempdir().unwrap();
    let ca_file = write(&d, "upstream-ca.pem", &ca_pem);
    let secrets_file = write(&d, "secrets", &format!("TOKEN={value}\n"));
    std::fs::set_permissions(
        &secrets_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let s = Server::start_with(&[
        "--secrets-file",
        &secrets_file,
        "--upstream-ca",
        &ca_file,
        "--egress-resolve",
        "api.test=127.0.0.1",
    ]);
    let policy = write(
        &d,
        "cleanroom.yaml",
        &format!(
            "version: 1\nsandbox:\n  network:\n    allow:\n      - host: api.test\n        ports: [{port}]\n  secrets:\n    TOKEN:\n      hosts: [api.test]\n      header: Authorization\n      format: 'Bearer {{value}}'\n"
        ),
    );
    let sbx = s.create_on(rt, &["--policy", &policy]);
    let client = write(&d, "client.py", CLIENT);
    let paths = paths();
    let mut c = s.cli();
    c.args([
        "exec",
        "--in",
        &sbx,
        "--",
        "python3",
        "-",
        &port.to_string(),
    ])
    .args(&paths)
    .stdin(std::fs::File::open(&client).unwrap());
    let o = output_with_timeout(c, std::time::Duration::from_secs(120));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("client-done"), "{out}\n{err}");

    let forms = forbidden_forms(value.as_bytes());
    let mut refused = 0;
    for path in &paths {
        let line = out
            .lines()
            .find(|l| l.split(' ').next() == Some(path.as_str()))
            .unwrap_or_else(|| panic!("no result for {path}: {out}"));
        let raw = unhex(line.split(' ').nth(1).unwrap_or(""));
        let text = String::from_utf8_lossy(&raw).into_owned();
        let body = body_of(&raw);
        let mut views = vec![raw.clone(), body.clone()];
        views.extend(decompressions(&body));
        for view in &views {
            for form in &forms {
                assert!(
                    !contains(view, form),
                    "{path}: the sandbox saw {:?} in {:?}",
                    String::from_utf8_lossy(form),
                    String::from_utf8_lossy(view)
                );
            }
        }
        // Redacted (masked in place) or refused (502, or the body cut off).
        let masked = text.contains("******");
        // A body cut off while streaming is shorter than its Content-Length.
        let declared = text
            .to_ascii_lowercase()
            .split("content-length: ")
            .nth(1)
            .and_then(|r| r.split("\r\n").next()?.parse::<usize>().ok());
        let cut = path.starts_with("/compressed") && declared.is_some_and(|n| body.len() < n);
        let not_inspectable = text.contains("response_not_inspectable") || cut;
        if not_inspectable {
            refused += 1;
        }
        assert!(masked || not_inspectable, "{path}: {text:?}");
    }
    assert!(refused >= 10, "every compressed body refused: {out}");

    // Close-delimited bodies and folded headers reach the sandbox, masked: whole when the
    // upstream closed TLS properly; every byte and then a cut (no last chunk) when it
    // closed without close_notify, which may be a truncation (RFC 9112 section 9.8).
    let raw_of = |path: &str| {
        let line = out
            .lines()
            .find(|l| l.split(' ').next() == Some(path))
            .unwrap_or_default();
        unhex(line.split(' ').nth(1).unwrap_or(""))
    };
    let masked_echo = format!(
        "{{\"echo\": \"{}\", \"pad\": \"{}\"}}",
        "*".repeat(value.len()),
        "x".repeat(64)
    );
    let whole = raw_of("/close/notify");
    let text = String::from_utf8_lossy(&whole);
    assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
    // (`body_of` keeps the empty trailer section's CRLF after the last chunk.)
    assert_eq!(
        body_of(&whole),
        format!("{masked_echo}\r\n").as_bytes(),
        "{text:?}"
    );
    assert!(text.ends_with("\r\n0\r\n\r\n"), "{text:?}");
    let cut = raw_of("/close/cut");
    let text = String::from_utf8_lossy(&cut);
    assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
    assert!(
        body_of(&cut).starts_with(masked_echo.as_bytes()),
        "{text:?}"
    );
    assert!(
        !text.contains("\r\n0\r\n\r\n"),
        "passed as complete: {text:?}"
    );
    let folded = String::from_utf8_lossy(&raw_of("/folded")).to_ascii_lowercase();
    assert!(folded.starts_with("http/1.1 200"), "{folded:?}");
    assert!(
        folded.contains(&format!("\r\nx-echo: a {}\r\n", "*".repeat(value.len()))),
        "{folded:?}"
    );
    let ev = stdout(&s.run(&["sandbox", "events", &sbx]));
    assert!(!ev.contains(&value), "value in events");
    let not_inspectable = ev
        .lines()
        .filter(|l| l.contains("egress.error") && l.contains("response_not_inspectable"))
        .count();
    assert!(not_inspectable >= 10, "{ev}");
}
