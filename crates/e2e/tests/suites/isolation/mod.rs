//! What a process inside a sandbox can see (`visibility`) and cannot do (`escape`: attack
//! programs in `attacks/`).

mod escape;
mod visibility;
