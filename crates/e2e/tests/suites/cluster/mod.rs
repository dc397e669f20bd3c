//! Many hosts, one API (issue 34, docs/cluster.md): membership on a real 3-member etcd on
//! loopback — the crate directly (`membership`) and real servers started with `--cluster`
//! (`serve`).

mod membership;
mod serve;
