//! Many hosts, one API (issue 34, docs/cluster.md): membership on a real 3-member etcd on
//! loopback — the crate directly (`membership`) and real servers started with `--cluster`
//! (`serve`); identities, placement, routing through any member and failure
//! (`routing`), exec, files, console and resume through a member that does not hold the
//! sandbox (`non_owner`) — these two on hosts each in a network namespace of its own
//! (`cleanroom_e2e::cluster_hosts`); draining a member (`drain`, on the helpers in `hosts`).

mod drain;
mod hosts;
mod identity;
mod membership;
mod metrics;
mod non_owner;
mod placed;
mod pools;
mod quota;
mod restores;
mod routing;
mod serve;
