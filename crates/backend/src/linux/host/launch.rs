//! Launching one sandbox: start the shim, hand it its configuration, answer its id-map
//! request (id maps and the idmapped image mount are the server's to make), and wait for
//! pid 1's `Ready` within the provisioning deadline.

use super::backend::*;
use super::idmap::{idmapped_tree, idmapped_volume, write_id_maps};
use super::reader::read_replies;
use super::{idslots, procinfo};
use crate::linux::config::{self, InitConfig};
use crate::linux::protocol::{self, Reply, Request};
use crate::{BackendError, ExitStatus, ProcessId, ProvisionedSandbox};
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

impl LinuxBackend {
    pub(super) async fn start(
        &self,
        id: &str,
        dir: &Path,
        cfg: &InitConfig,
        limits: &crate::Limits,
        mut id_lease: Option<idslots::IdLease>,
    ) -> Result<ProvisionedSandbox, BackendError> {
        use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
        // The kernel plane's gateway namespace and its table exist before the shim does:
        // if they cannot be made, nothing is started (fail closed).
        let gateway = match cfg.tun {
            Some(t) if t.plane == crate::Plane::Kernel => Some(
                tokio::task::spawn_blocking(move || super::gateway_ns::create(t))
                    .await
                    .map_err(|e| BackendError::LaunchFailed(format!("gateway task: {e}")))??,
            ),
            _ => None,
        };
        let (host_sock, child_sock) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| BackendError::io("socketpair", e.into()))?;
        // The zygote forks the shim (no exec: every sandbox shares its relocated pages)
        // and answers with the shim's pidfd. Dropping `shim` on a failed launch kills it
        // (and pid 1 with it).
        let shim = Shim(self.zygote.fork_shim(&child_sock).await?);
        drop(child_sock);
        if let Some(lease) = id_lease.as_mut() {
            // The lease's holder is the shim: its exit ends the sandbox.
            if let Some(start) = procinfo::start_time(shim.0.pid()) {
                lease.record_holder(shim.0.pid(), start);
            }
        }
        // systemd-nspawn's locks on the sandbox's ids go to the shim, which holds them
        // for the sandbox's life (nspawn_ids.rs); the server keeps no copy.
        let nspawn_locks = id_lease
            .as_mut()
            .map(idslots::IdLease::take_nspawn_locks)
            .unwrap_or_default();
        let lock_fds: Vec<i32> = nspawn_locks.iter().map(|f| f.as_raw_fd()).collect();
        protocol::send(
            host_sock.as_raw_fd(),
            &Request::Configure(Box::new(cfg.clone())),
            &lock_fds,
        )
        .map_err(|e| BackendError::io("send sandbox config", e))?;
        drop(nspawn_locks);

        // Lifecycle replies go to `life`; exits are routed by the reader thread.
        let (life_tx, mut life_rx) =
            tokio::sync::mpsc::unbounded_channel::<(Reply, Vec<OwnedFd>)>();
        let exits: Arc<Mutex<HashMap<ProcessId, oneshot::Sender<ExitStatus>>>> = Arc::default();
        // The reader shares the socket (no dup: one fd per sandbox, not two).
        let host_sock = Arc::new(host_sock);
        let reader_fd = host_sock.clone();
        let reader_exits = exits.clone();
        let opens: Waiters<Opened> = Arc::default();
        let reader_opens = opens.clone();
        let sid = id.to_string();
        let reader_cgroups = cfg.cgroups.clone();
        tokio::spawn(read_replies(
            sid,
            reader_fd,
            life_tx,
            (reader_exits, reader_opens),
            reader_cgroups,
        ));

        let wait = async {
            // The shim (Started) and pid 1 (Ready) write concurrently: accept either order.
            let (mut init_pid, mut ready) = (None, None);
            while let Some((reply, fds)) = life_rx.recv().await {
                match reply {
                    Reply::Started { init_pid: p } => {
                        // No handle on pid 1 is kept: the shim ends it on request
                        // (shimwait.rs). The pid is for display and the start-time record.
                        if shim.0.has_exited() {
                            return Err(BackendError::LaunchFailed(
                                "sandbox shim exited during setup".into(),
                            ));
                        }
                        init_pid = Some(p);
                    }
                    Reply::NeedIdMap { shim_pid } => {
                        let range = cfg.id_range.ok_or_else(|| {
                            BackendError::LaunchFailed("unexpected id map request".into())
                        })?;
                        write_id_maps(shim_pid, range)?;
                        // The shim made the sandbox's network namespace and waits for
                        // this answer: its veth end goes in now, before pid 1 exists.
                        if let (Some(gw), Some(t)) = (&gateway, cfg.tun) {
                            let ns = std::fs::File::open(format!("/proc/{shim_pid}/ns/net"))
                                .map_err(|e| BackendError::io("sandbox network namespace", e))?;
                            super::gateway_ns::attach(gw, std::os::fd::AsFd::as_fd(&ns), t)?;
                        }
                        // The image is shared and owned by host ids 0..65535; this
                        // sandbox sees it through a mount that shifts them to its range.
                        let tree = match &cfg.image_rootfs {
                            Some(rootfs) => Some(idmapped_tree(rootfs, shim_pid)?),
                            None => None,
                        };
                        // A snapshot's layers get the same id shift (after the image's).
                        let snap = match &cfg.restore {
                            Some(layers) => Some(idmapped_tree(layers, shim_pid)?),
                            None => None,
                        };
                        // Then each named volume, in the config's order.
                        let volumes = cfg
                            .volumes
                            .iter()
                            .map(|v| idmapped_volume(v, shim_pid))
                            .collect::<Result<Vec<_>, _>>()?;
                        let fds: Vec<_> = tree
                            .iter()
                            .chain(snap.iter())
                            .chain(volumes.iter())
                            .map(|t| t.as_raw_fd())
                            .collect();
                        protocol::send(host_sock.as_raw_fd(), &Request::IdsMapped, &fds)
                            .map_err(|e| BackendError::io("sandbox control socket", e))?;
                    }
                    Reply::Ready { info } => ready = Some((info, fds)),
                    Reply::SetupFailed { error, kind } => {
                        return Err(match kind {
                            protocol::SetupFailure::ImageUnsupported => {
                                BackendError::ImageUnsupported(error)
                            }
                            protocol::SetupFailure::Internal => BackendError::LaunchFailed(error),
                        })
                    }
                    _ => {}
                }
                if init_pid.is_some() && ready.is_some() {
                    if let (Some(pid), Some(r)) = (init_pid.take(), ready.take()) {
                        return Ok((pid, r));
                    }
                }
            }
            Err(BackendError::LaunchFailed(
                "sandbox init exited during setup".into(),
            ))
        };
        let (init, (hardening, mut ready_fds)) =
            match tokio::time::timeout(PROVISION_TIMEOUT, wait).await {
                Ok(Ok(ready)) => ready,
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    return Err(BackendError::LaunchFailed(
                        "sandbox did not become ready in time".into(),
                    ))
                }
            };
        let init_pid = init;
        let init_start = procinfo::start_time(init_pid)
            .ok_or_else(|| BackendError::LaunchFailed("sandbox init vanished".into()))?;

        let mut info = BTreeMap::new();
        info.insert(
            "namespaces".into(),
            if cfg.user_namespace {
                "user,mnt,pid,net,uts,ipc,cgroup"
            } else {
                "mnt,pid,net,uts,ipc,cgroup"
            }
            .into(),
        );
        match &cfg.image_rootfs {
            Some(_) => info.insert(
                "root".into(),
                "image (read-only shared layer + private copy-on-write overlay)".into(),
            ),
            None => info.insert("root".into(), "host-view (read-only system dirs)".into()),
        };
        // After the tun device, pid 1 sent the image root's upper directory.
        let upper = match cfg.image_rootfs {
            Some(_) => Some(ready_fds.pop().ok_or_else(|| {
                BackendError::LaunchFailed("sandbox init sent no image upper directory".into())
            })?),
            None => None,
        };
        let network_device = match (cfg.tun, gateway) {
            (Some(t), Some(gw)) => {
                info.insert(
                    "network".into(),
                    format!(
                        "veth {} -> egress gateway {} in its own namespace (kernel sockets, no other route)",
                        t.guest, t.gateway
                    ),
                );
                Some(crate::NetworkDevice::Kernel(Arc::new(gw.sockets)))
            }
            (Some(t), None) => {
                let fd = ready_fds.pop().ok_or_else(|| {
                    BackendError::LaunchFailed("sandbox init sent no network device".into())
                })?;
                info.insert(
                    "network".into(),
                    format!(
                        "tun {} -> egress gateway {} (no other route)",
                        t.guest, t.gateway
                    ),
                );
                Some(crate::NetworkDevice::Tun(Arc::new(fd)))
            }
            (None, _) => {
                info.insert("network".into(), "loopback only".into());
                None
            }
        };
        info.insert("workspace".into(), config::WORKSPACE_PATH.into());
        if !cfg.volumes.is_empty() {
            let list: Vec<String> = cfg
                .volumes
                .iter()
                .map(|v| format!("{}{}", v.guest_path, if v.read_only { ":ro" } else { "" }))
                .collect();
            info.insert("volumes".into(), list.join(","));
        }
        if cfg.restore.is_some() {
            info.insert(
                "restored".into(),
                "snapshot layers shared read-only below a private upper".into(),
            );
        }
        info.insert("writable".into(), config::WRITABLE.join(","));
        info.insert("cgroup".into(), self.cgroups.describe());
        info.insert(
            "limits".into(),
            format!(
                "memory={}MiB pids={} cpu={}m disk={}MiB",
                limits.memory_bytes >> 20,
                limits.pids,
                limits.cpu_millis,
                limits.disk_bytes >> 20
            ),
        );
        info.extend(hardening);
        let sbx = Arc::new(LinuxSandbox {
            control: host_sock,
            send_lock: Mutex::new(()),
            init_pid,
            init_start,
            state_dir: dir.to_path_buf(),
            next_id: AtomicU64::new(1),
            exits,
            opens,
            shim: tokio::sync::Mutex::new(Some(shim)),
            cgroups: cfg.cgroups.clone(),
            id_base: cfg.id_range.map(|r| (r.host_base, r.host_base)),
            id_lease: Mutex::new(id_lease),
            upper,
            restored_from: cfg.restore.clone(),
        });
        self.sandboxes
            .lock()
            .map_err(|_| BackendError::Unavailable("lock poisoned".into()))?
            .insert(id.to_string(), sbx);
        Ok(ProvisionedSandbox {
            sandbox_id: id.to_string(),
            state_dir: dir.to_path_buf(),
            init_pid,
            init_start_time: init_start,
            info,
            network_device,
        })
    }
}
