//! A chunked response body, followed strictly so the gateway knows where it ends (and so
//! where the next response on a kept upstream connection starts): every size line must be
//! hex with CRLF, every chunk exactly its size and then CRLF, the trailers a bounded
//! section ending in an empty line. The bytes that pass are forwarded as they came.

use crate::framing::{chunk_size, MAX_HEAD};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A size line (bytes so far in `line`).
    Size,
    /// `n` more bytes of chunk data.
    Data(u64),
    /// The CRLF after a chunk's data (`n` bytes of it left).
    DataEnd(u8),
    /// Trailer lines, up to the empty line.
    Trailers,
    Done,
}

/// Where a chunked body is.
pub(super) struct Chunked {
    state: State,
    /// The size line or trailer section being read.
    line: Vec<u8>,
}

impl Chunked {
    pub(super) fn new() -> Self {
        Chunked {
            state: State::Size,
            line: Vec::new(),
        }
    }

    pub(super) fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Follow `input`: how many of its bytes belong to the body (all of them, unless the
    /// body ended inside it). An error refuses the body.
    pub(super) fn feed(&mut self, input: &[u8]) -> Result<usize, String> {
        let mut i = 0;
        while i < input.len() {
            match self.state {
                State::Done => break,
                State::Data(n) => {
                    let k = usize::try_from(n)
                        .unwrap_or(usize::MAX)
                        .min(input.len() - i);
                    i += k;
                    let left = n - k as u64;
                    self.state = if left == 0 {
                        State::DataEnd(2)
                    } else {
                        State::Data(left)
                    };
                }
                State::DataEnd(n) => {
                    let want = if n == 2 { b'\r' } else { b'\n' };
                    if input[i] != want {
                        return Err("a chunk not followed by CRLF".into());
                    }
                    i += 1;
                    self.state = if n == 2 {
                        State::DataEnd(1)
                    } else {
                        State::Size
                    };
                }
                State::Size | State::Trailers => {
                    let b = input[i];
                    i += 1;
                    self.line.push(b);
                    if self.line.len() > MAX_HEAD {
                        return Err("a chunk-size line or trailer section over 64 KiB".into());
                    }
                    if b != b'\n' {
                        continue;
                    }
                    if self.state == State::Size {
                        let size = chunk_size(&self.line)?;
                        self.line.clear();
                        self.state = if size == 0 {
                            State::Trailers
                        } else {
                            State::Data(size)
                        };
                    } else if self.line == b"\r\n" || self.line.ends_with(b"\r\n\r\n") {
                        self.line.clear();
                        self.state = State::Done;
                    } else if self.line.len() < 2 || self.line[self.line.len() - 2] != b'\r' {
                        return Err("a bare LF in a response trailer".into());
                    }
                }
            }
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(s: &[u8]) -> Result<usize, String> {
        // Byte by byte and all at once must agree.
        let mut one = Chunked::new();
        let mut n = 0;
        for b in s {
            if one.done() {
                break;
            }
            n += one.feed(std::slice::from_ref(b))?;
        }
        let mut all = Chunked::new();
        let m = all.feed(s)?;
        assert_eq!((n, one.done()), (m, all.done()));
        Ok(m)
    }

    #[test]
    fn bodies_end_where_their_framing_says() {
        let body = b"5;x=1\r\nhello\r\n0\r\nT: 1\r\n\r\n";
        let mut s = body.to_vec();
        s.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        assert_eq!(whole(&s), Ok(body.len()));
        assert_eq!(whole(b"0\r\n\r\n"), Ok(5));
        for bad in [
            &b"5\r\nhelloX\r\n0\r\n\r\n"[..],
            b"zz\r\n",
            b"5\nhello\r\n",
            b"0\r\nT: 1\n\r\n",
        ] {
            assert!(whole(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
