//! What a server does to its host: the zygote, host-wide id ranges and leftovers, memory
//! per idle sandbox, scale.

mod hostwide;
mod memory;
mod scale;
mod zygote;
