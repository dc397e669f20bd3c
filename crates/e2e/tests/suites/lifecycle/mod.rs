//! A sandbox's life: TTL and idle clocks, labels, usage accounting, store faults at the
//! edges of a create.

mod labels;
mod lifetimes;
mod store_faults;
mod suspend;
mod suspend_memory;
mod usage;
