//! The API itself: requests, restarts and hostile input (`requests`), errors a generic
//! client can read (`errors`), `RunExecution` (`run`), a third-party Connect client
//! (`interop_buf`).

mod errors;
mod interop_buf;
mod requests;
mod run;
