//! The local terminal: raw mode with a guard that restores the saved settings on every
//! exit path (normal end, error, detach, signal, panic unwinding), and the window size.

use nix::sys::termios::{self, SetArg, Termios};
use std::os::fd::BorrowedFd;

/// Raw mode on stdin while alive; the saved settings come back on drop.
pub struct RawMode {
    saved: Option<Termios>,
}

fn stdin_fd() -> BorrowedFd<'static> {
    // SAFETY: fd 0 stays open for the life of the process.
    unsafe { BorrowedFd::borrow_raw(0) }
}

impl RawMode {
    /// Enter raw mode when stdin is a terminal (otherwise do nothing: input is a pipe).
    pub fn enter() -> std::io::Result<RawMode> {
        if !nix::unistd::isatty(stdin_fd()).unwrap_or(false) {
            return Ok(RawMode { saved: None });
        }
        let saved = termios::tcgetattr(stdin_fd())?;
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        termios::tcsetattr(stdin_fd(), SetArg::TCSADRAIN, &raw)?;
        Ok(RawMode { saved: Some(saved) })
    }

    /// Is stdin a terminal in raw mode?
    pub fn active(&self) -> bool {
        self.saved.is_some()
    }

    /// Put the terminal back now (idempotent).
    pub fn restore(&mut self) {
        if let Some(saved) = self.saved.take() {
            let _ = termios::tcsetattr(stdin_fd(), SetArg::TCSADRAIN, &saved);
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The window size of the terminal on stdout (else stdin); `None` without one.
pub fn size() -> Option<(u16, u16)> {
    for fd in [1, 0] {
        let mut ws = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ writes one `winsize` into the valid pointer.
        let r = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
        if r == 0 && ws.ws_col > 0 && ws.ws_row > 0 {
            return Some((ws.ws_col, ws.ws_row));
        }
    }
    None
}
