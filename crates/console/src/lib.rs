//! The console wire format: what flows over the QUIC connection a client opens after
//! `AttachExecution` (seed 000: PTY bytes and control frames do not go through ConnectRPC).
//!
//! One crate shared by the server and the client so both sides encode and decode with the
//! same code. The format is documented in `docs/console.md`:
//!
//! ```text
//! frame   = type:u8 | length:u32 (big endian) | payload[length]     length <= MAX_PAYLOAD
//! ```
//!
//! The client opens one bidirectional stream per attach and sends [`Frame::Hello`] first;
//! everything else is refused until the server answered [`Frame::Ready`].

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// ALPN of the console protocol (returned by `AttachExecution`).
pub const ALPN: &str = "cleanroom-console/1";
/// Largest payload of one frame; a bigger declared length is a protocol error (the peer
/// cannot make us allocate more).
pub const MAX_PAYLOAD: usize = 64 * 1024;
/// Version byte of [`Frame::Hello`].
pub const VERSION: u8 = 1;

const T_HELLO: u8 = 0x01;
const T_INPUT: u8 = 0x02;
const T_RESIZE: u8 = 0x03;
const T_SIGNAL: u8 = 0x04;
const T_READY: u8 = 0x80;
const T_OUTPUT: u8 = 0x81;
const T_EXIT: u8 = 0x82;
const T_ERROR: u8 = 0x83;

/// Whether an attach may type into the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Input, resize and signals are accepted.
    Driver,
    /// Output only: input, resize and signal frames are refused.
    Viewer,
}

/// The first frame of a stream: who is attaching, with what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub session_id: String,
    pub token: String,
    pub execution_id: String,
    pub mode: Mode,
    pub cols: u16,
    pub rows: u16,
}

/// One frame (client → server: `Hello`, `Input`, `Resize`, `Signal`; server → client:
/// `Ready`, `Output`, `Exit`, `Error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Hello(Hello),
    /// Bytes typed into the terminal (Ctrl-C is byte 0x03: the guest's line discipline
    /// turns it into SIGINT for its foreground job).
    Input(Vec<u8>),
    /// New window size.
    Resize {
        cols: u16,
        rows: u16,
    },
    /// Send this signal to the execution's process group.
    Signal(u8),
    /// The hello was accepted.
    Ready,
    /// Terminal output.
    Output(Vec<u8>),
    /// The execution ended: its `ExecutionStatus` number, exit code and message.
    Exit {
        status: i32,
        exit_code: i32,
        message: String,
    },
    /// The attach was refused or ended by the server: stable code and message.
    Error {
        code: String,
        message: String,
    },
}

/// Why bytes are not a frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("frame too large ({0} bytes)")]
    TooLarge(usize),
    #[error("unknown frame type {0:#04x}")]
    UnknownType(u8),
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

fn put_str(out: &mut Vec<u8>, s: &str) -> Result<(), FrameError> {
    let len = u8::try_from(s.len()).map_err(|_| FrameError::Malformed("string too long"))?;
    out.push(len);
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

/// A cursor over a payload that never reads past its end.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.0.len() < n {
            return Err(FrameError::Malformed("truncated payload"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, FrameError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn str(&mut self) -> Result<String, FrameError> {
        let n = self.u8()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| FrameError::Malformed("not utf-8"))
    }
    fn rest_str(&mut self) -> Result<String, FrameError> {
        let b = self.take(self.0.len())?;
        String::from_utf8(b.to_vec()).map_err(|_| FrameError::Malformed("not utf-8"))
    }
    fn end(&self) -> Result<(), FrameError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(FrameError::Malformed("trailing bytes"))
        }
    }
}

impl Frame {
    /// Encode to `type | length | payload`.
    pub fn encode(&self) -> Result<Vec<u8>, FrameError> {
        let mut p = Vec::new();
        let t = match self {
            Frame::Hello(h) => {
                p.push(VERSION);
                p.push(match h.mode {
                    Mode::Driver => 0,
                    Mode::Viewer => 1,
                });
                p.extend_from_slice(&h.cols.to_be_bytes());
                p.extend_from_slice(&h.rows.to_be_bytes());
                put_str(&mut p, &h.session_id)?;
                put_str(&mut p, &h.token)?;
                put_str(&mut p, &h.execution_id)?;
                T_HELLO
            }
            Frame::Input(d) => {
                p.extend_from_slice(d);
                T_INPUT
            }
            Frame::Resize { cols, rows } => {
                p.extend_from_slice(&cols.to_be_bytes());
                p.extend_from_slice(&rows.to_be_bytes());
                T_RESIZE
            }
            Frame::Signal(s) => {
                p.push(*s);
                T_SIGNAL
            }
            Frame::Ready => T_READY,
            Frame::Output(d) => {
                p.extend_from_slice(d);
                T_OUTPUT
            }
            Frame::Exit {
                status,
                exit_code,
                message,
            } => {
                p.extend_from_slice(&status.to_be_bytes());
                p.extend_from_slice(&exit_code.to_be_bytes());
                p.extend_from_slice(message.as_bytes());
                T_EXIT
            }
            Frame::Error { code, message } => {
                put_str(&mut p, code)?;
                p.extend_from_slice(message.as_bytes());
                T_ERROR
            }
        };
        if p.len() > MAX_PAYLOAD {
            return Err(FrameError::TooLarge(p.len()));
        }
        let mut out = Vec::with_capacity(5 + p.len());
        out.push(t);
        out.extend_from_slice(&(p.len() as u32).to_be_bytes());
        out.extend_from_slice(&p);
        Ok(out)
    }

    /// Decode one payload of type `t`.
    pub fn decode(t: u8, payload: &[u8]) -> Result<Frame, FrameError> {
        let mut c = Cursor(payload);
        let f = match t {
            T_HELLO => {
                if c.u8()? != VERSION {
                    return Err(FrameError::Malformed("unsupported version"));
                }
                let mode = match c.u8()? {
                    0 => Mode::Driver,
                    1 => Mode::Viewer,
                    _ => return Err(FrameError::Malformed("unknown mode")),
                };
                let cols = c.u16()?;
                let rows = c.u16()?;
                let session_id = c.str()?;
                let token = c.str()?;
                let execution_id = c.str()?;
                Frame::Hello(Hello {
                    session_id,
                    token,
                    execution_id,
                    mode,
                    cols,
                    rows,
                })
            }
            T_INPUT => return Ok(Frame::Input(payload.to_vec())),
            T_OUTPUT => return Ok(Frame::Output(payload.to_vec())),
            T_RESIZE => Frame::Resize {
                cols: c.u16()?,
                rows: c.u16()?,
            },
            T_SIGNAL => Frame::Signal(c.u8()?),
            T_READY => Frame::Ready,
            T_EXIT => Frame::Exit {
                status: c.i32()?,
                exit_code: c.i32()?,
                message: c.rest_str()?,
            },
            T_ERROR => Frame::Error {
                code: c.str()?,
                message: c.rest_str()?,
            },
            other => return Err(FrameError::UnknownType(other)),
        };
        c.end()?;
        Ok(f)
    }
}

/// Read one frame; `Ok(None)` on a clean end of stream before a frame started.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R) -> Result<Option<Frame>, FrameError> {
    let mut head = [0u8; 5];
    let mut got = 0;
    while got < head.len() {
        let n = r.read(&mut head[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(FrameError::Malformed("truncated header"))
            };
        }
        got += n;
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_PAYLOAD {
        return Err(FrameError::TooLarge(len));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload).await?;
    Frame::decode(head[0], &payload).map(Some)
}

/// Write one frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, f: &Frame) -> Result<(), FrameError> {
    w.write_all(&f.encode()?).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(f: Frame) {
        let b = f.encode().unwrap();
        assert_eq!(
            b.len(),
            5 + u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize
        );
        assert_eq!(Frame::decode(b[0], &b[5..]).unwrap(), f);
    }

    #[test]
    fn frames_round_trip() {
        round(Frame::Hello(Hello {
            session_id: "ses_1".into(),
            token: "t".repeat(64),
            execution_id: "exe_1".into(),
            mode: Mode::Viewer,
            cols: 120,
            rows: 40,
        }));
        round(Frame::Input(b"echo hi\r".to_vec()));
        round(Frame::Resize { cols: 1, rows: 2 });
        round(Frame::Signal(2));
        round(Frame::Ready);
        round(Frame::Output(vec![0, 1, 255]));
        round(Frame::Exit {
            status: 4,
            exit_code: -7,
            message: "exited".into(),
        });
        round(Frame::Error {
            code: "unauthenticated".into(),
            message: "no".into(),
        });
    }

    #[test]
    fn hostile_frames_are_refused() {
        assert!(matches!(
            Frame::decode(0x7f, &[]),
            Err(FrameError::UnknownType(0x7f))
        ));
        assert!(Frame::decode(T_RESIZE, &[0, 1, 0]).is_err());
        assert!(Frame::decode(T_RESIZE, &[0, 1, 0, 1, 9]).is_err());
        assert!(Frame::decode(T_HELLO, &[2, 0, 0, 1, 0, 1, 0, 0, 0]).is_err());
        assert!(Frame::decode(T_HELLO, &[1, 0, 0, 1, 0, 1, 200]).is_err());
        assert!(Frame::Input(vec![0; MAX_PAYLOAD + 1]).encode().is_err());
    }

    #[tokio::test]
    async fn oversized_length_is_refused_before_reading() {
        let mut b: &[u8] = &[T_INPUT, 0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut b).await,
            Err(FrameError::TooLarge(_))
        ));
        let mut empty: &[u8] = &[];
        assert!(read_frame(&mut empty).await.unwrap().is_none());
    }
}
