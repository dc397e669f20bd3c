//! Many hosts, one API (issue 34, docs/cluster.md): membership on a real 3-member etcd on
//! loopback — the crate directly (`membership`) and real servers started with `--cluster`
//! (`serve`); identities, placement, routing through any member and failure
//! (`routing`, on the helpers in `hosts`); draining a member (`drain`).

mod drain;
mod hosts;
mod identity;
mod membership;
mod routing;
mod serve;
