//! Small synchronisation helpers shared by the server's modules.

use std::sync::{Mutex, MutexGuard};

/// Lock a std mutex, recovering from poisoning: the maps it guards stay consistent across
/// a panicking holder (each critical section is a single insert, remove or lookup), and a
/// server that stops serving after one panic would be worse than one with a stale entry.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
