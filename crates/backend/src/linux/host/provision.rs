//! Provisioning a sandbox: what the server makes on the host before the launch.

use super::backend::remove_dir;
use super::backend::LinuxBackend;
use super::cgroup;
use super::idslots;
use crate::linux::config::InitConfig;
use crate::linux::snapshot;
use crate::{BackendError, ProvisionedSandbox, SandboxSpec};
use std::path::PathBuf;

impl LinuxBackend {
    /// `Backend::provision`: the sandbox's directories, cgroups and id block, then the
    /// launch (zygote → shim → pid 1, [`super::launch`]); everything made is undone when a
    /// step fails.
    pub(super) async fn provision_sandbox(
        &self,
        spec: &SandboxSpec,
    ) -> Result<ProvisionedSandbox, BackendError> {
        // A gvisor capture is an archive its in-sandbox helper applies, not layers for
        // these overlays: never mounted as if it were (nothing of it would appear).
        if let Some(layers) = &spec.restore {
            if crate::gvisor::fsnap::runtime_of_layers(layers) != crate::Runtime::Linux {
                return Err(BackendError::MissingCapability {
                    runtime: "linux",
                    capability: crate::Capability::FilesystemSnapshots,
                });
            }
        }
        let dir = self.dir_for(&spec.sandbox_id)?;
        std::fs::create_dir_all(dir.join("root"))
            .and_then(|()| std::fs::create_dir_all(dir.join("empty")))
            .map_err(|e| BackendError::io(format!("create {}", dir.display()), e))?;
        // Mountpoints of a restored snapshot's layers and of its parts' private uppers.
        let restore_dirs: Vec<PathBuf> = match spec.restore {
            Some(_) => std::iter::once(dir.join("snap"))
                .chain(
                    snapshot::PARTS
                        .iter()
                        .map(|p| dir.join(format!("upper-{p}"))),
                )
                .collect(),
            None => Vec::new(),
        };
        for d in &restore_dirs {
            std::fs::create_dir_all(d)
                .map_err(|e| BackendError::io(format!("create {}", d.display()), e))?;
        }
        let cgroups = match self.cgroups.create(&spec.sandbox_id, &spec.limits) {
            Ok(c) => c,
            Err(e) => {
                cgroup::remove(&self.cgroups.dirs_for(&spec.sandbox_id));
                remove_dir(&dir);
                return Err(BackendError::LaunchFailed(format!("cgroup setup: {e}")));
            }
        };
        let id_lease = if nix::unistd::geteuid().is_root() {
            match self.allocate_ids() {
                Some(l) => Some(l),
                None => {
                    cgroup::remove(&cgroups);
                    remove_dir(&dir);
                    return Err(BackendError::Unavailable("no free host id range".into()));
                }
            }
        } else {
            None
        };
        let id_range = id_lease.as_ref().map(idslots::IdLease::range);
        if let Some(r) = id_range {
            self.prepare_for_mapped_root(&dir, r);
            for d in &restore_dirs {
                let id = Some(nix::unistd::Uid::from_raw(r.host_base));
                let _ = nix::unistd::chown(d, id, Some(nix::unistd::Gid::from_raw(r.host_base)));
            }
        }
        let cfg = InitConfig {
            sandbox_id: spec.sandbox_id.clone(),
            hostname: spec.hostname.clone(),
            root_dir: dir.join("root"),
            disk_bytes: spec.limits.disk_bytes,
            cgroups,
            user_namespace: true,
            id_range,
            tun: match spec.network {
                // The kernel plane needs a root server (a namespace of the host's, made
                // and entered by the server); an unprivileged one serves a tun.
                crate::NetworkSpec::Tun(t) if id_range.is_none() => Some(crate::TunConfig {
                    plane: crate::Plane::Tun,
                    ..t
                }),
                crate::NetworkSpec::Tun(t) => Some(t),
                crate::NetworkSpec::LoopbackOnly => None,
            },
            image_rootfs: spec.image.as_ref().map(|i| i.rootfs.clone()),
            trusted_ca_pem: spec.trusted_ca_pem.clone(),
            restore: spec.restore.clone(),
            volumes: spec.volumes.clone(),
        };
        if !cfg.volumes.is_empty() && cfg.id_range.is_none() {
            remove_dir(&dir);
            cgroup::remove(&cfg.cgroups);
            return Err(BackendError::Unavailable(
                "named volumes need a root server (idmapped mounts)".into(),
            ));
        }
        // On failure the lease drops here, after the shim is gone (start kills it).
        match self
            .start(&spec.sandbox_id, &dir, &cfg, &spec.limits, id_lease)
            .await
        {
            Ok(p) => Ok(p),
            Err(e) => {
                remove_dir(&dir);
                cgroup::remove_eventually(cgroup::remove(&cfg.cgroups));
                Err(e)
            }
        }
    }
}
