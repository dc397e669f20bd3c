//! The API itself: requests, restarts and hostile input (`requests`), errors a generic
//! client can read (`errors`), `RunExecution` (`run`), a third-party Connect client
//! (`interop_buf`), ListSandboxes' changes and owners (`listing`).

mod errors;
mod interop_buf;
mod listing;
mod requests;
mod run;
