//! Upstreams for egress tests: plain HTTP/1.1 servers on loopback that sandboxes reach only
//! through `serve --egress-resolve` overrides (never the internet).

use std::time::Duration;

/// A plain HTTP/1.1 server on loopback (one thread per connection, `Connection: close`)
/// whose response body to each request is `respond(path)`; returns its port. Sandboxes
/// reach it through `--egress-resolve`.
pub fn http_upstream(respond: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let respond = std::sync::Arc::new(respond);
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let respond = respond.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                        break;
                    }
                }
                let body = respond(line.split(' ').nth(1).unwrap_or(""));
                let mut s = s;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(&body);
            });
        }
    });
    port
}

/// [`http_upstream`] answering `hello:<path>`, for egress tests that only need an upstream
/// to reach.
pub fn hello_upstream() -> u16 {
    http_upstream(|path| format!("hello:{path}").into_bytes())
}

/// [`http_upstream`] answering `len` bytes of `x` to every request.
pub fn body_upstream(len: usize) -> u16 {
    http_upstream(move |_| vec![b'x'; len])
}
