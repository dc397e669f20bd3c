//! The files API (`cleanroom cp`): transfers, hostile trees a sandbox sends, and no deputy.

mod cp_hostile;
mod deputy;
mod transfers;
